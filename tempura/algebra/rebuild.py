"""Rebuilding a plan with some of its fields or expressions changed, wherever they occur.

Operators keep their columns and expressions in many places: scan columns, projections,
aggregate and window calls, join conditions, set operations' fields; and what is built on plans
(a fragment's probes, its join hints keyed by join node) holds plans in turn. :class:`Rebuild`
walks any of these (frozen dataclasses, tuples, dicts) and builds anew only what changed, each
shared object once, so that a node met twice (a hint's key and the plan's own join) stays one
node.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from sqlglot import exp

from tempura.algebra.schema import Field


class Rebuild:
    """``field`` and ``expression`` say what a field and an expression become (themselves when
    unchanged); :meth:`value` rebuilds anything holding them."""

    def __init__(self, field: Callable[[Field], Field] | None = None,
                 expression: Callable[[exp.Expr], exp.Expr] | None = None) -> None:
        self.field = field
        self.expression = expression
        self.done: dict[int, Any] = {}
        self.kept: list[Any] = []  # what ``done`` is keyed by, alive while it is

    def value(self, value: Any) -> Any:
        known = self.done.get(id(value))
        if known is not None:
            return known
        result = self._rebuilt(value)
        self.done[id(value)] = result
        self.kept.append(value)
        return result

    def _rebuilt(self, value: Any) -> Any:
        if isinstance(value, Field):
            return value if self.field is None else self.field(value)
        if isinstance(value, exp.Expr):
            return value if self.expression is None else self.expression(value)
        if isinstance(value, tuple):
            items = tuple(self.value(v) for v in value)
            return value if all(a is b for a, b in zip(items, value)) else items
        if isinstance(value, list):
            listed = [self.value(v) for v in value]
            return value if all(a is b for a, b in zip(listed, value)) else listed
        if isinstance(value, dict):
            pairs = [(self.value(k), self.value(v)) for k, v in value.items()]
            same = all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, value.items()))
            return value if same else dict(pairs)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            changes = {}
            for f in dataclasses.fields(value):
                if not f.init:
                    continue
                old = getattr(value, f.name)
                new = self.value(old)
                if new is not old:
                    changes[f.name] = new
            return dataclasses.replace(value, **changes) if changes else value
        return value  # names, numbers, enums
