"""Cost formulas of Spark's physical operators, from the statistics of their inputs and output.

In the Hive seed's spirit, adapted to Spark:

- **Scan**: reading table bytes, ``Hr · T(R) · Tsz``.
- **Exchange** (shuffle, the enforcer of hash distribution): each byte written to and read from
  local shuffle files and sent over the network, ``(Lw + Lr + NEt) · bytes``, plus hashing each
  row to its partition.
- **Broadcast exchange**: ``NEt · bytes · executors`` (the Hive seed's map join IO).
- **Sort**: ``T · log2 T · CPUc`` (the common join's sort term).
- **Broadcast hash join** (Hive's map join): build a hash table of the small side, probe it with
  the other, ``(T(build)·hash + T(probe) + T(out)) · CPUc``, after broadcasting the build side.
- **Shuffled hash join**: both sides shuffled, then the same hash work per partition.
- **Sort-merge join** (Hive's common join): both sides shuffled and sorted, then merged,
  ``(T(R1) + T(R2)) · CPUc``.
- **Nested loop join**: the smaller side broadcast, every pair compared, ``T(R1)·T(R2)·CPUc``.
- **Hash aggregate**, split into a partial aggregate before the shuffle and a final one after:
  each hashes its input rows; the shuffle carries at most ``groups × partitions`` rows.
- **Filter**: ``T(R) · CPUc`` (Hive); **Project**: one CPUc per computed value.
- **Window**: rows clustered by the partition columns (an exchange), each partition sorted,
  then one CPUc per call and row.
- **Union all**: free in Spark (a narrow concatenation), unlike Hive's job boundary, where
  Spark compiles it into the stage consuming it. It does so only when no other union and no
  shuffled join lies anywhere beneath it (across exchanges too, adaptive execution being off);
  otherwise the union is interpreted, and a compiled operator reading its rows pays for each
  one copied out of its inputs' compiled code: ``row_copy · bytes``
  (:func:`SparkCosts.union_copy`). What lies beneath is a property of the physical plan
  (:attr:`~tempura.memo.properties.Props.union`), so the search adds it.
- **Generate** (LATERAL VIEW): one CPUc per generated row, in place.
- **Opaque part** (Spark SQL tempura does not plan natively): what its text does is not seen, so
  it is priced as the work most such parts do: each input shuffled once, then every output row
  assembled (:func:`SparkCosts.opaque`).
- **State write / read** (kept intermediate results): ``Hw · bytes`` and ``Hr · bytes``.
- **Stages**: a scan or state read (its stage, or its own tasks in a stage it shares with other
  reads), an exchange or gather (the stage reading it) and a state write (the job of the
  fragment keeping it; a delivery's job is the same for every plan) each pay the fixed ``stage``
  cost on top of their per-byte and per-row work. A broadcast pays none: its job runs the build
  side's stage. A shuffled join pays for the stages of both its exchanges where Spark reads them
  in one: an overcount of one stage that leans towards broadcast joins, which small inputs take
  anyway.

Each function returns the operator's own cost, not its inputs'. Physical operators arrive with
the memo; they call these same functions, so the costs compare across planners.
"""

from __future__ import annotations

from tempura.cost.model import Cost, CostConstants
from tempura.stats.relation import RelStats, log2


class SparkCosts:
    """The formulas, bound to a set of constants."""

    def __init__(self, constants: CostConstants | None = None) -> None:
        self.k = constants or CostConstants()

    def scan(self, out: RelStats) -> Cost:
        return Cost(cpu=self.k.stage, io=self.k.dfs_read * out.bytes, rows=out.rows, stages=1)

    def filter(self, source: RelStats, out: RelStats) -> Cost:
        return Cost(cpu=self.k.cpu * source.rows, rows=out.rows)

    def project(self, source: RelStats, computed: int) -> Cost:
        """One pass over the rows (each output row is assembled), plus each computed column's
        expression per row: two stacked projections cost more than the one they collapse to."""
        return Cost(cpu=self.k.cpu * source.rows * (computed + 1), rows=source.rows)

    def shuffle(self, source: RelStats) -> Cost:
        k = self.k
        return Cost(
            cpu=k.stage + k.cpu * k.hash * source.rows,
            io=(k.local_write + k.local_read) * source.bytes,
            network=k.network * source.bytes,
            rows=source.rows,
            stages=1,
        )

    def generate(self, out: RelStats) -> Cost:
        """A LATERAL VIEW: each generated row assembled, in place."""
        return Cost(cpu=self.k.cpu * out.rows, rows=out.rows)

    def opaque(self, sources: list[RelStats], out: RelStats) -> Cost:
        """An opaque part: its inputs each shuffled once, and one pass over its output rows."""
        total = Cost(cpu=self.k.cpu * out.rows, rows=out.rows)
        for source in sources:
            total = total + self.shuffle(source)
        return total.with_rows(out.rows)

    def broadcast(self, source: RelStats) -> Cost:
        k = self.k
        # no stage of its own: the build side's stage (charged by its scan) is the broadcast job's
        return Cost(network=k.network * source.bytes * k.executors, rows=source.rows)

    def sort(self, source: RelStats) -> Cost:
        return Cost(cpu=self.k.cpu * source.rows * log2(source.rows), rows=source.rows)

    def range_sort(self, source: RelStats) -> Cost:
        """Spark's global sort: a range exchange, then a sort of each range. Before the exchange
        can write, a sampling job runs the input's stage once more to choose the ranges' bounds
        (its rows are all read again, and the stage's work done twice); priced as a stage and one
        more pass over the rows, the part of that job an operator's own cost can see."""
        k = self.k
        sampling = Cost(cpu=k.stage + k.cpu * source.rows, stages=1)
        return (self.shuffle(source) + sampling + self.sort(source)).with_rows(source.rows)

    def window(self, source: RelStats, calls: int) -> Cost:
        """Window functions over rows already clustered by partition: each partition sorted,
        then every call evaluated once per row (the exchange that clusters is the enforcer's)."""
        return Cost(cpu=self.k.cpu * source.rows * (log2(source.rows) + calls), rows=source.rows)

    def top_k(self, source: RelStats, k_rows: float) -> Cost:
        return Cost(cpu=self.k.cpu * source.rows * log2(max(k_rows, 2.0)), rows=min(source.rows, k_rows))

    def hash_join(self, build: RelStats, probe: RelStats, out: RelStats) -> Cost:
        """The join work alone (no exchange): build a hash table, probe it, emit."""
        k = self.k
        return Cost(cpu=k.cpu * (build.rows * k.hash + probe.rows + out.rows), rows=out.rows)

    def broadcast_hash_join(self, build: RelStats, probe: RelStats, out: RelStats) -> Cost:
        k = self.k
        building = Cost(cpu=k.cpu * k.hash * build.rows * (k.executors - 1))  # every executor builds
        return (self.broadcast(build) + building + self.hash_join(build, probe, out)).with_rows(out.rows)

    def shuffled_hash_join(self, build: RelStats, probe: RelStats, out: RelStats) -> Cost:
        return (self.shuffle(build) + self.shuffle(probe) + self.hash_join(build, probe, out)).with_rows(out.rows)

    def merge_join(self, left: RelStats, right: RelStats, out: RelStats) -> Cost:
        """The merge alone: both inputs already partitioned and sorted on the keys."""
        return Cost(cpu=self.k.cpu * (left.rows + right.rows + out.rows), rows=out.rows)

    def sort_merge_join(self, left: RelStats, right: RelStats, out: RelStats) -> Cost:
        return (
            self.shuffle(left) + self.shuffle(right) + self.sort(left) + self.sort(right) + self.merge_join(left, right, out)
        ).with_rows(out.rows)

    def nested_loop_join(self, left: RelStats, right: RelStats, out: RelStats) -> Cost:
        small = left if left.bytes <= right.bytes else right
        compare = Cost(cpu=self.k.cpu * left.rows * right.rows, rows=out.rows)
        return (self.broadcast(small) + compare).with_rows(compare.rows)

    def partial_rows(self, source: RelStats, groups: float) -> float:
        """Rows a partial aggregate emits: each partition holds at most every group once."""
        return min(source.rows, groups * self.k.partitions)

    def hash_aggregate(self, source: RelStats, out: RelStats, keyed: bool) -> Cost:
        """Partial aggregate, shuffle of its output (when there are keys), final aggregate."""
        k = self.k
        partial_rows = self.partial_rows(source, out.rows) if keyed else float(k.partitions)
        partial = RelStats(partial_rows, out.row_size, {})
        cost = Cost(cpu=k.cpu * k.hash * source.rows)
        cost = cost + (self.shuffle(partial) if keyed else self.gather(partial))
        return (cost + Cost(cpu=k.cpu * k.hash * partial_rows)).with_rows(out.rows)

    def change_snapshot(self, snapshot: RelStats) -> Cost:
        """What a change feed's snapshot adds to the scan of its rows: the rows consolidated (a
        shuffle by every column, a partial and a final aggregation), once in a job of its own
        that looks for deletions of absent rows (a second scan) and once for the reader, then
        expanded to one row per copy."""
        k = self.k
        consolidate = self.shuffle(snapshot) + Cost(cpu=2 * k.cpu * k.hash * snapshot.rows)
        return (self.scan(snapshot) + consolidate + consolidate + self.project(snapshot, 1)).with_rows(snapshot.rows)

    def gather(self, source: RelStats) -> Cost:
        """Moving a relation to one task (a global aggregate's final step, a global limit)."""
        return Cost(cpu=self.k.stage, network=self.k.network * source.bytes, rows=source.rows, stages=1)

    def union(self, out: RelStats) -> Cost:
        return Cost(rows=out.rows)

    def union_copy(self, out: RelStats) -> Cost:
        """What a union costs more where Spark does not compile it into its stage: each row
        copied out of its input."""
        return Cost(cpu=self.k.row_copy * out.bytes)

    def limit(self, out: RelStats) -> Cost:
        return Cost(cpu=self.k.cpu * out.rows, rows=out.rows)

    def state_write(self, state: RelStats) -> Cost:
        return Cost(cpu=self.k.stage, io=self.k.dfs_write * state.bytes, rows=state.rows, stages=1)

    def state_read(self, state: RelStats) -> Cost:
        return Cost(cpu=self.k.stage, io=self.k.dfs_read * state.bytes, rows=state.rows, stages=1)
