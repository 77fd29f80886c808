"""Reading only the intervals a join can match: ``tvr-narrow-keyed-read``.

Rows that land with a key, or within a declared lag after it (``arrival: {with: {sales: o_id},
within: 12h}``), hold keys that landed in known intervals (:mod:`tempura.tvr.bounds`). So when a
join equates a column of one input with a key column of a read on the other side, the read's
rows that landed in intervals whose keys cannot be among the other side's match nothing, and the
read can skip them:

``SS[3](sales) ⋉_{o_id} SD[3,4](returns)  ⇒  SS(1,3](sales) ⋉ SD[3,4](returns)``

when the returns of interval 4 may only reference sales of intervals 2 to 4 (a 12-hour lag on
6-hour intervals). The rewrite is exact for the sides whose unmatched rows the join drops: both
inputs of an inner or semi-join, the padded side of an outer join, the right side of an
anti-join. A snapshot narrowed this way is ``SS(s,e]``, the bag of rows that arrived in
``(t_s, t_e]`` (sources that only insert); a delta stays a delta over fewer intervals.

The rule runs once the forms are expanded, over every join of the expanded groups, so that the
spans it asks for are those of whole groups (:meth:`~tempura.rules.tvr.expansion.Expansion.finish`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from tempura.algebra import Filter, Join, JoinKind, LogicalPlan, Project, column_name
from tempura.memo import GroupRef
from tempura.rules.tvr.base import TvrRule
from tempura.tvr.bounds import Interval, equated
from tempura.tvr.forms import FormKind
from tempura.tvr.operators import SourceRead

if TYPE_CHECKING:
    from tempura.rules.tvr.expansion import Expansion

# the inputs (0: left, 1: right) whose rows that match nothing a join of each kind drops
_NARROWABLE = {JoinKind.INNER: (0, 1), JoinKind.SEMI: (0, 1), JoinKind.ANTI: (1,), JoinKind.LEFT: (1,),
               JoinKind.RIGHT: (0,)}
_DEPTH = 4  # filters and projections looked through above a read

Wanted = dict[str, list[tuple[str, Interval]]]
"""Per column of one join input: the key domains and spans the other input's equated column holds."""


class NarrowKeyedRead(TvrRule):
    """Narrows a read below a join to the intervals whose rows may match (see the module)."""

    name = "tvr-narrow-keyed-read"
    family = "join"
    pattern = (Join,)
    produces = FormKind.DELTA
    phase = "expanded"

    def rewrite(self, x: Expansion, group: int, expr: LogicalPlan) -> list[LogicalPlan]:
        expr = cast(Join, expr)  # the expansion offers only expressions of the pattern
        if expr.condition is None or x.prover is None or not x.prover.bounds.keys:
            return []
        pairs = equated(expr.condition)
        out: list[LogicalPlan] = []
        for side in _NARROWABLE.get(expr.kind, ()):
            this, other = expr.inputs[side], expr.inputs[1 - side]
            if not isinstance(this, GroupRef) or not isinstance(other, GroupRef):
                continue
            mine, theirs = set(this.schema.names), set(other.schema.names)
            spans = x.prover.keys(other.group)
            wanted: Wanted = {}
            for a, b in pairs:
                column, partner = (a, b) if a in mine and b in theirs else (b, a)
                if column not in mine or partner not in theirs:
                    continue
                for (held, domain), span in spans.items():
                    if held == partner:
                        wanted.setdefault(column, []).append((domain, span))
            if not wanted:
                continue
            narrowed = _narrow(x, this.group, wanted, _DEPTH)
            if narrowed is not None:
                inputs = list(expr.inputs)
                inputs[side] = narrowed
                out.append(expr.with_inputs(*inputs))
        return out


def _narrow(x: Expansion, group: int, wanted: Wanted, depth: int) -> LogicalPlan | None:
    """The group's rows that may hold the ``wanted`` keys, read from fewer intervals: a plan over
    a narrower read, or ``None`` when no expression of the group reads fewer."""
    assert x.prover is not None
    for expr in list(x.memo.group(group).exprs):
        found: LogicalPlan | None
        if isinstance(expr, SourceRead):
            found = _narrow_read(x, expr, wanted)
        elif depth > 0 and isinstance(expr, Filter) and isinstance(expr.input, GroupRef):
            below = _narrow(x, expr.input.group, wanted, depth - 1)
            found = None if below is None else expr.with_inputs(below)
        elif depth > 0 and isinstance(expr, Project) and isinstance(expr.input, GroupRef):
            renamed: Wanted = {}
            for p in expr.projections:
                source = column_name(p.expression)
                if source is not None and p.field.name in wanted:
                    renamed.setdefault(source, []).extend(wanted[p.field.name])
            below = _narrow(x, expr.input.group, renamed, depth - 1) if renamed else None
            found = None if below is None else expr.with_inputs(below)
        else:
            found = None
        if found is not None:
            return found
    return None


def _narrow_read(x: Expansion, read: SourceRead, wanted: Wanted) -> SourceRead | None:
    assert x.prover is not None
    bounds = x.prover.bounds
    table = read.scan.table.lower()
    domains = bounds.keys.get(table, {})
    if not read.delta and not x.source_insert_only(read.scan):
        return None  # a snapshot of change data is not the bag of the rows that arrived
    start, end = read.start, read.end
    for column in read.scan.columns:
        domain = domains.get(column.source.lower())
        for want, span in wanted.get(column.field.name, ()):
            if domain != want or (span.low is None and span.high is None):
                continue
            found = bounds.landing(table, column.source, start, end, span)
            if found is None:
                return None  # no row may match: left to the prover (an inner or semi-join is empty)
            start, end = found
    if (start, end) == (read.start, read.end):
        return None
    return SourceRead(read.scan, start, end, read.delta)


__all__ = ["NarrowKeyedRead"]
