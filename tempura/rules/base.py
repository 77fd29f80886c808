"""The shapes of rules that are not memo rules: a normalization rewrite of one operator, and a
physical implementation (or enforcer) the memo search may choose.

Every rule is a named unit with a pattern (what it matches) and a docstring stating its algebra;
:mod:`tempura.rules.registry` lists them all, with the memo's exploration rules
(:class:`tempura.memo.Rule`) and the TVR rules (:class:`tempura.rules.tvr.TvrRule`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from tempura.algebra import LogicalPlan


@dataclass(frozen=True)
class Rewrite:
    """A normalization: ``apply`` takes an operator matching ``pattern`` (its root class) and
    returns its replacement, or ``None`` when it does not apply. ``shape`` is the pattern as
    printed (``Filter(Join)``)."""

    name: str
    pattern: tuple[type[LogicalPlan], ...]
    shape: str
    apply: Callable[[LogicalPlan], "LogicalPlan | None"]

    @property
    def doc(self) -> str:
        return (self.apply.__doc__ or "").strip()

    def __call__(self, plan: LogicalPlan) -> LogicalPlan | None:
        return self.apply(plan) if isinstance(plan, self.pattern) else None


@dataclass(frozen=True)
class Implementation:
    """A physical implementation of a logical operator, or an enforcer of a physical property.
    ``pattern`` names what it implements (``Join``, ``Limit(Sort)``, ``any group``)."""

    name: str
    pattern: str
    doc: str
    enforcer: bool = False


__all__ = ["Implementation", "Rewrite"]
