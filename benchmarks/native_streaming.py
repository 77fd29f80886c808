"""The ``spark-streaming`` contender: a standing query as a native Spark Structured Streaming job,
triggered at each time point of the spec's first cycle.

:class:`NativeStreaming` owns the contender's folder (``workdir``):

- ``input/<source>/i=NNN/``: at time point ``t_i``, each source's rows with
  ``t_{i-1} < arrival <= t_i`` (the interval :func:`tempura.runtime.ingest.interval_rows` lands
  for tempura), written as parquet. A source arriving ``by: file`` is a static table: all its
  rows are written at ``t_1`` and it is read as a static DataFrame, not a stream;
- ``checkpoint/``: the checkpoint of the one streaming query, kept across time points, so each
  trigger reads only the files added since the last one;
- ``results/tNNN/``: what the sink wrote at ``t_i``. In complete output mode a micro-batch is the
  whole result, and the result at ``t_i`` is the latest folder written; in append mode each
  micro-batch holds the rows the result gains, and the result at ``t_i`` is the union of the
  folders written up to ``t_i``.

At each time point the query is ``spark.sql(spec.sql)`` over temporary views of the sources
(streams over ``input/<source>``, static DataFrames for static tables), started with
``trigger(availableNow=True)`` and the checkpoint, and awaited. The output mode is complete when
the analysed plan aggregates a stream, append otherwise; if Spark refuses that mode the other is
tried. Update mode is not: its micro-batches hold changed groups, which a sink can merge only by
the grouping keys, and the result need not carry them.

Spark says which queries it cannot run: :meth:`NativeStreaming.unsupported` starts the query on
empty inputs and reports the refusal (from ``UnsupportedOperationChecker``: stream-stream outer
joins without watermarks, several streaming aggregations, sorting outside complete mode, ...).
Sources with change data (deletions) and periodic range queries (whose leaving rows are
deletions) cannot be expressed by an appending file stream and are reported without asking Spark.

Measuring. The streaming query runs its micro-batches on a thread of its own, and the sink's
writes on the Python callback thread, so the job group of the calling thread does not reach
them. The work of a time point is instead every Spark job the application started between the
query's start and the end of ``awaitTermination`` (new job ids in Spark's status store, read
after the listener bus has caught up): their stages' executor CPU time, run time, records and
bytes, as :class:`~tempura.runtime.metrics.Meter` reads them. Nothing else may run on the Spark
application meanwhile. Wall time is the query's, from ``start()`` to the end of
``awaitTermination`` (planning and the driver's bookkeeping included). Writing ``input/`` is
measured apart (``landing``), as tempura's landing is apart from its fragments' work.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from tempura.errors import TempuraError
from tempura.runtime.durable import write_frame
from tempura.runtime.executor import spark_error_message
from tempura.runtime.files import Files, uri
from tempura.runtime.ingest import FILE, Feed, interval_rows, read_source
from tempura.runtime.metrics import Meter, WorkMetrics, caught_up, stage_metrics
from tempura.scheduler.runner import feeds
from tempura.scheduler.spec import Cycle, Spec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery
    from pyspark.sql.types import StructType

NAME = "spark-streaming"
COMPLETE = "complete"
APPEND = "append"
_AGGREGATES = {"Aggregate", "Distinct"}
_ERROR_CLASS = re.compile(r"^\[[A-Z0-9_.]+\]\s*")
_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+\.?$")


class NativeStreamingError(TempuraError):
    """The query cannot run as a native Spark stream, or its stream failed."""


@dataclass
class NativePoint:
    """What the native stream did at time point ``t_index``, and where its result is."""

    index: int
    time: Any  # t_index
    output_mode: str
    folders: tuple[str, ...]  # the result at t_index: the union of these parquet folders
    schema: StructType
    wall_seconds: float
    cpu_seconds: float  # executor CPU time of the query's jobs
    query: WorkMetrics  # the streaming query's jobs: micro-batches and sink writes
    landing: WorkMetrics  # writing the interval's rows into input/
    batches: int = 0  # micro-batches that ran
    rows_in: int = 0  # rows the micro-batches read
    landed: dict[str, int] = field(default_factory=dict)  # rows written to input/, per source

    def read(self, spark: SparkSession) -> DataFrame:
        """The query's result at ``t_index`` (its rows in no particular order: an ORDER BY is not
        kept through the parquet folders)."""
        if not self.folders:
            return spark.createDataFrame([], self.schema)
        return spark.read.schema(self.schema).parquet(*self.folders)

    def to_json(self) -> dict[str, Any]:
        return {"contender": NAME, "index": self.index, "time": str(self.time), "output_mode": self.output_mode,
                "folders": list(self.folders), "wall_seconds": self.wall_seconds, "cpu_seconds": self.cpu_seconds,
                "query": self.query.to_json(), "landing": self.landing.to_json(), "batches": self.batches,
                "rows_in": self.rows_in, "landed": dict(self.landed)}


def short_message(error: Exception) -> str:
    """A Spark error as one line: its first line, without the error class, SQLSTATE and the
    plan Spark appends after ``;``."""
    text = _ERROR_CLASS.sub("", spark_error_message(error))
    return _SQLSTATE.sub("", text).rstrip(";").strip()


class NativeStreaming:
    """The standing query ``spec`` as one Structured Streaming query over ``workdir``, run one
    time point of cycle 0 at a time (``run_point(1)``, ``run_point(2)``, ...)."""

    def __init__(self, spark: SparkSession, spec: Spec, workdir: Path) -> None:
        self.spec = spec
        self.workdir = Path(workdir)
        cycle = spec.cycle(0)
        assert cycle is not None  # every schedule has a first cycle
        self.cycle: Cycle = cycle
        self.feeds: dict[str, Feed] = feeds(spec)
        self.session = _own_session(spark)  # its temporary views do not replace the caller's
        self.files = Files(spark)
        self.meter = Meter(spark)
        self.sql = _spark_sql(spec)
        self._schemas: dict[str, StructType] = {}
        self._probed: tuple[str | None, str | None] | None = None  # (output mode, refusal)
        self._done = 0
        self._latest: tuple[str, ...] = ()

    @property
    def k(self) -> int:
        """The number of time points of the cycle."""
        return len(self.cycle.time_points.values)

    # -- what Spark accepts ------------------------------------------------------------------

    def unsupported(self) -> str | None:
        """Why the query cannot run as a native Spark stream (one line), or ``None``."""
        return self._probe()[1]

    def output_mode(self) -> str:
        """The output mode the query runs in; raises :class:`NativeStreamingError` if Spark
        refuses every mode."""
        mode, refusal = self._probe()
        if mode is None:
            raise NativeStreamingError(f"{self.spec.name}: not run as a native Spark stream: {refusal}")
        return mode

    def _probe(self) -> tuple[str | None, str | None]:
        if self._probed is None:
            refusal = self._inexpressible()
            self._probed = (None, refusal) if refusal is not None else self._try_modes()
        return self._probed

    def _inexpressible(self) -> str | None:
        for name, feed in self.feeds.items():
            if feed.op_column is not None:
                return (f"source '{name}' carries change data (op column '{feed.op_column}'): its deletions cannot "
                        f"be expressed by a native stream, whose sources only append rows")
        if self.spec.window is not None:
            return ("a periodic range query's rows leave its window (deletions): a native stream over the sources "
                    "only appends rows")
        return None

    def _try_modes(self) -> tuple[str | None, str | None]:
        """Start the query on empty inputs in its natural output mode, then in the other one."""
        from pyspark.errors import PySparkException

        probe = self.workdir / "probe"
        self.files.delete(probe)
        for name in self.feeds:
            self.files.mkdirs(probe / "input" / name)
        refusals = []
        try:
            try:
                frame = self._query(probe / "input")
            except PySparkException as error:
                return None, f"Spark refuses the query: {short_message(error)}"
            modes = [COMPLETE, APPEND] if _aggregates_a_stream(frame) else [APPEND, COMPLETE]
            for mode in modes:
                try:
                    self._start(frame, mode, probe / f"checkpoint-{mode}", lambda _batch, _id: None).awaitTermination()
                except PySparkException as error:
                    refusals.append(f"{mode} mode: {short_message(error)}")
                    continue
                return mode, None
        finally:
            self.files.delete(probe)
        return None, "Spark refuses the query in " + "; in ".join(refusals)

    # -- one time point ----------------------------------------------------------------------

    def run(self) -> list[NativePoint]:
        """Every time point of the cycle, in order."""
        return [self.run_point(i) for i in range(self._done + 1, self.k + 1)]

    def run_point(self, index: int) -> NativePoint:
        """Add interval ``index``'s rows to the inputs, trigger the stream once (availableNow)
        and wait for it; time points run in order, ``1`` starting afresh."""
        from pyspark.errors import PySparkException

        if index != self._done + 1 or not 1 <= index <= self.k:
            expected = self._done + 1 if self._done < self.k else None
            raise NativeStreamingError(
                f"{self.spec.name}: t{index} cannot run now (the next time point is "
                f"{f't{expected}' if expected else 'none: the cycle is done'})")
        mode = self.output_mode()
        if index == 1:
            for folder in ("input", "checkpoint", "results"):
                self.files.delete(self.workdir / folder)
            self._latest = ()
        landed, landing = self._land(index)
        frame = self._query(self.workdir / "input")
        target = uri(self.workdir / "results" / f"t{index:03d}")
        written: list[int] = []

        def sink(batch: DataFrame, batch_id: int) -> None:
            batch.write.mode("overwrite" if mode == COMPLETE else "append").parquet(target)
            written.append(batch_id)

        before = self._newest_job()
        started = time.perf_counter()
        query = self._start(frame, mode, self.workdir / "checkpoint", sink)
        try:
            query.awaitTermination()
        except PySparkException as error:
            raise NativeStreamingError(f"{self.spec.name}: the native stream failed at t{index}: {short_message(error)}") from None
        wall = time.perf_counter() - started
        work = self._work_since(before)
        work.wall_seconds = wall
        if written:
            self._latest = (target,) if mode == COMPLETE else self._latest + (target,)
        self._done = index
        return NativePoint(
            index, self.cycle.time_points.values[index - 1], mode, self._latest, frame.schema, wall, work.cpu_seconds,
            work, landing, batches=len(written), rows_in=sum(int(p.get("numInputRows", 0)) for p in query.recentProgress),
            landed=landed,
        )

    def _land(self, index: int) -> tuple[dict[str, int], WorkMetrics]:
        """Write interval ``index`` of each source to ``input/<source>/i=NNN/``."""
        landed: dict[str, int] = {}
        total = WorkMetrics()
        for name, feed in self.feeds.items():
            if feed.arrival_column is None and index > 1:
                continue  # a static table: all its rows were written at t_1
            raw = read_source(self.session, feed)
            if feed.arrival_column is None:
                rows = raw
            else:
                rows, _late = interval_rows(feed, raw, set(), self.cycle.origin, self.cycle.time_points.values, index,
                                            self.spec.model.late, None)
            columns = [f"`{f.name}`" for f in self._schema(name).fields]
            with self.meter.measure(f"{NAME}: land {name} t{index}") as work:
                write_frame(rows.selectExpr(*columns), self.workdir / "input" / name / f"i={index:03d}")
            landed[name] = work.rows_written
            total = total + work
        return landed, total

    # -- the streaming query -----------------------------------------------------------------

    def _schema(self, name: str) -> StructType:
        """The source's columns as Spark reads its files (declared types applied)."""
        if name not in self._schemas:
            from pyspark.sql.types import StructType

            schema = read_source(self.session, self.feeds[name]).schema
            self._schemas[name] = StructType([f for f in schema.fields if f.name != FILE])
        return self._schemas[name]

    def _query(self, inputs: Path) -> DataFrame:
        """``spec.sql`` over views of the sources' folders under ``inputs``: streams, and static
        DataFrames for static tables."""
        for name, feed in self.feeds.items():
            folder = uri(inputs / name)
            schema = self._schema(name)
            if feed.arrival_column is None:
                frame = self.session.read.schema(schema).option("recursiveFileLookup", "true").parquet(folder)
            else:
                frame = self.session.readStream.schema(schema).option("recursiveFileLookup", "true").parquet(folder)
            frame.createOrReplaceTempView(name)
        return self.session.sql(self.sql)

    def _start(self, frame: DataFrame, mode: str, checkpoint: Path,
               sink: Callable[[DataFrame, int], None]) -> StreamingQuery:
        return (
            frame.writeStream.queryName(f"native_{self.spec.name}_{checkpoint.name}".replace("-", "_"))
            .outputMode(mode).trigger(availableNow=True).option("checkpointLocation", uri(checkpoint))
            .foreachBatch(sink).start()
        )

    # -- measuring ---------------------------------------------------------------------------

    def _jobs(self) -> Iterator[Any]:
        """Spark's jobs, newest first (the status store lists them so), once the listener bus
        has delivered every event posted so far."""
        caught_up(self.session)
        found = self.session.sparkContext._jsc.sc().statusStore().jobsList(None).iterator()
        while found.hasNext():
            yield found.next()

    def _newest_job(self) -> int:
        return next((int(job.jobId()) for job in self._jobs()), -1)

    def _work_since(self, newest: int) -> WorkMetrics:
        """The work of the jobs started after job ``newest``."""
        stage_ids: set[int] = set()
        jobs = 0
        for job in self._jobs():
            if int(job.jobId()) <= newest:
                break
            jobs += 1
            stages = job.stageIds().iterator()
            while stages.hasNext():
                stage_ids.add(int(stages.next()))
        metrics = stage_metrics(self.session, stage_ids)
        metrics.jobs = jobs
        return metrics


def _aggregates_a_stream(frame: DataFrame) -> bool:
    """Whether the analysed plan has an aggregation over a stream (its natural output mode is
    then complete)."""
    pending = [frame._jdf.queryExecution().analyzed()]
    while pending:
        node = pending.pop()
        if str(node.nodeName()) in _AGGREGATES and bool(node.isStreaming()):
            return True
        children = node.children().iterator()
        while children.hasNext():
            pending.append(children.next())
    return False


def _own_session(spark: SparkSession) -> SparkSession:
    """A session sharing ``spark``'s context and SQL settings, with temporary views of its own."""
    session = spark.newSession()
    for key, value in spark.conf.getAll.items():
        if key.startswith("spark.sql.") and spark.conf.isModifiable(key):
            session.conf.set(key, value)
    return session


def _spark_sql(spec: Spec) -> str:
    """The query in Spark's dialect."""
    if spec.dialect == "spark":
        return spec.sql
    import sqlglot

    return sqlglot.transpile(spec.sql, read=spec.dialect, write="spark")[0]


__all__ = ["NAME", "NativePoint", "NativeStreaming", "NativeStreamingError", "short_message"]
