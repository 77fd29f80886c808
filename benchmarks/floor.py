"""``tempura bench floor``: how low a scenario's last time point can go, on Spark.

Any plan that delivers the query's result at the last time point ``t_k`` must at least read the
rows that landed in ``(t_{k-1}, t_k]`` and take them through the query: whatever it kept from
earlier, those rows are new. So the query run over the last interval's rows alone — every
source's rows landed in ``(t_{k-1}, t_k]`` and nothing else; not a correct plan, a floor — costs
no more than any correct plan's last time point. A source that landed nothing in the last
interval (a dimension loaded at ``t_1``) is read whole: every plan still joins the new rows of the
others with it, and its empty interval would make a join compute nothing. (Were that source a big
one that a plan reads only part of, by a layout, the floor would no longer bound that plan: the
report names the sources read whole.) Measured beside the query over the whole
snapshot at ``t_k`` (what recompute runs then), alternating, it bounds the ratio any plan can
reach: if the floor is above a target, no layout or state reaches it.

Both run tempura's own plan: the fragments the ``batch`` cycle ran at ``t_k`` (their join order,
pinned broadcasts and hash joins, the fallback of a standing run when one does not fit), over
the whole snapshot or over the last interval; a state one of them keeps for another is a view
of its query there, not written. A plan tempura runs is held to what tempura's
join choices make of the new rows, not to Spark's own planning of them, which may be slower
(Spark broadcasts only what its 10 MiB threshold lets it): ``floor-spark``, the same rows
through ``spark.sql``, is measured in the same rounds, to show the difference.

The scenario is landed once by a simulated ``batch`` cycle; the queries then read the same
landed folders, through the runtime's own reads: a read of the last interval lists and opens
that interval's folder alone, as a fragment's read of it does (the report's ``intervals_read``).
Sources with deletions are not supported (their last interval alone is not a bag of rows).
Writes ``floor-<scenario>.json`` to the output folder.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from pyspark.sql import Row, SparkSession

    from tempura.runtime.metrics import WorkMetrics
    from tempura.runtime.sources import SourceData
    from tempura.scheduler.spec import Spec

CONTENDERS = ("snapshot", "floor", "floor-spark")
_INTERVAL = re.compile(r"/i=(\d+)/")  # a landed interval's folder in a file's path


class Floor:
    """A scenario landed once by a simulated ``batch`` cycle in ``workdir``, and its last time
    point's queries over the landed folders: ``snapshot`` (the batch plan's fragments at ``t_k``
    over the whole snapshot, what recompute runs then), ``floor`` (those fragments over the last
    interval's rows alone) and ``floor-spark`` (``spark.sql`` of the query over those rows).
    Raises :class:`~tempura.errors.TempuraError` for a scenario with deletions."""

    def __init__(self, spark: SparkSession, spec: Spec, workdir: Path) -> None:
        from tempura.errors import TempuraError
        from tempura.runtime.ingest import landing_data
        from tempura.runtime.metrics import Meter
        from tempura.scheduler.runner import Runner

        cycle = spec.cycle(0)
        assert cycle is not None
        self.spark, self.spec, self.k = spark, spec, cycle.points.k
        runner = Runner(spec, spark, workdir, "batch", simulate=True)
        deleting = sorted(n for n, feed in runner.feeds.items() if feed.deletes)
        if deleting:
            raise TempuraError(f"scenario '{spec.name}': source {', '.join(deleting)} has deletions: its last interval "
                               f"alone is not a bag of rows, so the floor is not measured")
        with runner.lock_held():
            runner.clear()
            points = runner.run_cycle(cycle)
        last = points[-1].plan
        assert last is not None
        self.fragments = last.at(self.k)  # each after the states it reads; the last one delivers
        self.quiet = sorted(n for n, entry in points[-1].manifest.get("landed", {}).items() if not entry.get("rows"))
        # Per source, its landing from interval 1 and from the last interval: a read of the last
        # interval lists and opens that interval's folder alone, as the runtime's reads do.
        self.sources: dict[int, dict[str, SourceData]] = {1: {}, self.k: {}}
        for first, by_source in self.sources.items():
            for source_name, feed in runner.feeds.items():
                folders, _history = runner.store.interval_folders(cycle.label, source_name, first, self.k)
                by_source[source_name] = landing_data(spark, feed, folders, runner.schemas[source_name], self.k)
        self.meter = Meter(spark)
        self.collected: dict[str, list[Row]] = {}  # each contender's rows, as its last measure collected them
        self.intervals: dict[str, list[int]] = {}  # the landed intervals whose files each contender's reads listed

    def measure(self, contender: str) -> WorkMetrics:
        """Run ``contender``'s query (one of :data:`CONTENDERS`) once, its rows collected: its work."""
        from tempura.algebra import Query
        from tempura.runtime import execute, run_with_fallback
        from tempura.runtime.sources import register_read
        from tempura.sql.names import quote_identifier

        def start(source_name: str) -> int:
            return 0 if contender == "snapshot" or source_name in self.quiet else self.k - 1

        def landed(source_name: str) -> SourceData:
            return self.sources[start(source_name) + 1][source_name]

        views: list[str] = []
        with self.meter.measure(f"floor {contender}") as work:
            if contender == "floor-spark":
                for source_name in self.sources[1]:
                    register_read(self.spark, landed(source_name), start(source_name), self.k, False, source_name)
                    views.append(source_name)
                self.collected[contender] = self.spark.sql(self.spec.sql).collect()
            else:
                for fragment in self.fragments:
                    for read in fragment.sources:  # the batch plan reads every source's snapshot at t_k
                        name = read.scan.table
                        register_read(self.spark, landed(name), start(name), self.k, False, read.view)
                        views.append(read.view)
                    plan = Query(fragment.plan, tuple(fragment.plan.schema.names))
                    if fragment.keeps is not None:  # a state the delivering fragment reads: a view of its query here
                        execute(plan, self.spark, fragment.hints).createOrReplaceTempView(quote_identifier(fragment.keeps))
                    elif fragment.delivers:
                        self.collected[contender], _ = run_with_fallback(plan, self.spark, fragment.hints,
                                                                         lambda frame: frame.collect())
        files = [f for view in views for f in self.spark.table(quote_identifier(view)).inputFiles()]
        self.intervals[contender] = sorted({int(found.group(1)) for f in files if (found := _INTERVAL.search(f))})
        return work


def run(spark: SparkSession, out: Path, workdir: Path, name: str, scale: float, repeat: int,
        log: Callable[[str], None] = print) -> dict[str, Any]:
    from benchmarks.rounds import round_order, settle
    from scenarios import prepared_scenario
    from tempura.runtime import compare_results
    from tempura.scheduler import load_spec

    spec = load_spec(prepared_scenario(spark, name, workdir / "scenarios", scale))
    landed = Floor(spark, spec, workdir)
    found: dict[str, dict[str, list[float]]] = {c: {"cpu": [], "wall": [], "rows": []} for c in CONTENDERS}

    def measure(contender: str) -> None:
        work = landed.measure(contender)
        found[contender]["cpu"].append(work.cpu_seconds)
        found[contender]["wall"].append(work.wall_seconds)
        found[contender]["rows"].append(float(work.rows_in))

    for contender in CONTENDERS:  # a warm-up each
        measure(contender)
        found[contender] = {"cpu": [], "wall": [], "rows": []}
    for rep in range(repeat):
        for contender in round_order(CONTENDERS, rep):
            settle(spark)
            started = time.perf_counter()
            measure(contender)
            log(f"{name} run {rep + 1}/{repeat} {contender}: cpu {found[contender]['cpu'][-1]:.3f}s, "
                f"{time.perf_counter() - started:.1f}s elapsed")
    medians = {c: {m: statistics.median(v) for m, v in found[c].items()} for c in CONTENDERS}
    snapshot, floor, spark_floor = medians["snapshot"], medians["floor"], medians["floor-spark"]
    report = {
        "scenario": name, "scale": scale, "repeat": repeat, "time_points": landed.k, "read_whole": landed.quiet,
        "medians": medians, "runs": found,
        "floor_over_snapshot_cpu": floor["cpu"] / snapshot["cpu"] if snapshot["cpu"] > 0 else None,
        "floor_over_snapshot_rows": floor["rows"] / snapshot["rows"] if snapshot["rows"] > 0 else None,
        "spark_floor_over_snapshot_cpu": spark_floor["cpu"] / snapshot["cpu"] if snapshot["cpu"] > 0 else None,
        "fragments": [f"{f.id} [{f.method}] {f.computes}" for f in landed.fragments],
        "intervals_read": landed.intervals,
        "floor_rows_as_spark": compare_results([tuple(r) for r in landed.collected["floor-spark"]],
                                               [tuple(r) for r in landed.collected["floor"]]).equal,
    }
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"floor-{name}.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    report["files"] = [str(path)]
    return report


__all__ = ["CONTENDERS", "Floor", "run"]
