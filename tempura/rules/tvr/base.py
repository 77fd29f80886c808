"""The shape of a TVR rule: a named rewrite that computes one form of a TVR."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from tempura.algebra import LogicalPlan
from tempura.tvr.forms import Form, FormKind

if TYPE_CHECKING:
    from tempura.rules.tvr.expansion import Expansion


class TvrRule:
    """A rewrite computing ``produces``-forms of a template group.

    ``phase`` is ``generating`` (from the inputs' forms) or ``intra`` (from other forms of the same
    TVR); a ``template`` rule instead rewrites the template's expressions into equivalent ones
    before any form is made (:meth:`rewrite`), which the other rules then see, and an
    ``expanded`` rule rewrites the expressions of the expanded groups once every form is made
    (:meth:`~tempura.rules.tvr.expansion.Expansion.finish`). ``per_expression`` rules are tried on each logical expression of the group, the others
    once per group (``expr`` is then ``None``). ``method`` is the incremental method the rewrite
    belongs to, which labels the fragments it ends up in.

    ``pattern`` is the operator classes a ``per_expression`` rule rewrites: the expansion offers
    it only the template expressions of those classes (an empty pattern: every expression, or
    the whole group). ``family`` is the operator family it belongs to (how the registry groups
    the TVR rules).
    """

    name: ClassVar[str]
    family: ClassVar[str]
    pattern: ClassVar[tuple[type[LogicalPlan], ...]] = ()
    produces: ClassVar[FormKind]
    phase: ClassVar[str] = "generating"
    per_expression: ClassVar[bool] = True
    method: ClassVar[str] = "ivm"
    # fires at particular versions only (the last one): a copied version runs it on top
    version_specific: ClassVar[bool] = False

    def matches(self, expr: LogicalPlan) -> bool:
        """Whether ``expr`` is of the rule's pattern."""
        return not self.pattern or isinstance(expr, self.pattern)

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        raise NotImplementedError

    def rewrite(self, x: Expansion, group: int, expr: LogicalPlan) -> list[LogicalPlan]:
        """Plans equivalent to ``expr`` (a template expression of ``group``, or of an expanded
        group): ``template`` and ``expanded`` rules."""
        return []
