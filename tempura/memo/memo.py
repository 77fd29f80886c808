"""The memo: groups of logically equivalent expressions, deduplicated by fingerprint.

A memo *expression* is a logical operator whose inputs are :class:`GroupRef` leaves, never
whole subtrees: ``Join(inner, G3, G7, a = b)``. Because operators are immutable and hash by
value, the expression *is* its fingerprint, and the memo's table from expression to group finds
duplicates in one lookup (CockroachDB's interning; Calcite's digest map).

A group holds every logical expression found equivalent to its first one, plus the winners the
search memoises per required physical property (:mod:`tempura.memo.search`). Its statistics are
derived once, on first use, from the expression that created it, so every expression of the group sees the
same cardinality whichever join order produced it.

When a rule proves that two groups are equivalent (its result already lives in another group),
the groups merge: a union-find keeps the lower id as the representative, expressions are
re-interned under canonical child ids, and merges cascade if that reveals more duplicates.

**TVR meta-sets.** Tempura links the groups that are the snapshots and deltas of one
time-varying relation in a ``TvrMetaSet``. The memo keeps these links in :class:`TvrMetaSet`
objects: a meta-set maps a TVR *semantics* (a hashable value such as "snapshot at t2" or "delta
between t1 and t2") to the group computing it, every group knows the meta-sets it belongs to, and
merging two groups merges their meta-set memberships. Exploration rules for TVRs match on these
links as ordinary rules match on operators.
"""

from __future__ import annotations

import dataclasses
import weakref
from dataclasses import dataclass, field
from typing import Callable, Hashable, Iterator

from tempura.algebra import LogicalPlan, Schema
from tempura.errors import TempuraError
from tempura.stats.relation import RelStats, scale_column


@dataclass(frozen=True, eq=False)
class GroupRef(LogicalPlan):
    """A leaf standing for memo group ``group``; it carries the group's schema so that operators
    above it derive theirs."""

    group: int
    fields: Schema

    def _derive_schema(self) -> Schema:
        return self.fields

    def _key(self) -> tuple[object, ...]:
        return (self.group,)

    @property
    def operator(self) -> str:
        return "Group"

    def details(self) -> str:
        return f"G{self.group}"


StatsDeriver = Callable[[LogicalPlan, list[RelStats]], RelStats]


@dataclass
class TvrMetaSet:
    """The groups that are versions of one time-varying relation, keyed by TVR semantics."""

    id: int
    members: dict[Hashable, int] = field(default_factory=dict)

    def group_for(self, semantics: Hashable) -> int | None:
        return self.members.get(semantics)


@dataclass
class Group:
    """One equivalence class of expressions.

    Its statistics are derived on first use, from the expression that created the group (its
    first), so that a group no search ever costs never pays for them. It knows its memo by a weak
    reference: the memo and its groups then hold no cycle, and a planning's memo is freed the
    moment the planning is dropped, not by a later pass of the cyclic garbage collector over its
    hundreds of thousands of objects."""

    id: int
    schema: Schema
    memo_ref: "weakref.ref[Memo]" = field(repr=False, compare=False)
    exprs: list[LogicalPlan] = field(default_factory=list)
    parents: set[LogicalPlan] = field(default_factory=set)
    tvr_sets: set[int] = field(default_factory=set)
    explored: set[str] = field(default_factory=set)  # names of whole-group rules already applied
    _stats: RelStats | None = field(default=None, repr=False)
    _ref: GroupRef | None = field(default=None, repr=False)

    @property
    def memo(self) -> Memo:
        memo = self.memo_ref()
        if memo is None:
            raise TempuraError(f"internal: group G{self.id} outlived its memo")
        return memo

    @property
    def stats(self) -> RelStats:
        if self._stats is None:
            self._stats = self.memo.estimate(self.exprs[0])
        return self._stats

    @property
    def ref(self) -> GroupRef:
        made = self._ref
        if made is None:
            made = self._ref = GroupRef(self.id, self.schema)
        return made


class Memo:
    """Groups, their expressions and the fingerprint table."""

    def __init__(self, derive_stats: StatsDeriver) -> None:
        self._derive_stats = derive_stats
        self._groups: list[Group] = []
        self._parent: list[int] = []  # union-find over group ids
        self._table: dict[LogicalPlan, int] = {}
        self._tvr_sets: list[TvrMetaSet] = []
        self.listeners: list[Callable[[LogicalPlan, int], None]] = []
        self.root: int | None = None
        self._added = 0

    # -- groups --------------------------------------------------------------------------------

    def find(self, group: int) -> int:
        while self._parent[group] != group:
            self._parent[group] = self._parent[self._parent[group]]
            group = self._parent[group]
        return group

    def group(self, group: int) -> Group:
        return self._groups[self.find(group)]

    @property
    def groups(self) -> list[Group]:
        """The live (representative) groups, by id."""
        return [g for g in self._groups if self._parent[g.id] == g.id]

    def measured(self, rows: dict[int, float]) -> None:
        """Set the rows of groups whose relation has been measured (a state an earlier run
        saved): each keeps its estimated columns, scaled to its rows, which are also its proven
        bound; every other group's statistics are derived again from its inputs'. A group's
        statistics come from its first expression, but each of its expressions computes the same
        relation, so the bound any of them proves holds for all: from the measured groups up,
        each group above one is bounded by the least its expressions prove (and its estimate
        capped by it)."""
        if not rows:
            return
        fixed: dict[int, RelStats] = {}
        for group_id, count in rows.items():
            group = self.group(group_id)
            stats = group.stats
            columns = {name: scale_column(c, stats.rows, count) for name, c in stats.columns.items()}
            fixed[group.id] = dataclasses.replace(stats, rows=float(count), columns=columns, max_rows=float(count))
        for group in self.groups:
            group._stats = fixed.get(group.id)
        todo = list(fixed)
        while todo:
            for parent in list(self.group(todo.pop()).parents):
                owner = self.lookup(parent)
                if owner is None or owner in fixed:
                    continue
                group = self.group(owner)
                bound = self.estimate(parent).max_rows
                if bound < group.stats.max_rows:
                    group._stats = dataclasses.replace(group.stats, max_rows=bound, rows=min(group.stats.rows, bound))
                    todo.append(group.id)

    def ref(self, group: int) -> GroupRef:
        return self.group(group).ref

    def canonical(self, expr: LogicalPlan) -> LogicalPlan:
        """``expr`` with every child reference pointing at its group's representative."""
        if not expr.inputs:
            return expr
        refs = []
        changed = False
        for child in expr.inputs:
            assert isinstance(child, GroupRef), "memo expressions have group references as inputs"
            rep = self.find(child.group)
            changed |= rep != child.group
            refs.append(self._groups[rep].ref if rep != child.group else child)
        return expr.with_inputs(*refs) if changed else expr

    def lookup(self, expr: LogicalPlan) -> int | None:
        found = self._table.get(self.canonical(expr))
        return None if found is None else self.find(found)

    def expressions(self) -> Iterator[tuple[int, LogicalPlan]]:
        for g in self.groups:
            for e in g.exprs:
                yield g.id, e

    @property
    def additions(self) -> int:
        """How many expressions have been added so far: a cheap "did anything change" counter."""
        return self._added

    def size(self) -> tuple[int, int]:
        """(groups, logical expressions)."""
        live = self.groups
        return len(live), sum(len(g.exprs) for g in live)

    def estimate(self, expr: LogicalPlan) -> RelStats:
        """Statistics an expression over group references would have, without adding it."""
        return self._derive_stats(expr, [self.group(c.group).stats for c in expr.inputs])  # type: ignore[attr-defined]

    # -- insertion -----------------------------------------------------------------------------

    def insert(self, plan: LogicalPlan, into: int | None = None) -> int:
        """Register a plan tree (its inner nodes may be whole operators or group references);
        returns the group of its root. With ``into``, the root joins that group."""
        if isinstance(plan, GroupRef):
            group = self.find(plan.group)
            if into is not None and self.find(into) != group:
                return self.merge(into, group)
            return group
        children = [self._groups[self.insert(child)].ref for child in plan.inputs]
        same = all(isinstance(old, GroupRef) and old.group == new.group for old, new in zip(plan.inputs, children))
        expr = plan if same else plan.with_inputs(*children)
        return self.add(expr, into)

    def add(self, expr: LogicalPlan, into: int | None = None) -> int:
        """Add one memo expression; returns its group (an existing one if it is a duplicate)."""
        expr = self.canonical(expr)
        existing = self._table.get(expr)
        if existing is not None:
            existing = self.find(existing)
            if into is not None and self.find(into) != existing:
                return self.merge(into, existing)
            return existing
        if into is None:
            group = Group(len(self._groups), expr.schema, weakref.ref(self))
            self._groups.append(group)
            self._parent.append(group.id)
        else:
            group = self.group(into)
            if set(expr.schema.names) != set(group.schema.names):
                raise TempuraError(
                    f"internal: {expr.operator} with columns {expr.schema.names} added to group "
                    f"G{group.id} with columns {group.schema.names}"
                )
        group.exprs.append(expr)
        self._table[expr] = group.id
        self._added += 1
        for child in expr.inputs:
            self.group(child.group).parents.add(expr)  # type: ignore[attr-defined]
        for listener in self.listeners:
            listener(expr, group.id)
        return group.id

    def merge(self, a: int, b: int) -> int:
        """Declare groups ``a`` and ``b`` equivalent; returns the surviving group."""
        a, b = self.find(a), self.find(b)
        if a == b:
            return a
        keep, gone = (a, b) if a < b else (b, a)
        kept, lost = self._groups[keep], self._groups[gone]
        self._parent[gone] = keep
        kept.explored &= lost.explored
        kept.tvr_sets |= lost.tvr_sets
        for meta in (self._tvr_sets[i] for i in lost.tvr_sets):
            for key, member in meta.members.items():
                if member == gone:
                    meta.members[key] = keep
        present = set(kept.exprs)
        for expr in lost.exprs:
            if expr not in present:
                kept.exprs.append(expr)
                present.add(expr)
        lost.exprs = []
        affected = lost.parents | kept.parents
        lost.parents = set()
        kept.parents = set()
        pending = self._rekey(affected)
        if self.root is not None and self.find(self.root) == keep:
            self.root = keep
        for x, y in pending:
            self.merge(x, y)
        return self.find(keep)

    def _rekey(self, exprs: set[LogicalPlan]) -> list[tuple[int, int]]:
        """Re-intern expressions whose inputs were merged; returns the group pairs found equal."""
        pending: list[tuple[int, int]] = []
        for old in exprs:
            owner = self._table.pop(old, None)
            if owner is None:
                continue
            owner = self.find(owner)
            group = self._groups[owner]
            canon = self.canonical(old)
            other = self._table.get(canon)
            position = group.exprs.index(old) if old in group.exprs else -1
            if other is not None:
                if position >= 0:
                    del group.exprs[position]
                if self.find(other) != owner:
                    pending.append((other, owner))
            else:
                self._table[canon] = owner
                if position >= 0:
                    group.exprs[position] = canon
                else:
                    group.exprs.append(canon)
            for child in canon.inputs:
                assert isinstance(child, GroupRef)
                parents = self._groups[self.find(child.group)].parents
                parents.discard(old)
                parents.add(canon)
        return pending

    # -- TVR meta-sets -------------------------------------------------------------------------

    def new_tvr_set(self) -> TvrMetaSet:
        meta = TvrMetaSet(len(self._tvr_sets))
        self._tvr_sets.append(meta)
        return meta

    def link_tvr(self, meta: TvrMetaSet, semantics: Hashable, group: int) -> int:
        """Record that ``group`` computes ``semantics`` of ``meta``; a second group for the same
        semantics is merged into the first."""
        group = self.find(group)
        existing = meta.members.get(semantics)
        if existing is not None and self.find(existing) != group:
            group = self.merge(existing, group)
        meta.members[semantics] = group
        self._groups[group].tvr_sets.add(meta.id)
        return group

    def tvr_set(self, meta_id: int) -> TvrMetaSet:
        return self._tvr_sets[meta_id]

    # -- printing ------------------------------------------------------------------------------

    def format(self) -> str:
        """Every live group with its rows and expressions, one per line (for golden tests)."""
        lines = []
        for g in self.groups:
            lines.append(f"G{g.id} rows={g.stats.rows:.4g} [{', '.join(sorted(g.schema.names))}]")
            for e in g.exprs:
                inputs = " ".join(c.details() for c in e.inputs)
                details = e.details()
                lines.append(f"  {e.operator}{(' ' + details) if details else ''}{(' ' + inputs) if inputs else ''}")
        return "\n".join(lines)
