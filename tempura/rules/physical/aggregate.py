"""Hash aggregation, split into a partial and a final aggregate as Spark runs it.

The implementation rule gives an ``Aggregate`` (or ``Distinct``) a *final* hash aggregate whose
input is a new memo group: the :class:`PartialAggregate` of the same keys over the original
input. The final aggregate requires its input clustered on the grouping keys (a single partition
for a scalar aggregate), so the exchange enforcer lands between the two steps and shuffles the
partial results — at most ``groups × partitions`` rows — rather than the input. When the input
already arrives partitioned on a subset of the keys (after a join on them, say), the partial
aggregate passes that partitioning through and no exchange is needed; Spark plans exactly that.

Aggregates with ``DISTINCT`` calls are not split: Spark expands them into several aggregation
steps, which tempura costs as one hash aggregate over input clustered on the keys.
"""

from __future__ import annotations

from tempura.algebra import Aggregate, LogicalPlan, PartialAggregate, aggregate_parts
from tempura.cost.model import Cost
from tempura.cost.operators import SparkCosts
from tempura.memo import Alternative, Group, GroupRef, Memo
from tempura.memo.properties import SINGLE_PARTITION, Distribution, Props, restrict
from tempura.rules.base import Implementation
from tempura.rules.physical.joins import passable
from tempura.stats.estimate import row_size
from tempura.stats.relation import RelStats

HASH_AGGREGATE = Implementation(
    "hash-aggregate", "Aggregate | Distinct",
    "γ(A) as a final hash aggregate over a partial one (γ_final(exchange(γ_partial(A)))), the exchange "
    "moving at most groups × partitions rows; with DISTINCT calls, one hash aggregate over A clustered on the keys.")


def partial_aggregate_stats(plan: PartialAggregate, source: RelStats, final_rows: float, costs: SparkCosts) -> RelStats:
    """The estimate of a partial aggregate over ``source`` whose final aggregate has
    ``final_rows`` groups: at most groups × partitions rows, as wide as its own columns."""
    rows = costs.partial_rows(source, final_rows) if plan.keys else float(costs.k.partitions)
    # as wide as its own columns, the keys and the partial results: what the exchange moves
    return RelStats(rows, row_size(plan.schema, source.columns), source.columns, source.fds, source.notes)


def implement_aggregate(memo: Memo, costs: SparkCosts, group: Group, plan: LogicalPlan, required: Props) -> list[Alternative]:
    keys, calls = aggregate_parts(plan)
    source_ref = plan.inputs[0]
    assert isinstance(source_ref, GroupRef)
    source = memo.group(source_ref.group)
    k = costs.k
    out = group.stats
    need = Props(Distribution.clustered(*keys)) if keys else Props(SINGLE_PARTITION)
    out_cols = set(group.schema.names)
    details = plan.details() if isinstance(plan, Aggregate) else f"keys=[{', '.join(keys)}]"

    def deliver(delivered: list[Props]) -> Props:
        return restrict(delivered[0], out_cols) if keys else Props(SINGLE_PARTITION)

    if any(c.distinct for c in calls):
        own = Cost(cpu=k.cpu * k.hash * source.stats.rows * 2, rows=out.rows)
        return [Alternative("HashAggregate", details, ((source.id, need),), own, deliver, plan, None, HASH_AGGREGATE.name)]
    partial = PartialAggregate(source.ref, keys, calls)
    partial_group = memo.group(memo.add(partial))
    own = Cost(cpu=k.cpu * k.hash * partial_group.stats.rows, rows=out.rows)
    return [
        Alternative(
            "HashAggregate", f"final {details}", ((partial_group.id, need),), own, deliver, plan, None, HASH_AGGREGATE.name
        )
    ]


def implement_partial(memo: Memo, costs: SparkCosts, group: Group, plan: PartialAggregate, required: Props) -> list[Alternative]:
    source_ref = plan.input
    assert isinstance(source_ref, GroupRef)
    source = memo.group(source_ref.group)
    k = costs.k
    cols = set(group.schema.names)
    own = Cost(cpu=k.cpu * k.hash * source.stats.rows, rows=group.stats.rows)
    return [
        Alternative(
            "HashAggregate",
            f"partial {plan.details()}",
            ((source.id, passable(required, set(plan.keys))),),
            own,
            lambda delivered: restrict(delivered[0], cols),
            None,
            None,
            HASH_AGGREGATE.name,
            passthrough=(0,),
        )
    ]
