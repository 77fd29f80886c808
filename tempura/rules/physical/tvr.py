"""Physical planning over time: TVR operators on Spark, execution times, saving and loading.

:class:`TimedImplementer` wraps the Spark implementer for multi-time-point plans. Every required
property carries the time point at which the consumer runs (:attr:`Props.time`):

- an operator runs at its consumer's time ``τ``, and only if ``τ`` is at or after the newest
  version its group reads (a fragment reading ``SD[i-1,i]`` or ``SS[i]`` runs at ``t_i`` or
  later); its inputs are required at ``τ`` too, and its own cost lands in entry ``τ`` of the cost
  vector;
- the ``load`` enforcer offers every group at ``τ`` as computed at an earlier ``τ' ≥`` its
  version, saved at ``τ'`` (a write, in entry ``τ'``) and read back at ``τ`` (in entry ``τ``):
  the seed's compute / save / load choice, made per group by the same cost-bounded search.
  The partial step of a split aggregate is no relation of its own (the plan extracted for it is
  its input's, and the final step aggregates that), so it is never kept: an aggregate's partial
  states are kept as the partial-state relations of :mod:`tempura.tvr.partials` instead.

TVR operators reach the memo lowered to the ordinary operators (a consolidation, a partial
aggregation and a merge of partial states are aggregates; a ``+#`` is a union, or a
consolidation followed by ``Repeat``), which the Spark implementer plans and costs. What is left
here: a source read, a file scan of the interval's rows (a snapshot of a source that may
delete is also consolidated: :meth:`~tempura.cost.operators.SparkCosts.change_snapshot`); ``Repeat``, Spark's ``explode``
of each row's count; and, for a group the :class:`~tempura.tvr.bounds.Prover` proves empty, an
empty relation at no cost (``Empty``), whatever the group's other expressions would read.

**Keyed reads** (``keyed-read``): an equi-join whose other side is smaller offers its probed side
a probe (:class:`~tempura.memo.properties.Probing`: the key column and the other side's distinct
keys, rounded up to a power of two so that offers of about as many keys share their plans), which
filters, projections, unions and groupings by the key pass down (:func:`~tempura.tvr.layout.passes`;
a join makes its own offers instead: passing them through joins too multiplied the search for
little, and the ``layouts`` phase still follows keys through joins). Under a probe, a source read and a load of a kept state
have a second alternative besides the whole read: a read of a keyed layout, priced by the
buckets the keys are expected to touch in the bucket count cheapest for it, plus the layout's
upkeep (writing the interval or the state bucketed) at the time point it is written; an interval
or a state committed before the floor is read by the layout it has (or whole), at no upkeep. So the
search and the state selection weigh a plan whose probes read a fraction of a big input as that
fraction; which layouts the plan's sources and states get is settled after extraction, over the
whole plan (:mod:`tempura.optimizer.layouts`), and the fragments are charged the whole reads
until then (:attr:`~tempura.memo.Alternative.full`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Sequence

from tempura.algebra import UNKNOWN_TYPE, Join, LogicalPlan, Repeat, Values
from tempura.cost.model import Cost
from tempura.cost.operators import SparkCosts
from tempura.cost.vector import CostVector, Objective
from tempura.memo import Alternative, Group, GroupRef, Memo
from tempura.memo.search import KEPT
from tempura.memo.properties import BROADCAST, BROADCASTED, NO_PROPS, SINGLE_PARTITION, Probing, Props
from tempura.algebra import PartialAggregate
from tempura.rules.base import Implementation
from tempura.rules.physical.implementer import SparkImplementer
from tempura.rules.tvr.expansion import available
from tempura.stats.relation import RelStats
from tempura.infer.prover import Prover
from tempura.tvr.layout import Layout, bucket_read, equalities, keyed_reads, passes, probed_sides, worth_probing
from tempura.tvr.operators import SourceRead

KEYED_READ = Implementation(
    "keyed-read", "SourceRead | LoadState, probed",
    "A source read or a kept state's load under a join's probe as a read of a keyed layout: only the hash buckets "
    "the other side's keys fall in, priced by the buckets they are expected to touch, plus writing the layout.")

KEYED = "KEYED"  # a keyed read's hint: ``KEYED:<column>``, the column its probe reads it by
LOAD = "LoadState"
COMMITTED = "CommittedState"
EMPTY = "Empty"


def _any(_delivered: list[Props]) -> Props:
    return NO_PROPS


class TimedImplementer:
    """Alternatives with execution times and cost vectors, plus the ``load`` enforcer."""

    def __init__(self, memo: Memo, costs: SparkCosts, objective: Objective, inner: SparkImplementer,
                 floor: int = 1, committed: dict[int, int] | None = None, prover: Prover | None = None,
                 deletes: Callable[[str], bool] | None = None, fraction: Callable[[str, int, int], float] | None = None,
                 probing: bool = False, committed_layouts: dict[int, Layout] | None = None,
                 landed: Callable[[str, int], tuple[bool, Layout | None]] | None = None) -> None:
        self.memo = memo
        # whether a source's interval has landed, and its layout then (before the floor: landed)
        self.landed = landed or (lambda _table, interval: (interval < floor, None))
        self.committed_layouts = dict(committed_layouts or {})  # group -> the layout its committed state has
        # a source's share of its cycle's rows in (start, end]: how a read's bytes spread over
        # the intervals that land them (the upkeep of a keyed layout is paid as each lands)
        self.fraction = fraction or (lambda _table, _start, _end: 0.0)
        self.probing = probing  # whether joins offer probes (keyed reads)
        self.prover = prover
        # whether a source (by table) may deliver deletions: its snapshots are consolidated
        self.deletes = deletes or (lambda _table: False)
        self.costs = costs
        self.objective = objective
        self.inner = inner
        # Re-planning a cycle whose time points before ``floor`` are committed: no work runs
        # before ``floor``, and ``committed`` (group -> time point) are states saved then, which
        # cost only a read.
        self.floor = floor
        self.committed = dict(committed or {})
        self._available: dict[int, int] = {}
        # the Spark alternatives of an expression do not depend on time: derive them once
        self._untimed: dict[tuple[int, LogicalPlan, Props], Sequence[Alternative]] = {}
        self._timed: dict[tuple[int, LogicalPlan, Props], list[Alternative]] = {}

    def available(self, group: int) -> int:
        return available(self.memo, group, self._available)

    def implement(self, group: Group, expr: LogicalPlan, required: Props) -> Sequence[Alternative]:
        time = required.time
        if time < self.available(group.id):
            return []
        if time < self.floor:
            return self._committed(group, expr, required.probed(None))
        timed = self._timed.get((group.id, expr, required))
        if timed is not None:
            return timed
        if required.probe is not None:
            plain = self.implement(group, expr, required.probed(None))
            timed = self._timed[(group.id, expr, required)] = [*plain, *self._probed(group, expr, required, plain)]
            return timed
        untimed = required.at(0)
        key = (group.id, expr, untimed)
        alternatives = self._untimed.get(key)
        if alternatives is None:
            if isinstance(expr, (SourceRead, Repeat)):
                alternatives = self._tvr(group, expr)
            else:
                alternatives = self.inner.implement(group, expr, untimed)
                if self.probing and isinstance(expr, Join):
                    alternatives = [*alternatives, *self._probing(expr, alternatives)]
            self._untimed[key] = alternatives
        timed = self._timed[(group.id, expr, required)] = [self._at(a, time) for a in alternatives]
        return timed

    def enforce(self, group: Group, required: Props) -> Sequence[Alternative]:
        time = required.time
        if time < self.available(group.id) or time < self.floor:
            return []
        probe = required.probe
        plain = required.probed(None)
        out = [self._at(self._offering(a, probe), time) for a in self.inner.enforce(group, plain.at(0))]
        if required.is_any and self.keepable(group):
            out.extend(self._loads(group, time, probe))
        if self.prover is not None and self.prover.empty(group.id) and self.typed(group):
            out.append(self._empty(group, plain))
        return out

    # -- keyed reads -------------------------------------------------------------------------

    def _probing(self, join: Join, alternatives: Sequence[Alternative]) -> list[Alternative]:
        """``join``'s alternatives again, each side it may read only the matching keys of (the
        larger, where the other side's keys are few enough to prune by) offered a probe."""
        sides = (join.left, join.right)
        stats = [self.memo.group(self.memo.find(ref.group)).stats for ref in sides]  # type: ignore[attr-defined]
        out: list[Alternative] = []
        for index, ok in enumerate(probed_sides(join.kind)):
            mine, theirs = stats[index], stats[1 - index]
            if not ok or theirs.rows >= mine.rows:
                continue
            best: Probing | None = None
            for a, b in equalities(join.condition):
                column, key = (a, b) if a in sides[index].schema.names else (b, a)
                if column not in sides[index].schema.names or key not in sides[1 - index].schema.names:
                    continue
                # rounded up to a power of two: offers of about as many keys share their plans
                estimate = min(theirs.ndv(key) or theirs.rows, theirs.rows) * self.costs.k.probe_keys
                keys = 2.0 ** math.ceil(math.log2(max(estimate, 1.0)))
                if worth_probing(keys, mine.bytes) and (best is None or keys < best.keys):
                    best = Probing(column, keys)
            if best is None:
                continue
            side = "left" if index == 0 else "right"
            for alt in alternatives:
                children = list(alt.children)
                child, props = children[index]
                if props.distribution.kind == BROADCAST:
                    continue  # the larger side broadcast: never the cheaper way
                children[index] = (child, props.probed(best))
                out.append(dataclasses.replace(alt, children=tuple(children),
                                               details=f"{alt.details}, probing {side} by {best.column}"))
        return out

    @staticmethod
    def _offering(alt: Alternative, probe: Probing | None) -> Alternative:
        """An enforcer passing ``probe`` to its input (an exchange or sort moves every row it reads)."""
        if probe is None:
            return alt
        return dataclasses.replace(alt, children=tuple((child, props.probed(probe)) for child, props in alt.children))

    def _probed(self, group: Group, expr: LogicalPlan, required: Props, plain: Sequence[Alternative]) -> list[Alternative]:
        """What a probe adds to ``expr``'s ``plain`` alternatives: a keyed read of a source, or
        each alternative again with the probe passed to the inputs the key reaches."""
        probe = required.probe
        assert probe is not None
        if isinstance(expr, SourceRead):
            return [alt for alt in (self._keyed_read(group, expr, a, probe, required.time) for a in plain) if alt is not None]
        reached = passes(expr, probe.column) if not isinstance(expr, Join) else []
        if not reached:
            return []
        out = []
        for alt in plain:
            if alt.logical is not expr or len(alt.children) != len(expr.inputs):
                continue
            children = list(alt.children)
            for index, column in reached:
                child, props = children[index]
                if props.probe is None:
                    children[index] = (child, props.probed(Probing(column, probe.keys)))
            if tuple(children) != alt.children:
                out.append(dataclasses.replace(alt, children=tuple(children)))
        return out

    def _laid_out(self, read: float, size: float, rows: float, keys: float, upkeep_at: Sequence[tuple[int, float]],
                  time: int, base: float = 0.0) -> list[tuple[int, CostVector]]:
        """A probed read costing ``read`` at ``time`` (of ``size`` bytes in ``rows`` rows) laid out
        in each bucket count it may have: the count, and the read's cost then (plus ``base``)
        with the layout's upkeep (``upkeep_at``: the time points its parts are written at, with
        each one's share of the bytes)."""
        out = []
        for n, cost, upkeep in keyed_reads(read, size, rows, keys, self.costs.k):
            vector = CostVector.at(time, Cost(io=base + cost), self.objective)
            for at, share in upkeep_at:
                vector = vector + CostVector.at(at, Cost(io=upkeep * share), self.objective)
            out.append((n, vector))
        return out

    def _keyed_read(self, group: Group, expr: SourceRead, plain: Alternative, probe: Probing, time: int) -> Alternative | None:
        """``expr``'s read of only the buckets ``probe``'s keys touch: its intervals that have
        landed by the layouts they landed in (whole where not laid out by the probe's column),
        the others landed hash-bucketed by it in the bucket count cheapest for this read, each
        paying its layout's upkeep as it lands; ``None`` when that is no cheaper than the whole."""
        own = plain.own
        assert isinstance(own, CostVector)
        column = next((c.source for c in expr.scan.columns if c.field.name == probe.column), None)
        if column is None:
            return None
        k, table, stats = self.costs.k, expr.scan.table, group.stats
        read = own.times[time - 1]
        whole = self.fraction(table, expr.start, expr.end)
        landed = 0.0  # the landed intervals' part of the keyed read
        free: list[tuple[int, float]] = []  # the intervals still to land, with their share of the read
        for i in range(expr.start + 1, expr.end + 1):
            share = self.fraction(table, i - 1, i) / whole if whole > 0 else 1.0 / (expr.end - expr.start)
            done, layout = self.landed(table, i)
            if not done:
                free.append((i, share))
            elif layout is not None and layout.hashes(column):
                landed += bucket_read(read * share, layout.buckets, probe.keys, k)
            else:
                landed += read * share
        part = math.fsum(share for _, share in free)
        options: list[tuple[int, CostVector]] = []
        if landed < read * (1.0 - part):  # the intervals to land read whole, the landed ones by their layouts
            options.append((0, CostVector.at(time, Cost(io=landed + read * part + k.stage), self.objective)))
        if part > 0:
            options += self._laid_out(read * part, stats.bytes * part, stats.rows * part, probe.keys,
                                      [(at, share / part) for at, share in free], time, landed)
        if not options:
            return None
        n, cost = min(options, key=lambda o: o[1].total)
        if cost.total >= own.total:
            return None
        how = f"in {n} buckets" if n else "as its intervals landed"  # n = 0: only the landed intervals pruned
        return dataclasses.replace(plain, details=f"{plain.details}, keyed by {probe.column} {how}",
                                   own=cost.with_rows(stats.rows), rule=KEYED_READ.name, full=own,
                                   hint=f"{KEYED}:{column}")

    def load_cost(self, group: Group, required: Props, kept_at: int) -> CostVector:
        """Reading ``group``'s state kept at ``kept_at`` at ``required``'s time point: the whole
        state, or under a probe, the touched buckets of it laid out (its upkeep paid as it is
        saved) when that is cheaper."""
        time = required.time
        load = self.costs.state_read(group.stats)
        whole = CostVector.at(time, load, self.objective)
        probe = required.probe
        if probe is None or not worth_probing(probe.keys, group.stats.bytes):
            return whole
        if kept_at < self.floor:  # committed: read by the layout it has, if it is the probe's
            layout = self.committed_layouts.get(self.memo.find(group.id))
            if layout is None or layout.column != probe.column:
                return whole
            options = [CostVector.at(time, Cost(io=bucket_read(load.total, layout.buckets, probe.keys, self.costs.k)
                                                + self.costs.k.stage), self.objective)]
        else:
            options = [v for _, v in self._laid_out(load.total, group.stats.bytes, group.stats.rows, probe.keys,
                                                    [(kept_at, 1.0)], time)]
        return min([whole, *options], key=lambda v: v.total)

    def _empty(self, group: Group, required: Props) -> Alternative:
        """A proven-empty group as an empty relation: no cost, and any distribution or order."""
        delivered = Props(BROADCASTED if required.distribution.kind == BROADCAST else SINGLE_PARTITION,
                          required.ordering, required.time, empty=True)
        why = self.prover.why(group.id) if self.prover is not None else ""
        return Alternative(EMPTY, why, (), CostVector.zero(self.objective).with_rows(0.0),  # type: ignore[arg-type]
                           lambda _d: delivered, Values(tuple(group.schema.fields), ()), None, "empty")

    @staticmethod
    def typed(group: Group) -> bool:
        """Whether every column of the group has a type: an empty relation is typed nulls, and a
        column Spark's analyzer could not type either is computed from its inputs instead."""
        return all(f.type != UNKNOWN_TYPE for f in group.schema.fields)

    @staticmethod
    def keepable(group: Group) -> bool:
        """Whether the group's result may be kept: not the partial step of a split aggregate."""
        return not any(isinstance(e, PartialAggregate) for e in group.exprs)

    def _at(self, alt: Alternative, time: int) -> Alternative:
        own = alt.own if isinstance(alt.own, CostVector) else CostVector.at(time, alt.own, self.objective)
        unfused = alt.unfused
        if unfused is not None and not isinstance(unfused, CostVector):
            unfused = CostVector.at(time, unfused, self.objective).with_rows(0.0)  # type: ignore[assignment]
        return dataclasses.replace(alt, children=tuple((child, props.at(time)) for child, props in alt.children),
                                   own=own, unfused=unfused)  # type: ignore[arg-type]

    def committed_at(self, group: int) -> int | None:
        """The time point a committed state of ``group`` was saved at, if there is one."""
        return self.committed.get(self.memo.find(group))

    def _committed(self, group: Group, expr: LogicalPlan, required: Props) -> list[Alternative]:
        """Before the floor, only a committed state exists: once per group, at its time point,
        at no cost (its cost was paid when it was saved)."""
        if self.committed_at(group.id) != required.time or not required.is_any or expr is not group.exprs[0]:
            return []
        return [Alternative(COMMITTED, f"saved at t{required.time}", (), CostVector.zero(self.objective).with_rows(group.stats.rows),  # type: ignore[arg-type]
                            _any, None, None, "committed-state")]

    def _loads(self, group: Group, time: int, probe: Probing | None = None) -> list[Alternative]:
        stats = group.stats
        save = self.costs.state_write(stats)
        out = []
        kept = self.committed_at(group.id)
        earlier_times = list(range(max(self.available(group.id), self.floor), time))
        if kept is not None and kept < self.floor:
            earlier_times.insert(0, kept)
        for earlier in earlier_times:
            whole = self.load_cost(group, Props(time=time), earlier)
            read = self.load_cost(group, Props(time=time, probe=probe), earlier)
            saved = CostVector.zero(self.objective) if earlier < self.floor else CostVector.at(earlier, save, self.objective)
            keyed = read != whole
            out.append(
                Alternative(LOAD, f"saved at t{earlier}{', keyed by ' + probe.column if keyed and probe else ''}",
                            ((group.id, NO_PROPS.at(earlier)),), (saved + read).with_rows(stats.rows),  # type: ignore[arg-type]
                            _any, None, None, KEYED_READ.name if keyed else "load-state", enforcer=True,
                            full=(saved + whole).with_rows(stats.rows) if keyed else None, fusion=KEPT)  # type: ignore[arg-type]
            )
        return out

    def _stats(self, ref: LogicalPlan) -> RelStats:
        assert isinstance(ref, GroupRef)
        return self.memo.group(ref.group).stats

    def _children(self, expr: LogicalPlan) -> tuple[tuple[int, Props], ...]:
        return tuple((self.memo.find(c.group), NO_PROPS) for c in expr.inputs if isinstance(c, GroupRef))

    def _tvr(self, group: Group, expr: LogicalPlan) -> list[Alternative]:
        c = self.costs
        out = group.stats
        if isinstance(expr, SourceRead):
            own = c.scan(out)
            if not expr.delta and expr.start == 0 and self.deletes(expr.scan.table):
                own = own + c.change_snapshot(out)
        else:
            assert isinstance(expr, Repeat)
            own = c.project(self._stats(expr.input), 1)
        return [Alternative(expr.operator, expr.details(), self._children(expr), own.with_rows(out.rows),
                            _any, expr, rule=expr.operator)]
