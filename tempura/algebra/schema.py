"""Output schemas of logical plans: fields with a plan-unique name, a type and nullability.

Column identity in tempura is a *name that is unique within one plan* (CockroachDB's column IDs
play the same role). Expressions refer to columns by that name alone, so rewrites such as join
reordering never renumber anything. The names a user sees at the top of a query are kept apart,
in :class:`tempura.algebra.Query`.

Types are Spark SQL type strings (``bigint``, ``decimal(15,2)``, ``date``); ``unknown`` when
they could not be derived.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, TypeVar

T = TypeVar("T")

UNKNOWN_TYPE = "unknown"


def hash_once(cls: type[T]) -> type[T]:
    """Cache a frozen dataclass's generated hash in the instance: plan operators hash their
    columns and expressions on every memo lookup, and these values never change."""
    generated = cls.__hash__

    def __hash__(self: Any) -> int:
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = self.__dict__["_hash"] = generated(self)
        return cached

    cls.__hash__ = __hash__  # type: ignore[method-assign]
    return cls


@hash_once
@dataclass(frozen=True)
class Field:
    """One output column of a plan."""

    name: str
    type: str = UNKNOWN_TYPE
    nullable: bool = True

    def as_nullable(self) -> Field:
        """This field as it looks on the null-padded side of an outer join."""
        return self if self.nullable else Field(self.name, self.type, True)

    def renamed(self, name: str) -> Field:
        return Field(name, self.type, self.nullable)

    def __str__(self) -> str:
        return f"{self.name}:{self.type}{'' if self.nullable else ' not null'}"


@dataclass(frozen=True)
class Schema:
    """An ordered tuple of fields whose names are unique."""

    fields: tuple[Field, ...]

    def __post_init__(self) -> None:
        names = [f.name for f in self.fields]
        if len(set(names)) != len(names):
            dupes = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"duplicate column names in schema: {', '.join(dupes)}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return any(f.name == name for f in self.fields)

    def __iter__(self) -> Iterator[Field]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def __add__(self, other: Schema) -> Schema:
        return Schema(self.fields + other.fields)

    def nullable(self) -> Schema:
        return Schema(tuple(f.as_nullable() for f in self.fields))

    def __str__(self) -> str:
        return "[" + ", ".join(str(f) for f in self.fields) + "]"
