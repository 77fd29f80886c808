"""The prover: facts and emptiness of memo groups, carried up from the arrival bounds of the
source reads (:mod:`tempura.tvr.bounds`) through the operators and the predicates above them.

A filter ``o_orderdate < '1995-03-15'`` over the orders that arrived in ``(1997-05-03,
1999-02-12]`` selects nothing, so the join of that delta with a whole snapshot of line items is
empty too; a join equating two columns of one key domain whose key spans do not overlap is empty
(the term ``ΔL ⋈ O_{v-1}`` of a join's delta, when line items land with their orders). The search
implements a proven-empty group as an empty relation at no cost, which is exact whatever the
statistics say.
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping, TypeVar


from tempura.algebra import (
    Aggregate,
    Distinct,
    Except,
    Filter,
    Intersect,
    Join,
    JoinKind,
    Limit,
    LogicalPlan,
    Project,
    Repeat,
    Scan,
    Sort,
    Union,
    Values,
    Window,
    column_name,
)
from tempura.memo import GroupRef, Memo
from tempura.stats.model import kind_of
from tempura.tvr.bounds import ArrivalBounds, Facts, Interval, K, Keys, equate_keys, equated, hull, meet, predicate_facts, rejects_null
from tempura.tvr.operators import Consolidate, Finalize, SourceRead, StateAggregate, StateMerge, StateRows, ToDelta, ZApply

T = TypeVar("T")


def _memoised(cache: dict[int, T], active: set[int], group: int, reentered: T, derive: Callable[[int], T]) -> T:
    """``derive(group)`` once per group; ``reentered`` for a group reached again while its own
    value is being derived (a cycle of the memo)."""
    known = cache.get(group)
    if known is not None:
        return known
    if group in active:
        return reentered
    active.add(group)
    try:
        value = derive(group)
    finally:
        active.discard(group)
    cache[group] = value
    return value


class Prover:
    """Facts and emptiness of memo groups, derived from the arrival bounds of source reads and
    the predicates above them; memoised per group. A group reached again while its own facts are
    being derived (the memo's cycles: a snapshot from a delta from two snapshots) contributes no
    facts, which is sound: fewer facts prove less."""

    def __init__(self, memo: Memo, bounds: ArrivalBounds) -> None:
        self.memo = memo
        self.bounds = bounds
        self._facts: dict[int, Facts] = {}
        self._keys: dict[int, Keys] = {}
        self._empty: dict[int, bool] = {}
        self._active: set[int] = set()
        self._active_keys: set[int] = set()
        self._active_empty: set[int] = set()
        self._non_null: dict[int, frozenset[str]] = {}
        self._active_non_null: set[int] = set()

    def forget(self) -> None:
        """Drop what was derived: the memo has grown (groups derived while it was being expanded
        may have gained expressions, which prove more)."""
        for cache in (self._facts, self._keys, self._empty, self._non_null):
            cache.clear()

    def _of_group(self, group: int, cache: dict[int, dict[K, Interval]], active: set[int],
                  of_expr: Callable[[LogicalPlan], dict[K, Interval]]) -> dict[K, Interval]:
        """What every expression of the group proves, met; memoised, cycle-guarded."""

        def derive(found: int) -> dict[K, Interval]:
            known: dict[K, Interval] = {}
            for expr in list(self.memo.group(found).exprs):
                known = meet(known, of_expr(expr))
            return known

        return _memoised(cache, active, self.memo.find(group), {}, derive)

    # -- facts ------------------------------------------------------------------------------

    def facts(self, group: int) -> Facts:
        """Ranges every non-null value of the group's columns lies in."""

        return self._of_group(group, self._facts, self._active, self.expr_facts)

    def _input(self, ref: LogicalPlan) -> Facts:
        return self.facts(ref.group) if isinstance(ref, GroupRef) else {}

    def expr_facts(self, expr: LogicalPlan) -> Facts:
        """The facts one memo expression proves about its group."""
        if isinstance(expr, SourceRead):
            found = self.bounds.fact(expr)
            return {} if found is None else {found[0]: found[1]}
        if isinstance(expr, Filter):
            kinds = {f.name: kind_of(f.type) for f in expr.input.schema.fields}
            return meet(self._input(expr.input), predicate_facts(expr.condition, kinds))
        if isinstance(expr, (Sort, Limit, Distinct, Window)):
            return self._input(expr.input)
        if isinstance(expr, Repeat):
            return {n: i for n, i in self._input(expr.input).items() if n != expr.count}
        if isinstance(expr, Project):
            return _projected(self._input(expr.input), expr, lambda name, source: [(name, source)])
        if isinstance(expr, Aggregate):
            below = self._input(expr.input)
            return {k: below[k] for k in expr.keys if k in below}
        if isinstance(expr, Join):
            names = set(expr.schema.names)
            facts = {n: i for n, i in self._input(expr.left).items() if n in names}
            if expr.kind.keeps_right_columns:
                facts = meet(facts, {n: i for n, i in self._input(expr.right).items() if n in names})
            if expr.condition is not None and expr.kind in (JoinKind.INNER, JoinKind.CROSS, JoinKind.SEMI):
                kinds = {f.name: kind_of(f.type) for f in expr.left.schema.fields}
                if expr.kind is not JoinKind.SEMI:
                    kinds.update({f.name: kind_of(f.type) for f in expr.right.schema.fields})
                facts = meet(facts, {n: i for n, i in predicate_facts(expr.condition, kinds).items() if n in names})
            return facts
        if isinstance(expr, Union):
            if self._input_empty(expr.left) or self._input_empty(expr.right):
                side, renamed = self._union_side(expr)
                return {renamed[n]: i for n, i in self._input(side).items() if n in renamed}
            left, right = self._input(expr.left), self._input(expr.right)
            out = {}
            for field, a, b in zip(expr.fields, expr.left.schema.fields, expr.right.schema.fields):
                if a.name in left and b.name in right:
                    out[field.name] = left[a.name].join(right[b.name])
            return out
        if isinstance(expr, (ToDelta, Consolidate)):
            return self._input(expr.input)
        if isinstance(expr, (StateAggregate, StateRows, Finalize)):
            below = self._input(expr.input)
            return {k: below[k] for k in expr.keys if k in below}
        if isinstance(expr, (StateMerge, ZApply)):
            return hull(self._input(expr.left), self._input(expr.right))
        return {}

    def _union_side(self, expr: Union) -> tuple[LogicalPlan, dict[str, str]]:
        """A union with a proven-empty side has the other side's facts: that side, and its
        columns' names in the union."""
        side = expr.right if self._input_empty(expr.left) else expr.left
        return side, {a.name: f.name for f, a in zip(expr.fields, side.schema.fields)}

    # -- key spans --------------------------------------------------------------------------

    def keys(self, group: int) -> Keys:
        """The key spans of the group's columns (see the module docstring)."""
        if not self.bounds.keys:
            return {}

        return self._of_group(group, self._keys, self._active_keys, self.expr_keys)

    def _input_keys(self, ref: LogicalPlan) -> Keys:
        return self.keys(ref.group) if isinstance(ref, GroupRef) else {}

    def expr_keys(self, expr: LogicalPlan) -> Keys:
        """The key spans one memo expression proves about its group."""
        if not self.bounds.keys:
            return {}
        if isinstance(expr, (SourceRead, Scan)):
            return self.bounds.read_keys(expr)
        if isinstance(expr, Filter):
            return equate_keys(self._input_keys(expr.input), equated(expr.condition))
        if isinstance(expr, (Sort, Limit, Distinct, Window)):
            return self._input_keys(expr.input)
        if isinstance(expr, Repeat):
            return {k: s for k, s in self._input_keys(expr.input).items() if k[0] != expr.count}
        if isinstance(expr, Project):
            below = self._input_keys(expr.input)
            return _projected(below, expr, lambda name, source: [((name, d), (c, d)) for c, d in below if c == source])
        if isinstance(expr, Aggregate):
            return {k: s for k, s in self._input_keys(expr.input).items() if k[0] in expr.keys}
        if isinstance(expr, Join):
            keys = self._input_keys(expr.left)
            if expr.kind in (JoinKind.INNER, JoinKind.CROSS, JoinKind.SEMI):
                keys = equate_keys(meet(keys, self._input_keys(expr.right)), equated(expr.condition))
            elif expr.kind.keeps_right_columns:
                keys = meet(keys, self._input_keys(expr.right))
            names = set(expr.schema.names)
            return {k: s for k, s in keys.items() if k[0] in names}
        if isinstance(expr, Union):
            if self._input_empty(expr.left) or self._input_empty(expr.right):
                side, renamed = self._union_side(expr)
                return {(renamed[c], d): s for (c, d), s in self._input_keys(side).items() if c in renamed}
            left, right = self._input_keys(expr.left), self._input_keys(expr.right)
            out: Keys = {}
            for field, a, b in zip(expr.fields, expr.left.schema.fields, expr.right.schema.fields):
                for column, domain in left:
                    if column == a.name and (b.name, domain) in right:
                        out[(field.name, domain)] = left[(column, domain)].join(right[(b.name, domain)])
            return out
        if isinstance(expr, (ToDelta, Consolidate)):
            return self._input_keys(expr.input)
        if isinstance(expr, (StateAggregate, StateRows, Finalize)):
            return {k: s for k, s in self._input_keys(expr.input).items() if k[0] in expr.keys}
        if isinstance(expr, (StateMerge, ZApply)):
            return hull(self._input_keys(expr.left), self._input_keys(expr.right))
        return {}

    def co_arriving(self, join: Join) -> bool:
        """Whether ``join`` (of template groups) equates a column of one side with a column of
        the other that share a key domain: its delta's cross terms between old and new rows
        may be proven empty once read over time."""
        if not self.bounds.keys or join.kind not in (JoinKind.INNER, JoinKind.CROSS):
            return False
        left, right = self._input_keys(join.left), self._input_keys(join.right)
        for a, b in equated(join.condition):
            for x, y in ((a, b), (b, a)):
                if {d for c, d in left if c == x} & {d for c, d in right if c == y}:
                    return True
        return False

    # -- emptiness --------------------------------------------------------------------------

    def empty(self, group: int) -> bool:
        """Whether the group is proven to hold no rows (at any time point it is computed)."""

        def derive(found: int) -> bool:
            return (any(i.empty for i in self.facts(found).values()) or any(s.empty for s in self.keys(found).values())
                    or any(self.expr_empty(e) for e in list(self.memo.group(found).exprs)))

        return _memoised(self._empty, self._active_empty, self.memo.find(group), False, derive)

    def _input_empty(self, ref: LogicalPlan) -> bool:
        return isinstance(ref, GroupRef) and self.empty(ref.group)

    def expr_empty(self, expr: LogicalPlan) -> bool:
        """Whether one memo expression proves its group empty."""
        if isinstance(expr, Values):
            return not expr.rows
        if isinstance(expr, SourceRead):
            return self.bounds.read_empty(expr)
        if isinstance(expr, Filter):
            if self._input_empty(expr.input):
                return True
            return any(i.empty for i in self.expr_facts(expr).values()) or any(s.empty for s in self.expr_keys(expr).values())
        if isinstance(expr, (Project, Sort, Limit, Distinct, Repeat, Window)):
            return self._input_empty(expr.input)
        if isinstance(expr, Aggregate):
            return bool(expr.keys) and self._input_empty(expr.input)
        if isinstance(expr, Join):
            left, right = self._input_empty(expr.left), self._input_empty(expr.right)
            if expr.kind in (JoinKind.INNER, JoinKind.CROSS, JoinKind.SEMI):
                return left or right or self._disjoint(expr)
            if expr.kind in (JoinKind.LEFT, JoinKind.ANTI):
                return left
            if expr.kind is JoinKind.RIGHT:
                return right
            return left and right
        if isinstance(expr, Union):
            return self._input_empty(expr.left) and self._input_empty(expr.right)
        if isinstance(expr, Intersect):
            return self._input_empty(expr.left) or self._input_empty(expr.right)
        if isinstance(expr, Except):
            return self._input_empty(expr.left)
        if isinstance(expr, (ToDelta, Consolidate, Finalize, StateRows)):
            return self._input_empty(expr.input)
        if isinstance(expr, StateAggregate):
            return bool(expr.keys) and self._input_empty(expr.input)
        if isinstance(expr, (StateMerge, ZApply)):
            return self._input_empty(expr.left) and self._input_empty(expr.right)
        return False

    def _disjoint(self, join: Join) -> bool:
        """Whether the join equates two columns whose values landed in disjoint intervals."""
        if not self.bounds.keys or join.condition is None:
            return False
        left, right = self._input_keys(join.left), self._input_keys(join.right)
        keys = equate_keys(meet(left, right), equated(join.condition))
        if any(s.empty for s in keys.values()):
            return True
        null_safe = equated(join.condition, null_safe=True)
        if not null_safe or not isinstance(join.left, GroupRef) or not isinstance(join.right, GroupRef):
            return False
        names = set(join.left.schema.names)
        return self.apart(join.left.group, join.right.group, [(a, b) if a in names else (b, a) for a, b in null_safe],
                          null_safe=True)

    def apart(self, left: int, right: int, pairs: Iterable[tuple[str, str]], null_safe: bool = False) -> bool:
        """Whether no row of group ``left`` equals a row of group ``right`` on every pair
        ``(left column, right column)``: some pair's non-null values landed in disjoint
        intervals of a domain both columns hold. With ``null_safe`` (``<=>``, under which NULL
        equals NULL) one of the two columns must also be proven never NULL."""
        if not self.bounds.keys:
            return False
        left_keys, right_keys = self.keys(left), self.keys(right)
        for a, b in pairs:
            for (column, domain), span in left_keys.items():
                other = right_keys.get((b, domain))
                if column != a or other is None or not span.meet(other).empty:
                    continue
                if not null_safe or a in self.non_null(left) or b in self.non_null(right):
                    return True
        return False

    # -- values never NULL ------------------------------------------------------------------

    def non_null(self, group: int) -> frozenset[str]:
        """The columns of the group proven never NULL: a declared key or a column landing with
        one (the declaration says every such row holds a key), carried up through the operators
        that keep a column's values, and the columns a predicate compares with ``=``."""
        if not self.bounds.keys:
            return frozenset()

        def derive(found: int) -> frozenset[str]:
            out: set[str] = set()
            for expr in list(self.memo.group(found).exprs):
                out |= self.expr_non_null(expr)  # every expression holds the same rows
            return frozenset(out)

        return _memoised(self._non_null, self._active_non_null, self.memo.find(group), frozenset(), derive)

    def _input_non_null(self, ref: LogicalPlan) -> frozenset[str]:
        return self.non_null(ref.group) if isinstance(ref, GroupRef) else frozenset()

    def expr_non_null(self, expr: LogicalPlan) -> set[str]:
        """The columns one memo expression proves never NULL."""
        if isinstance(expr, (SourceRead, Scan)):
            return {c for c, _ in self.bounds.read_keys(expr)}
        if isinstance(expr, Filter):
            return set(self._input_non_null(expr.input)) | rejects_null(expr.condition)
        if isinstance(expr, (Sort, Limit, Distinct, ToDelta, Consolidate)):
            return set(self._input_non_null(expr.input))
        if isinstance(expr, Window):
            return set(self._input_non_null(expr.input)) | {c.field.name for c in expr.calls if not c.field.nullable}
        if isinstance(expr, Repeat):
            return set(self._input_non_null(expr.input)) - {expr.count}
        if isinstance(expr, Project):
            below = self._input_non_null(expr.input)
            return {p.field.name for p in expr.projections if column_name(p.expression) in below}
        if isinstance(expr, (Aggregate, StateAggregate, StateRows, Finalize)):
            return set(expr.keys) & self._input_non_null(expr.input)
        if isinstance(expr, Join):
            names = set(expr.schema.names)
            left, right = self._input_non_null(expr.left), self._input_non_null(expr.right)
            if expr.kind in (JoinKind.INNER, JoinKind.CROSS, JoinKind.SEMI):
                found = set(left | right) | (rejects_null(expr.condition) if expr.condition is not None else set())
            else:
                found = set(left if expr.kind in (JoinKind.LEFT, JoinKind.ANTI) else right if expr.kind is JoinKind.RIGHT else ())
            return found & names
        if isinstance(expr, Union):
            if self._input_empty(expr.left) or self._input_empty(expr.right):
                side, renamed = self._union_side(expr)
                return {renamed[c] for c in self._input_non_null(side) if c in renamed}
            left, right = self._input_non_null(expr.left), self._input_non_null(expr.right)
            return {f.name for f, a, b in zip(expr.fields, expr.left.schema.fields, expr.right.schema.fields)
                    if a.name in left and b.name in right}
        if isinstance(expr, (StateMerge, ZApply)):
            return set(self._input_non_null(expr.left) & self._input_non_null(expr.right))
        return set()

    def why(self, group: int) -> str:
        """Why a group is planned as empty, for plan listings: ``proven empty: …``, or ``planned
        empty: …`` when it rests on a declared forecast (checked when the interval lands)."""
        contradicted = [n for n, i in self.facts(group).items() if i.empty]
        if contradicted:
            return f"proven empty: no value of {', '.join(sorted(contradicted))} can pass"
        apart = sorted({c for (c, _), s in self.keys(group).items() if s.empty})
        if apart or any(isinstance(e, Join) and self._disjoint(e) for e in self.memo.group(group).exprs):
            return f"proven empty: the keys joined landed in different intervals{(' (' + ', '.join(apart) + ')') if apart else ''}"
        read = next((e for e in self.memo.group(group).exprs if isinstance(e, SourceRead) and self.bounds.read_empty(e)), None)
        if read is not None:
            if self.bounds.read_empty(read, landed=True):
                return f"proven empty: {read.scan.table} landed no rows in {read.form}"
            return f"planned empty: {read.scan.table} is expected to land no rows in {read.form}"
        return "empty: an input is empty"


def _projected(below: Mapping[K, Interval], expr: Project, pairs: Callable[[str, str], list[tuple[K, K]]]) -> dict[K, Interval]:
    """The facts of a projection: those of each column it passes on as is, under its new name
    (``pairs(new name, source column)``: the keys to copy, as ``(new key, old key)``)."""
    out: dict[K, Interval] = {}
    for p in expr.projections:
        source = column_name(p.expression)
        if source is None:
            continue
        for new, old in pairs(p.field.name, source):
            if old in below:
                out[new] = below[old]
    return out



__all__ = ["Prover"]
