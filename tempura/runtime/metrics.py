"""What a piece of work cost on Spark: wall time, executor CPU time, rows and bytes.

:class:`Meter` tags every Spark job started inside ``with meter.measure(label):`` with a job
group of its own, then reads the jobs' stages from Spark's status store (the data behind the
status API and the UI, kept even when the UI is off): executor CPU time, records and bytes read
from files, bytes written, and shuffle bytes. Work at a time point is the executor CPU time of
its jobs (ARCHITECTURE.md, *Measuring*); wall time is reported beside it.

Every block names its **purpose** (one of :data:`PURPOSES`), or takes the purpose of the block
around it: the job description Spark shows (its UI, its event log) starts with it, and
:meth:`Meter.by_purpose` sums the work of each purpose, every job counted once, for the purpose
of the innermost block that started it. Jobs started outside every block (none should be) are
counted under ``untagged`` (:meth:`Meter.untagged`), so that the purposes add up to the whole.
"""

from __future__ import annotations

import itertools
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Iterable, Iterator

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_groups = itertools.count(1)

# Why a Spark job of a run runs: what a time point's work is split into.
PURPOSES = ("statistics", "arrival", "schema", "landing", "fragment", "state save", "delivery", "check", "commit")
UNTAGGED = "untagged"


@dataclass
class WorkMetrics:
    """Measured work of one fragment (or of any block of Spark jobs)."""

    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0  # executor CPU time
    run_seconds: float = 0.0  # executor run time (tasks' wall time)
    jobs: int = 0
    stages: int = 0
    rows_in: int = 0  # records read from files and other sources
    bytes_in: int = 0
    bytes_out: int = 0  # bytes written to files
    rows_written: int = 0  # records written to files
    shuffle_bytes: int = 0  # shuffle bytes written
    rows_out: int = 0  # rows the work produced (set by the caller that knows them)

    def __add__(self, other: WorkMetrics) -> WorkMetrics:
        return WorkMetrics(**{k: v + getattr(other, k) for k, v in asdict(self).items()})

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class Meter:
    """Measures blocks of Spark work by job group. Blocks nest: an inner block's jobs count for
    it and for every block around it."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self._open: list[tuple[str, list[str]]] = []  # per open block: its description, its and its inner blocks' groups
        self._purposes: list[str | None] = []  # per open block, its purpose
        self._groups: dict[str, list[str]] = {}  # per purpose, the job groups of its blocks (since reset)
        self._walls: dict[str, float] = {}  # per purpose, the wall time of its blocks, less inner blocks of others'
        self._untagged_before: set[int] = set()

    def reset(self) -> None:
        """Start counting :meth:`by_purpose` and :meth:`untagged` afresh (a new time point)."""
        self._groups.clear()
        self._walls.clear()
        self._untagged_before = set(self.spark.sparkContext.statusTracker().getJobIdsForGroup(None))

    def by_purpose(self) -> dict[str, WorkMetrics]:
        """The work of each purpose since :meth:`reset`, each job counted once; with the jobs
        no block started, under ``untagged``, when there are any."""
        out = {}
        for purpose, groups in self._groups.items():
            metrics = WorkMetrics()
            self._fill(groups, metrics)
            metrics.wall_seconds = self._walls.get(purpose, 0.0)
            out[purpose] = metrics
        untagged = self.untagged()
        if untagged.jobs:
            out[UNTAGGED] = untagged
        return out

    def untagged(self) -> WorkMetrics:
        """The work of the jobs started since :meth:`reset` outside every block."""
        tracker = self.spark.sparkContext.statusTracker()
        caught_up(self.spark)
        jobs = [j for j in tracker.getJobIdsForGroup(None) if j not in self._untagged_before]
        metrics = stage_metrics(self.spark, stages_of(self.spark, jobs))
        metrics.jobs = len(jobs)
        return metrics

    @contextmanager
    def measure(self, label: str, purpose: str | None = None) -> Iterator[WorkMetrics]:
        """Measure the Spark jobs started in the block; the yielded metrics are filled in when
        the block ends. ``purpose``: why its jobs run (else the enclosing block's)."""
        sc = self.spark.sparkContext
        group = f"tempura-{next(_groups)}"
        outer_purpose = self._purposes[-1] if self._purposes else None
        own = purpose if purpose is not None else outer_purpose
        description = f"{own}: {label}" if own else label
        sc.setJobGroup(group, description, interruptOnCancel=False)
        groups = [group]
        if own is not None:
            self._groups.setdefault(own, []).append(group)
        self._open.append((description, groups))
        self._purposes.append(own)
        metrics = WorkMetrics()
        started = time.perf_counter()
        try:
            yield metrics
        finally:
            metrics.wall_seconds = time.perf_counter() - started
            self._open.pop()
            self._purposes.pop()
            if own is not None and own != outer_purpose:  # the block starts its purpose's time
                self._walls[own] = self._walls.get(own, 0.0) + metrics.wall_seconds
                if outer_purpose is not None:
                    self._walls[outer_purpose] = self._walls.get(outer_purpose, 0.0) - metrics.wall_seconds
            if self._open:
                outer_label, outer = self._open[-1]
                outer.extend(groups)
                sc.setJobGroup(outer[0], outer_label, interruptOnCancel=False)
            else:
                sc._jsc.clearJobGroup()
            self._fill(groups, metrics)

    def include(self, group: str) -> None:
        """Count the jobs of job group ``group`` in the innermost open block (and so in every block
        around it): work Spark ran on a thread of its own for the block, such as a streaming
        query's batches, whose jobs carry the query's run id as their group."""
        if self._open:
            self._open[-1][1].append(group)
            if self._purposes[-1] is not None:
                self._groups.setdefault(self._purposes[-1], []).append(group)

    def _fill(self, groups: list[str], metrics: WorkMetrics) -> None:
        sc = self.spark.sparkContext
        caught_up(self.spark)
        tracker = sc.statusTracker()
        jobs = [job for group in groups for job in tracker.getJobIdsForGroup(group)]
        found = stage_metrics(self.spark, stages_of(self.spark, jobs))
        for name, value in found.to_json().items():
            if name not in ("wall_seconds", "rows_out"):
                setattr(metrics, name, value)
        metrics.jobs = len(jobs)


def stages_of(spark: SparkSession, jobs: Iterable[int]) -> set[int]:
    """The stages of Spark jobs ``jobs`` (those the status tracker still holds)."""
    tracker = spark.sparkContext.statusTracker()
    out: set[int] = set()
    for job in jobs:
        info = tracker.getJobInfo(job)
        if info is not None:
            out.update(info.stageIds)
    return out


def caught_up(spark: SparkSession) -> None:
    """Wait (up to 10 s) until Spark's listener bus has delivered every event posted so far: the
    status store is filled from it, asynchronously."""
    try:
        spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(10_000)
    except Exception:
        pass


def stage_metrics(spark: SparkSession, stage_ids: Iterable[int]) -> WorkMetrics:
    """The summed metrics of stages (skipped attempts left out) from Spark's status store."""
    store = spark.sparkContext._jsc.sc().statusStore()

    def default(n: int) -> Any:
        return getattr(store, f"stageData$default${n}")()

    metrics = WorkMetrics()
    for stage in sorted(stage_ids):
        try:
            attempts = store.stageData(stage, default(2), default(3), default(4), default(5))
        except Exception:  # a stage the store no longer holds (past spark.ui.retainedStages)
            continue
        found = attempts.iterator()
        while found.hasNext():
            data = found.next()
            if str(data.status().toString()) == "SKIPPED":
                continue
            metrics.stages += 1
            metrics.cpu_seconds += data.executorCpuTime() / 1e9
            metrics.run_seconds += data.executorRunTime() / 1e3
            metrics.rows_in += int(data.inputRecords())
            metrics.bytes_in += int(data.inputBytes())
            metrics.bytes_out += int(data.outputBytes())
            metrics.rows_written += int(data.outputRecords())
            metrics.shuffle_bytes += int(data.shuffleWriteBytes())
    return metrics
