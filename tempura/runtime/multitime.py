"""Running a :class:`~tempura.tvr.plan.MultiTimePlan` on Spark, time point by time point.

This is the executor that proves plans correct: at each time point it registers the source
intervals the fragments read (:mod:`tempura.runtime.sources`), runs the fragments in order as
Spark SQL with their join hints, keeps each state a later fragment reads — in memory (a local
checkpoint, which also cuts the lineage, as a saved state would) or as parquet under a scratch
folder (written to a temporary folder, then renamed) — and returns the delivered results.
:func:`reference` computes what every delivery must equal: ``spark.sql(query)`` over the
sources' snapshots as of that time point.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from tempura.algebra import Query
from tempura.errors import ExecutionError
from tempura.runtime.executor import SparkPlanning, execute, spark_error_message, spark_errors, spark_rows
from tempura.runtime.sources import SourceData, register_read, register_snapshots
from tempura.tvr.plan import Fragment, MultiTimePlan

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Row = tuple[Any, ...]


@dataclass
class PlanRun:
    """What running a plan produced: the delivered rows per time point, and the rows each
    fragment output."""

    results: dict[int, list[Row]] = field(default_factory=dict)
    fragment_rows: dict[str, int] = field(default_factory=dict)


class PlanExecutor:
    """Runs plans over ``sources``; states go to ``scratch`` (a temporary folder by default)."""

    def __init__(self, spark: SparkSession, sources: Mapping[str, SourceData], scratch: Path | None = None,
                 planning: SparkPlanning | None = None, states: str = "memory") -> None:
        if states not in ("memory", "parquet"):
            raise ValueError(f"states are kept in memory or parquet, not {states!r}")
        self.states = states
        self.spark = spark
        self.sources = dict(sources)
        self.planning = planning or SparkPlanning()
        self._own_scratch = scratch is None
        self.scratch = Path(tempfile.mkdtemp(prefix="tempura-states-")) if scratch is None else scratch

    def close(self) -> None:
        if self._own_scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self) -> PlanExecutor:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def run(self, plan: MultiTimePlan) -> PlanRun:
        """Every time point of ``plan`` in order."""
        run = PlanRun()
        run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=self.scratch))
        for time in plan.time_points.indices:
            for fragment in plan.at(time):
                frame = self._fragment(fragment)
                if fragment.keeps is not None:  # kept under the plan's column names, as readers expect
                    frame = self._keep(fragment.keeps, frame, run_dir)
                if fragment.delivers:
                    rows = [tuple(r) for r in frame.collect()]
                    run.results[time] = rows
                    run.fragment_rows[fragment.id] = len(rows)
        shutil.rmtree(run_dir, ignore_errors=True)
        return run

    def _fragment(self, fragment: Fragment) -> DataFrame:
        """The fragment's output, with the plan's column names (the user's names are the same
        columns in the same order; rows are compared by position)."""
        for read in fragment.sources:
            source = self.sources.get(read.scan.table)
            if source is None:
                raise ExecutionError(f"the plan reads source '{read.scan.table}', which has no data")
            register_read(self.spark, source, read.start, read.end, read.delta, read.view)
        query = Query(fragment.plan, tuple(fragment.plan.schema.names))
        return execute(query, self.spark, fragment.hints, self.planning)

    def _keep(self, state: str, frame: DataFrame, run_dir: Path) -> DataFrame:
        """Keep a state (in memory, or as parquet: temporary folder, then rename) and register it
        as a view."""
        if self.states == "memory":
            kept = _opaque(self.spark, frame.localCheckpoint(eager=True))
            kept.createOrReplaceTempView(state)
            return kept
        final = run_dir / state
        pending = run_dir / f".{state}.pending"
        try:
            frame.write.mode("overwrite").parquet(str(pending))
        except spark_errors() as error:
            raise ExecutionError(f"writing state {state} failed: {spark_error_message(error)}") from None
        pending.rename(final)
        kept = self.spark.read.schema(frame.schema).parquet(str(final))  # the columns written: no footer read
        kept.createOrReplaceTempView(state)
        return kept


def _opaque(spark: SparkSession, checkpointed: DataFrame) -> DataFrame:
    """The checkpointed rows as a relation that tells Spark nothing of where they came from, as a
    saved state would not. A local checkpoint keeps its origin's constraints and statistics, and
    Spark fails to rewrite those constraints when the state is read more than once under a union
    (``key not found`` in ``Union.rewriteConstraints``)."""
    from pyspark.sql import DataFrame as Frame

    rows = checkpointed._jdf.queryExecution().toRdd()
    return Frame(spark._jsparkSession.internalCreateDataFrame(rows, checkpointed._jdf.schema(), False), spark)


def reference(spark: SparkSession, sql: str, sources: Mapping[str, SourceData], version: int) -> list[Row]:
    """``spark.sql(sql)`` over the snapshot of every source as of ``t_version``, planned by Spark's
    own settings."""
    register_snapshots(spark, sources, version)
    return spark_rows(spark.sql(sql))
