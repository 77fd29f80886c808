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
"""

from __future__ import annotations

from typing import Callable, Sequence

from tempura.algebra import LogicalPlan, Repeat, Values
from tempura.cost.operators import SparkCosts
from tempura.cost.vector import CostVector, Objective
from tempura.memo import Alternative, Group, GroupRef, Memo
from tempura.memo.properties import BROADCAST, BROADCASTED, NO_PROPS, SINGLE_PARTITION, Props
from tempura.algebra import PartialAggregate
from tempura.rules.physical.implementer import SparkImplementer
from tempura.rules.tvr.expansion import available
from tempura.stats.relation import RelStats
from tempura.infer.prover import Prover
from tempura.tvr.operators import SourceRead

LOAD = "LoadState"
COMMITTED = "CommittedState"
EMPTY = "Empty"


def _any(_delivered: list[Props]) -> Props:
    return NO_PROPS


class TimedImplementer:
    """Alternatives with execution times and cost vectors, plus the ``load`` enforcer."""

    def __init__(self, memo: Memo, costs: SparkCosts, objective: Objective, inner: SparkImplementer,
                 floor: int = 1, committed: dict[int, int] | None = None, prover: Prover | None = None,
                 deletes: Callable[[str], bool] | None = None) -> None:
        self.memo = memo
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
            return self._committed(group, expr, required)
        timed = self._timed.get((group.id, expr, required))
        if timed is not None:
            return timed
        untimed = required.at(0)
        key = (group.id, expr, untimed)
        alternatives = self._untimed.get(key)
        if alternatives is None:
            if isinstance(expr, (SourceRead, Repeat)):
                alternatives = self._tvr(group, expr)
            else:
                alternatives = self.inner.implement(group, expr, untimed)
            self._untimed[key] = alternatives
        timed = self._timed[(group.id, expr, required)] = [self._at(a, time) for a in alternatives]
        return timed

    def enforce(self, group: Group, required: Props) -> Sequence[Alternative]:
        time = required.time
        if time < self.available(group.id) or time < self.floor:
            return []
        out = [self._at(a, time) for a in self.inner.enforce(group, required.at(0))]
        if required.is_any and self.keepable(group):
            out.extend(self._loads(group, time))
        if self.prover is not None and self.prover.empty(group.id):
            out.append(self._empty(group, required))
        return out

    def _empty(self, group: Group, required: Props) -> Alternative:
        """A proven-empty group as an empty relation: no cost, and any distribution or order."""
        delivered = Props(BROADCASTED if required.distribution.kind == BROADCAST else SINGLE_PARTITION,
                          required.ordering, required.time)
        why = self.prover.why(group.id) if self.prover is not None else ""
        return Alternative(EMPTY, why, (), CostVector.zero(self.objective).with_rows(0.0),  # type: ignore[arg-type]
                           lambda _d: delivered, Values(tuple(group.schema.fields), ()), None, "empty")

    @staticmethod
    def keepable(group: Group) -> bool:
        """Whether the group's result may be kept: not the partial step of a split aggregate."""
        return not any(isinstance(e, PartialAggregate) for e in group.exprs)

    def _at(self, alt: Alternative, time: int) -> Alternative:
        own = alt.own if isinstance(alt.own, CostVector) else CostVector.at(time, alt.own, self.objective)
        return Alternative(
            alt.operator,
            alt.details,
            tuple((child, props.at(time)) for child, props in alt.children),
            own,  # type: ignore[arg-type]
            alt.deliver,
            alt.logical,
            alt.hint,
            alt.rule,
            alt.enforcer,
            alt.passthrough,
        )

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

    def _loads(self, group: Group, time: int) -> list[Alternative]:
        stats = group.stats
        save, load = self.costs.state_write(stats), self.costs.state_read(stats)
        out = []
        kept = self.committed_at(group.id)
        earlier_times = list(range(max(self.available(group.id), self.floor), time))
        if kept is not None and kept < self.floor:
            earlier_times.insert(0, kept)
        for earlier in earlier_times:
            own = CostVector.at(earlier, save, self.objective) + CostVector.at(time, load, self.objective)
            if earlier < self.floor:
                own = CostVector.at(time, load, self.objective)
            out.append(
                Alternative(LOAD, f"saved at t{earlier}", ((group.id, NO_PROPS.at(earlier)),), own.with_rows(stats.rows),  # type: ignore[arg-type]
                            _any, None, None, "load-state", enforcer=True)
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
