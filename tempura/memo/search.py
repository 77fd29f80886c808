"""Cost-bounded physical search over an explored memo, and extraction of the best plan.

**Choice: top-down Cascades optimization with branch-and-bound, after Volcano-style logical
exploration.** Logical exploration runs first, to a fixpoint, from the rule queue
(:mod:`tempura.memo.rules`): the join-order space has to be enumerated completely anyway (the DP
enumerator inserts every connected split), and exploring it eagerly keeps the group structure
simple to reason about and to extend with TVR links. The *physical* space is much larger — every
join expression has up to five algorithms, each with its own input requirements and enforcers —
and that is where bounding pays: :meth:`Search.optimize` asks a group for a plan that satisfies
a required property and costs less than a limit, tries the expression's alternatives in turn,
passes each input the budget left after the operator's own cost and its other inputs, and drops
an alternative as soon as its partial cost reaches the best plan found so far. Winners are
memoised per (group, required property), and so are failures with the limit they failed under,
so a group is never re-searched under a budget it already could not meet. Columbia and Orca
search the same way; Calcite's ``TopDownRuleDriver`` is the Volcano planner retrofitted with it.

Physical alternatives come from implementation rules and enforcers supplied by the caller
(:mod:`tempura.rules.physical`), which keeps the memo free of Spark specifics.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

from tempura.algebra import LogicalPlan
from tempura.cost.model import Cost
from tempura.errors import TempuraError
from tempura.memo.memo import Group, Memo
from tempura.memo.properties import NO_PROPS, NO_UNION, UNION_INSIDE, UNION_INTERPRETED, UNION_ON_TOP, Props
from tempura.stats.relation import RelStats


# How an operator takes part in Spark's compilation of a plan into functions (``Alternative.fusion``)
COMPILED = "compiled"  # compiled into its stage: it reads its inputs' rows there
TRANSPARENT = "transparent"  # moved beneath a union it reads (a projection, a filter)
UNION = "union"  # a union all
MULTI_INPUT = "multi-input"  # compiled over several inputs' partitions (a shuffled join): no union over it compiles
EXCHANGE = "exchange"  # ends its input's stage and reads its rows one by one (an exchange, a broadcast, a gather)
KEPT = "kept"  # a read of a kept state: what computed it is another job's


@dataclass(frozen=True)
class Alternative:
    """One physical way to produce a group under a required property.

    ``children`` are (group, required property) pairs. ``deliver`` computes the delivered
    property from the children's delivered ones. ``logical`` is the memo expression this
    operator implements (``None`` for enforcers and other operators that change nothing
    logically). ``hint`` is what the runtime needs to pin the choice in Spark (a join's strategy
    and build side; a keyed read's column).

    ``fusion`` is how the operator takes part in Spark's compilation of a plan into functions
    (:data:`COMPILED` … :data:`KEPT`); ``unfused``, a union's, is the copy of its rows where Spark
    does not compile it (:attr:`Props.copy`). See :func:`outcome`.
    """

    operator: str
    details: str
    children: tuple[tuple[int, Props], ...]
    own: Cost
    deliver: Callable[[list[Props]], Props]
    logical: LogicalPlan | None = None
    hint: str | None = None
    rule: str = ""
    enforcer: bool = False
    passthrough: tuple[int, ...] = ()
    full: Cost | None = None
    fusion: str = COMPILED
    unfused: Cost | None = None


def outcome(alt: Alternative, delivered: Sequence[Props]) -> tuple[Cost | None, Props]:
    """What ``alt``'s own cost gains over inputs delivering ``delivered`` (``None``: nothing), and
    the delivered properties that follow Spark's compilation of plans (:attr:`Props.union`,
    :attr:`Props.copy`, :attr:`Props.empty`; a leaf says itself whether it is empty).

    Spark (4.3, adaptive execution off, as tempura runs its plans) compiles a union only when no
    other union and no shuffled join lies anywhere beneath it, across exchanges too. A union
    drops its empty inputs; left with one, it is that input. Otherwise it merges with the
    compiled unions on top of its inputs, and is interpreted when anything else beneath blocks
    it: then a compiled operator reading its rows in the stage pays :attr:`Alternative.unfused`
    (an exchange or a write, which read rows one by one anyway, do not)."""
    if not alt.children:
        return None, Props(empty=alt.deliver([]).empty)
    if alt.fusion == KEPT:
        return None, NO_PROPS
    if alt.fusion == UNION:
        live = [p for p in delivered if not p.empty]
        if len(live) < 2:
            return None, (Props(union=live[0].union, copy=live[0].copy) if live else Props(empty=True))
        if any(p.union in (UNION_INSIDE, UNION_INTERPRETED) for p in live):
            return None, Props(union=UNION_INTERPRETED, copy=alt.unfused)
        return None, Props(union=UNION_ON_TOP)
    if alt.fusion == TRANSPARENT:
        (only,) = delivered
        return None, only
    beneath = alt.fusion == MULTI_INPUT or any(p.union != NO_UNION for p in delivered)
    extra: Cost | None = None
    if alt.fusion != EXCHANGE:
        for p in delivered:
            if p.copy is not None:
                extra = p.copy if extra is None else extra + p.copy
    return extra, Props(union=UNION_INSIDE if beneath else NO_UNION)


class Implementer(Protocol):
    def implement(self, group: Group, expr: LogicalPlan, required: Props) -> Sequence[Alternative]: ...

    def enforce(self, group: Group, required: Props) -> Sequence[Alternative]: ...


@dataclass
class Winner:
    alternative: Alternative
    total: float
    cost: Cost
    delivered: Props
    own: Cost | None = None  # the alternative's own cost with what its inputs add (None: as it is)


@dataclass
class PhysicalPlan:
    """A node of the chosen physical plan: operator, estimated output, own and subtree cost."""

    operator: str
    details: str
    children: list[PhysicalPlan]
    group: int
    stats: RelStats
    own: Cost
    cumulative: Cost
    delivered: Props
    logical: LogicalPlan | None = None
    hint: str | None = None

    def walk(self) -> list[PhysicalPlan]:
        out = [self]
        for c in self.children:
            out.extend(c.walk())
        return out


@dataclass
class SearchStats:
    optimize_calls: int = 0
    alternatives: int = 0
    pruned: int = 0
    winners: int = 0


class Search:
    """Finds the cheapest physical plan of a group for a required property."""

    def __init__(self, memo: Memo, implementer: Implementer) -> None:
        self.memo = memo
        self.implementer = implementer
        self._winners: dict[tuple[int, Props], Winner] = {}
        self._failed: dict[tuple[int, Props], float] = {}
        self._active: set[tuple[int, Props]] = set()
        self.stats = SearchStats()

    def optimize(self, group: int, required: Props = NO_PROPS, limit: float = math.inf) -> Winner | None:
        group = self.memo.find(group)
        key = (group, required)
        self.stats.optimize_calls += 1
        won = self._winners.get(key)
        if won is not None:
            return won if won.total < limit else None
        if self._failed.get(key, -1.0) >= limit or key in self._active:
            return None
        self._active.add(key)
        try:
            best = self._search(self.memo.group(group), required, limit)
        finally:
            self._active.discard(key)
        if best is None:
            self._failed[key] = max(self._failed.get(key, -1.0), limit)
        else:
            self._winners[key] = best
            self.stats.winners += 1
        return best

    def _search(self, group: Group, required: Props, limit: float) -> Winner | None:
        best: Winner | None = None
        alternatives: list[Alternative] = []
        for expr in group.exprs:
            alternatives.extend(self.implementer.implement(group, expr, required))
        alternatives.extend(self.implementer.enforce(group, required))
        # Cheapest own cost first: a good early plan tightens the bound for the rest.
        alternatives.sort(key=lambda a: a.own.total)
        for alt in alternatives:
            self.stats.alternatives += 1
            total = alt.own.total
            if total >= limit:
                self.stats.pruned += 1
                continue
            cost = alt.own
            delivered: list[Props] = []
            for index, (child, child_required) in enumerate(alt.children):
                won = self.optimize(child, child_required, limit - total)
                if won is None or (
                    index in alt.passthrough and not child_required.is_any and won.alternative.enforcer
                ):
                    total = math.inf
                    break
                total += won.total
                cost = cost + won.cost
                delivered.append(won.delivered)
            extra, fused = outcome(alt, delivered) if total < limit else (None, NO_PROPS)
            if extra is not None:
                total += extra.total
                cost = cost + extra
            if total >= limit:
                self.stats.pruned += 1
                continue
            props = alt.deliver(delivered)
            if not props.satisfies(required):
                continue
            if (props.union, props.copy, props.empty) != (fused.union, fused.copy, fused.empty):
                props = dataclasses.replace(props, union=fused.union, copy=fused.copy, empty=fused.empty)
            own = None if extra is None else (alt.own + extra).with_rows(alt.own.rows)
            best = Winner(alt, total, cost.with_rows(group.stats.rows), props, own)
            limit = total
        return best

    def winner(self, group: int, required: Props = NO_PROPS) -> Winner | None:
        return self._winners.get((self.memo.find(group), required))

    @property
    def winner_count(self) -> int:
        return len(self._winners)

    def extract(self, group: int, required: Props = NO_PROPS) -> PhysicalPlan:
        """The memoised best plan of ``group`` under ``required`` as a tree."""
        won = self.winner(group, required)
        if won is None:
            won = self.optimize(group, required)
        if won is None:
            raise TempuraError(f"internal: no physical plan for memo group G{group} under {required}")
        alt = won.alternative
        children = [self.extract(child, req) for child, req in alt.children]
        g = self.memo.group(group)
        return PhysicalPlan(
            operator=alt.operator,
            details=alt.details,
            children=children,
            group=g.id,
            stats=g.stats,
            own=won.own if won.own is not None else alt.own,
            cumulative=won.cost,
            delivered=won.delivered,
            logical=alt.logical,
            hint=alt.hint,
        )


@dataclass
class SearchReport:
    """Numbers about one optimization, for EXPLAIN and the benchmarks."""

    groups: int = 0
    expressions: int = 0
    rule_firings: int = 0
    alternatives: int = 0
    pruned: int = 0
    winners: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "groups": self.groups,
            "expressions": self.expressions,
            "rule_firings": self.rule_firings,
            "alternatives": self.alternatives,
            "pruned": self.pruned,
            "winners": self.winners,
            "seconds": self.seconds,
            "notes": list(self.notes),
        }
