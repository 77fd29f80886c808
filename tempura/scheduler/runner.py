"""Running a standing query on its schedule: simulated, by the wall clock, or as a daemon.

:class:`Runner` takes a spec through its cycles' time points. For each time point ``t_i`` not yet
committed it:

1. deletes whatever an earlier attempt at ``t_i`` left (:meth:`JobStore.discard_uncommitted`);
2. plans the rest of the cycle from ``t_i`` on (:class:`~tempura.optimizer.Resume`), reading
   the states committed time points saved, with the arrival model and statistics updated from
   what those time points measured (:mod:`tempura.scheduler.reoptimize`), and the cost of a
   stage fitted to the CPU time the history's fragments measured, unless the spec sets it
   (:mod:`tempura.scheduler.calibration`);
3. lands every source's interval (:mod:`tempura.runtime.ingest`: late rows, schema drift), with
   the columns the job reads (:meth:`Runner.kept_columns`),
   checks the declared keys on it under ``integrity: enforced`` (:mod:`tempura.runtime.keys`),
   and plans the time point again when a landing proved a read empty or broke a key;
4. runs the plan's fragments at ``t_i`` (:class:`~tempura.runtime.durable.DurableExecutor`);
5. commits: the manifest (states alive, rows landed, files seen, metrics) is written last;
6. drops the states no later fragment reads, records the run in the history, and — the
   re-optimisation hook — re-plans the remaining time points with the new actuals, records
   whether the plan changed and why, and calls the spec's ``on_run`` hook with the run summary.

A time point already committed is skipped: running again is a no-op, so ``tempura run`` is
idempotent and cron-friendly. ``simulate`` runs a whole cycle now, replaying the data's
arrival: each time point lands exactly its interval's rows, for every method.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
import hashlib
import importlib
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Sequence

from tempura.catalog import table_files
from tempura.errors import CatalogError, InternalError, TempuraError
from tempura.optimizer import CommittedState, Resume
from tempura.runtime.durable import (DurableExecutor, OutputTarget, SavedState, TimePointRun, check_visible,
                                     write_frame)
from tempura.runtime.files import Files, uri
from tempura.runtime.changes import check_ops, settle_deletions
from tempura.runtime.ingest import (FILE, OP, TP, TYPED_FORMATS, Feed, Landed, check_schema, file_schemas, interval_rows,
                                    FileArrivals, instant, landed_rows, landed_schema, local_arrivals, malformed_rows,
                                    null_arrival_rows, read_landed, read_source)
from tempura.runtime.faults import reached
from tempura.runtime.sources import _time_literal
from tempura.runtime.keys import violations
from tempura.runtime.layout import PrunedRead, Pruning, probe_buckets, pruned_folders, write_laid_out
from tempura.runtime.lock import JobLock, LockHeld
from tempura.runtime.metrics import Meter, WorkMetrics
from tempura.runtime.storage import Location, as_location
from tempura.runtime.store import JobStore
from tempura.scheduler.history import history_at
from tempura.scheduler.plan_cache import PlanCache
from tempura.scheduler.events import EventLog
from tempura.scheduler.planning import (Forecast, Prepared, expected_empty, expected_interval, for_cycle, job_folder,
                                        output_mode, plan_spec, prepare_job)
from tempura.stats.footers import KnownCounts, footer_counts
from tempura.stats.sketch import ObservedSketch, Sample, TableSketch, collect_sketch
from tempura.stats.store import StatsCatalog, StatsStore, file_state
from tempura.scheduler.calibration import damped, for_job
from tempura.scheduler.reoptimize import NOTICEABLE
from tempura.scheduler.spec import Cycle, Spec, cycle_index_at
from tempura.sql.names import quote_identifier
from tempura.tvr.bounds import ArrivalBounds
from tempura.tvr.layout import Layout, interval_slices
from tempura.tvr.time import TimeValue, cycle_words, time_point_words
from tempura.tvr.plan import Fragment, MultiTimePlan

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from tempura.cost.model import CostConstants
    from tempura.scheduler.freshness import FreshnessChoice
    from tempura.stats.model import TableStats


NEW_FILE = "__new_file"  # landing: whether a row's file is first found now (computed once a row)
SKETCHED = "__sketched"  # landing: whether a row is one the source's statistics take in
OUTSIDE = "outside"  # the footers show a row outside the interval (Runner._rows_inside)
SKETCH_REPORTED = 5.0  # seconds: at most this long after its job, Spark's listener reports an observation


@dataclass
class DeferredSketch:
    """The sketch of a linked interval's new files, observed on the plan's first read of it."""

    index: int  # the interval
    paths: list[str]  # its files
    columns: StructType  # read with these
    rows: int  # the rows their footers hold
    observed: ObservedSketch


class RunError(TempuraError):
    """A time point could not run; nothing of it was committed."""


@dataclass
class PointResult:
    """One time point as the runner left it."""

    cycle: str
    index: int
    time: Any
    skipped: bool = False  # committed already
    run: TimePointRun | None = None
    manifest: dict[str, Any] = field(default_factory=dict)
    plan: MultiTimePlan | None = None
    replanned: bool = False
    plan_changed: bool = False
    reason: str = ""

    @property
    def delivered(self) -> str | None:
        found = self.manifest.get("delivered")
        return str(found) if found is not None else None


def feeds(spec: Spec) -> dict[str, Feed]:
    """How each of the sources the query reads reaches the job (a source it does not read is
    not landed: :attr:`~tempura.scheduler.spec.Spec.unread_sources`)."""
    out = {}
    for name, source in spec.read_sources.items():
        changes = source.changes
        out[name] = Feed(
            name, spec.location(name), source.format, dict(source.options),
            {c: t for c, t in source.declared_schema.items()} if source.declared_schema else None,
            source.arrival.column, changes.op_column if changes else None,
            tuple(changes.delete_values) if changes else ("D",), spec.window,
            insert_values=tuple(changes.insert_values) if changes else ("I",),
            deletion_policy=changes.deletes if changes else "strict", table=source.table,
            schema_policy=source.schema_policy,
        )
    return out


def with_table_files(spark: SparkSession, spec: Spec, found: Mapping[str, Feed]) -> dict[str, Feed]:
    """``found`` with each catalog table's location, file format and partition columns, as Spark's
    catalog gives them now (a missing table is one line naming the spec's key)."""
    out = dict(found)
    for name, feed in found.items():
        if feed.table is not None:
            try:
                files = table_files(spark, feed.table, f"{spec.path}: sources.{name}.table")
            except CatalogError as error:
                raise RunError(f"{error} (nothing was run)") from None
            out[name] = dataclasses.replace(feed, location=files.location, format=files.format or "",
                                            partition_columns=files.partition_columns)
    return out


def plan_id(plan: MultiTimePlan) -> str:
    return hashlib.sha1(json.dumps(plan.to_json(), sort_keys=True, default=str).encode()).hexdigest()[:12]


def plan_shape(plan: MultiTimePlan, after: int) -> list[tuple[Any, ...]]:
    """What a plan does from ``after + 1`` on, comparable between plannings."""
    return sorted((f.time, f.method, f.form, f.output, f.sql()) for f in plan.fragments if f.time > after)


class Runner:
    """Runs one standing query's time points durably on Spark."""

    def __init__(self, spec: Spec, spark: SparkSession, workdir: str | Location = ".tempura", method: str = "auto",
                 simulate: bool = False, progress: Callable[[str, int, int], None] | None = None,
                 hook: Callable[[dict[str, Any]], None] | None = None, wait: float = 0.0, verbose: bool = False) -> None:
        self.spec = spec
        self.spark = spark
        self.workdir = as_location(workdir)
        self.method = method
        self.simulate = simulate
        self.files = Files(spark)
        self.meter = Meter(spark)
        self.store = JobStore(job_folder(workdir, spec, method if simulate else None), self.files)
        self.history = history_at(self.store.history_path, storage=self.store.storage)
        self.lock = JobLock(self.store.root, storage=self.store.storage)
        self.plan_cache = PlanCache(self.store.storage, self.store.root / "plans")  # plannings to reuse
        self.wait = wait  # how long to wait for another run's lock on the job folder
        self.feeds = feeds(spec)
        self.progress = progress
        self.verbose = verbose  # progress names fragments by the memo's forms (SS[2] of G6), not in words
        self.hook = hook if hook is not None else _load_hook(spec)
        self.events = EventLog(self.history, method, _load_hook(spec, "on_failure"))
        self._prepared: Prepared | None = None
        self.freshness: FreshnessChoice | None = None  # a target_lag schedule's chosen time points
        self.chose_points = False  # whether this runner made that choice (its job's first run)
        self._plans: dict[tuple[str, int], MultiTimePlan] = {}
        self.first_plans: dict[tuple[str, int], MultiTimePlan] = {}  # each time point's plan before its landing
        self._schemas: dict[str, StructType] = {}  # each source's landed columns
        self._source_schemas: dict[str, StructType] = {}  # each source's own columns, as its last landing read them
        self._reading: dict[str, StructType] = {}  # under schema: add_columns, the columns a source's files are read with
        self._forecasts: dict[tuple[str, int], dict[str, float]] = {}  # per time point, the rows forecast per source
        self._observed: dict[str, ObservedSketch] = {}  # per source, the sketch its landing observes
        self._deferred: dict[str, DeferredSketch] = {}  # per source, the sketch a fragment's read observes
        self._sketch_later = False  # whether the time point under way leaves its sketches to the next run
        self._pending: dict[str, dict[str, Any]] = {}  # per source, the files whose sketch the next run takes
        self._planning_seconds = 0.0  # the wall time the time point under way spent planning
        self._planning_cycle: Cycle | None = None  # the cycle of the time point under way
        self._first_counts: dict[str, dict[str, Any]] = {}  # per source, a first landing's rows per interval
        self.skipped = 0  # cycles left out of the last due() for max_catch_up
        self._considered: dict[str, list[dict[str, Any]]] = {}  # the cycles the last due() looked at
        self.output = None
        if spec.model.output is not None and not simulate:
            out = spec.model.output
            location = spec.output_location()
            self.output = OutputTarget(uri(location) if location is not None else "", out.format, out.mode, out.table,
                                       spec.name)

    # -- schedule --------------------------------------------------------------------------

    def cycles(self) -> Iterator[Cycle]:
        n = 0
        while True:
            cycle = self.spec.cycle(n)
            if cycle is None:
                return
            yield cycle
            n += 1

    def due(self, now: TimeValue, since: TimeValue | None = None) -> list[tuple[Cycle, int]]:
        """The uncommitted time points at or before ``now``, in order: those of the cycle under
        way at ``now`` and of at most ``max_catch_up`` cycles before it (the schedule may start
        years ago), or of every cycle from the one under way at ``since`` on. The cycles left
        out for the cap are counted in :attr:`skipped`. Time points that are numbers (date keys,
        epochs) have no clock: ``now`` is then a number too, as the caller says."""
        schedule = self.spec.model.schedule
        first_value = self.spec.time_points().values[0]
        numbers = not isinstance(first_value, dt.date)
        if numbers != isinstance(now, (int, float)) or (since is not None and numbers != isinstance(since, (int, float))):
            if numbers:
                raise RunError(f"{self.spec.path}: time points are numbers, which no clock tells: name the time "
                               f"point to run up to (--now {first_value}), or run a whole cycle (--simulate)")
            raise RunError(f"{self.spec.path}: time points are dates or timestamps: --now and --from take an ISO timestamp")
        last = cycle_index_at(schedule, now)
        if last is None:
            return []
        if since is not None:
            first = cycle_index_at(schedule, since) or 0
        else:
            first = max(0, last - self.spec.max_catch_up)
        self.skipped = self._incomplete_before(first)
        self._considered = {}
        out: list[tuple[Cycle, int]] = []
        for n in range(first, last + 1):
            cycle = self.spec.cycle(n)
            if cycle is None:
                break
            values = cycle.time_points.values
            if isinstance(values[0], dt.datetime) or numbers:
                passed = [i for i, v in enumerate(values, 1) if v <= now]  # type: ignore[operator]
            else:
                assert isinstance(now, dt.datetime)
                passed = [i for i, v in enumerate(values, 1) if v <= now.date()]  # type: ignore[operator]
            steps = ([1] if cycle.carried and passed else []) + [i + cycle.offset for i in passed]
            chain = self.store.chain(cycle.label)
            self._considered[cycle.label] = chain
            out.extend((cycle, i) for i in steps if i > len(chain))
        return out

    def _incomplete_before(self, first: int) -> int:
        """How many cycles before cycle ``first`` are not wholly committed (never started
        included): what a run capped by ``max_catch_up`` leaves out."""
        if first == 0:
            return 0
        cycle = self.spec.cycle(first)
        assert cycle is not None
        labels = self.store.cycles()
        complete = sum(1 for label in labels if label < cycle.label
                       and len(self.store.manifest_indices(label)) >= cycle.last)
        return max(0, first - complete)

    def run_due(self, now: TimeValue | None = None, since: TimeValue | None = None,
                on_point: Callable[[PointResult], None] | None = None,
                stop: Callable[[], bool] | None = None) -> list[PointResult]:
        """Run every time point due by ``now`` (the wall clock; of a schedule of numbers, a
        number that must be given) and not committed, then return (``since``: catch up on every
        cycle from the one under way then, past ``max_catch_up``). ``on_point`` hears of each
        time point as it is taken; ``stop()``, asked before each, ends the run early."""
        results: list[PointResult] = []
        current: tuple[Cycle, int] | None = None  # the time point in flight
        try:
            with self.lock_held():
                clock = now if now is not None else dt.datetime.now()
                self.settle_points()
                due = self.due(clock, since)
                for label, chain in self._considered.items():  # a run that died after a commit left its clean-up
                    if chain and self.files.exists(self.store.pending(label)):
                        self._clean_after(label, len(chain), chain[-1])
                for cycle, index in due:
                    if stop is not None and stop():
                        break
                    current = (cycle, index)
                    results.append(self.run_point(cycle, index))
                    current = None
                    self.events.committed(results[-1])
                    if on_point is not None:
                        on_point(results[-1])
                if not due:
                    self.events.nothing_due(self._next_time(clock) if isinstance(clock, dt.datetime) else None)
            return results
        except LockHeld as error:
            self.events.refused(error)
            raise
        except (TempuraError, InternalError) as error:
            if current is None:
                self.events.failed(error, isinstance(error, InternalError))
            else:
                self.events.failed(error, isinstance(error, InternalError), current[0].label, current[1],
                                   current[0].points.value(current[1]))
            raise

    def repair(self, label: str | None = None, first: int | None = None) -> list[PointResult]:
        """Rebuild damaged cycles from the sources, from their last intact time point (or from
        ``first``, if the time point before it is intact): the commits from there on are taken
        back (their manifests moved aside, never deleted) and the time points run again."""
        from tempura.scheduler.check import last_intact

        results: list[PointResult] = []
        with self.lock_held():
            self.settle_points()
            labels = [label] if label is not None else self.store.cycles()
            for name in labels:
                indices = self.store.manifest_indices(name)
                if not indices:
                    if label is not None:
                        raise RunError(f"{self.store.root}: the {cycle_words(name)} has no committed time point")
                    continue
                intact = last_intact(self.store, name)
                start = first if first is not None else intact + 1
                if start - 1 > intact:
                    raise RunError(f"{cycle_words(name)}: t{start - 1} is not intact, so repair cannot start at t{start}: "
                                   f"the last intact time point is t{intact} (repair --from t{intact + 1})")
                if start > max(indices) and intact == max(indices):
                    continue  # nothing damaged
                cycle = self._cycle_labelled(name)
                self.store.uncommit(name, start)
                self.history.forget(name, start)
                self._plans = {key: plan for key, plan in self._plans.items() if key[0] != name}
                results.extend(self.run_point(cycle, i) for i in range(start, max(indices) + 1))
        return results

    def _cycle_labelled(self, label: str) -> Cycle:
        for cycle in self.cycles():
            if cycle.label == label:
                return cycle
            if cycle.label > label:
                break
        raise RunError(f"{self.store.root}: cycle {label} is not a cycle of {self.spec.path}'s schedule")

    def run_cycle(self, cycle: Cycle | None = None, until: int | None = None) -> list[PointResult]:
        """Run a cycle's time points (all, or up to ``t_until``) now: the simulation (a carried
        cycle's carry first)."""
        cycle = cycle or self.spec.cycle(0)
        assert cycle is not None
        last = until + cycle.offset if until else cycle.last
        with self.lock_held():
            return [self.run_point(cycle, i) for i in range(1, last + 1)]

    def clear(self) -> None:
        """Delete everything the job folder holds but its lock (a simulation starts afresh);
        call it holding the lock."""
        assert self.lock.held, "clear() deletes a job folder: hold its lock"
        for name in self.store.storage.children(self.store.root):
            if name != self.lock.path.name and not name.startswith(self.lock.path.name + "."):
                self.files.delete(self.store.root / name)
        self._plans.clear()
        self.freshness = None  # chosen again, over the sources as they are

    @contextlib.contextmanager
    def lock_held(self) -> Iterator[None]:
        """Hold the job folder's lock (one writer at a time; :mod:`tempura.runtime.lock`)."""
        self.lock.acquire(self.wait)
        try:
            yield
        finally:
            self.lock.release()

    def daemon(self, sleep: Callable[[float], None] = time.sleep, now: Callable[[], dt.datetime] = dt.datetime.now,
               stop: Callable[[], bool] = lambda: False, on_point: Callable[[PointResult], None] = lambda _r: None,
               on_failure: Callable[[TempuraError], None] | None = None, retry: float = 300.0) -> None:
        """Run due time points, wait for the next one, and so on, until the schedule ends or
        ``stop()``, which is asked between time points: one in flight is finished. ``on_point``
        hears of each time point as it is taken. With ``on_failure``, a time point that fails
        is reported there and tried again after ``retry`` seconds (or at the next time point, if
        that is sooner); without it, the failure ends the daemon."""
        while not stop():
            try:
                self.run_due(now(), on_point=on_point, stop=stop)  # the lock is held while points run, not in sleep
            except TempuraError as error:
                if on_failure is None:
                    raise
                on_failure(error)
                upcoming = self._next_time(now())
                sleep(retry if upcoming is None else min(retry, max(1.0, (upcoming - now()).total_seconds())))
                continue
            upcoming = self._next_time(now())
            if upcoming is None or stop():
                return
            sleep(max(1.0, (upcoming - now()).total_seconds()))

    def _next_time(self, now: dt.datetime) -> dt.datetime | None:
        for cycle in self.cycles():
            for value in cycle.points.values[cycle.offset:cycle.last]:
                moment = value if isinstance(value, dt.datetime) else dt.datetime.combine(value, dt.time())  # type: ignore[arg-type]
                if moment > now:
                    return moment
        return None

    # -- one time point ----------------------------------------------------------------------

    def run_point(self, cycle: Cycle, index: int) -> PointResult:
        with self.lock_held():
            return self._run_point(cycle, index)

    def _run_point(self, cycle: Cycle, index: int) -> PointResult:
        label = cycle.label
        value = cycle.points.value(index)
        chain = self.store.chain(label)  # Damage: a gap, or a manifest truncated or altered
        if index <= len(chain):
            committed = chain[index - 1]
            if index == len(chain):  # a run that died after this commit left its clean-up undone
                self._clean_after(label, index, committed)
            if not self.history.has_run(label, index):
                self.history.record_run(committed)
            return PointResult(label, index, value, skipped=True, manifest=committed)
        if index > len(chain) + 1:
            raise RunError(f"t{index} of the {cycle_words(label)} cannot run before t{index - 1} is committed")
        reached("locked", index)
        if cycle.carried and index == 1:
            return self._carry(cycle)
        previous = chain[-1] if chain else None
        self.meter.reset()
        plannings = (self.plan_cache.hits, self.plan_cache.misses)
        began = time.perf_counter()
        with self.meter.measure(f"t{index}: what is committed", purpose="commit"):
            if previous is not None:  # what later time points read is there, as committed
                self.store.check_readable(label, previous, index)
            self._find_sources()
            self.store.discard_uncommitted(label, index)
        with self.meter.measure(f"t{index}: new files' columns", purpose="schema"):
            last = previous if previous is not None else self._last_commit_before(label)
            self._check_drift(last)
        saved = {s["id"]: SavedState.from_json(s) for s in (previous or {}).get("states", [])}
        self._catch_up_sketches(last)
        seen = self._seen_before(cycle, previous, last)
        self._planning_cycle = cycle
        planning = time.perf_counter()
        plan = self.plan(cycle, index, saved, previous)
        self._planning_seconds = time.perf_counter() - planning
        self._sketch_later = self._next_weighs_less(cycle, index, plan)
        self._pending.clear()
        reached("planned", index)
        steps = len(plan.at(index)) + len(self.feeds)
        done = 0

        def tick(what: str) -> None:
            nonlocal done
            done += 1
            if self.progress is not None:
                self.progress(f"{cycle_words(label)}, {time_point_words(index, cycle.points.value(index))}: {what}",
                              done, steps)

        landed, changes = self._land(cycle, index, previous, tick, seen,
                                      {name: by_index[index] for name, by_index in plan.layouts.items() if index in by_index})
        broken, keys = self._check_keys(cycle, index, previous)
        checks = keys + changes  # what checking the landing cost
        first = self._update_statistics(landed)
        planning = time.perf_counter()
        plan = self._after_landing(cycle, index, plan, saved, previous, landed, broken, first)
        self._planning_seconds += time.perf_counter() - planning
        self.store.save_plan(label, index, plan.to_json())
        executor = DurableExecutor(self.spark, self.store, label, self.feeds, self._schemas, cycle.points.k, self.output,
                                   allow_empty=self.spec.allow_empty, fence=self.lock.check,
                                   history=carried_history(previous), layouts=landed_layouts(previous, landed),
                                   slices=self._slice_bounds(cycle), meter=self.meter,
                                   observe={name: (d.index, d.observed.attach) for name, d in self._deferred.items()})
        run = executor.run(plan, index, saved, lambda f: tick(self._fragment_words(f, plan.at(index))))
        self._update_statistics(self._settle_sketches())
        saved.update(run.saved)
        alive = {s.id for s in plan.states if s.last_read > index} | {
            i for i in plan.inputs if any(i in f.states for f in plan.fragments if f.time > index)}
        manifest = self._manifest(cycle, index, plan, run, landed, {k: v for k, v in saved.items() if k in alive}, previous,
                                  seen, broken, checks)
        manifest["run"]["work"] = {purpose: _work_json(metrics) for purpose, metrics in self.meter.by_purpose().items()}
        manifest["run"]["planning_seconds"] = round(self._planning_seconds, 3)
        manifest["run"]["plannings"] = {"reused": self.plan_cache.hits - plannings[0],
                                        "planned": self.plan_cache.misses - plannings[1]}
        manifest["run"]["run_wall_seconds"] = round(time.perf_counter() - began, 3)
        reached("manifest", index)
        self.lock.check()  # only the lock's holder commits
        manifest = self.store.write_manifest(label, index, manifest)
        reached("committed", index)
        self._clean_after(label, index, manifest)
        reached("cleaned", index)
        self.history.record_run(manifest)
        reached("recorded", index)
        result = PointResult(label, index, value, run=run, manifest=manifest, plan=plan)
        if index < cycle.last:
            self._reoptimize(cycle, index, plan, result)
        if self.hook is not None:
            self.hook(summary(self.spec, result))
        return result

    @property
    def schemas(self) -> dict[str, StructType]:
        """Each source's landed columns, as its last landing wrote them."""
        return dict(self._schemas)

    def _find_sources(self) -> None:
        """The sources' files as they are now (a catalog table's included); a source folder that
        does not exist stops the time point before anything is written."""
        self.feeds = with_table_files(self.spark, self.spec, self.feeds)
        for name, feed in self.feeds.items():
            if not self.files.exists(feed.location):
                raise RunError(f"{self.spec.path}: sources.{name}.path: {feed.location} does not exist (nothing was run)")

    def _fragment_words(self, fragment: Fragment, at: Sequence[Fragment]) -> str:
        """A fragment as a progress bar names it: ``fragment 1 of 3 [ivm]: changes up to t2 of
        Aggregate over sales``; with :attr:`verbose`, by its id and the memo's form too."""
        n = next((i for i, f in enumerate(at, 1) if f.id == fragment.id), 0)
        words = fragment.computes or fragment.output
        memo = f" ({fragment.id} {fragment.form})" if self.verbose else ""
        return f"fragment {n} of {len(at)} [{fragment.method}]: {words}{memo}"

    def _carry(self, cycle: Cycle) -> PointResult:
        """Commit point 1 of a carried cycle, its carry: the history and the states the cycle
        before left at its last time point are taken over (states copied in, renamed as
        snapshots at point 1; the history's folders listed, and compacted into one where the
        cost model says so: :func:`compaction`). When the cycle before did not finish (a catch-up
        left it out), the history is landed from the sources instead, and no state is taken over."""
        label = cycle.label
        value = cycle.points.value(1)
        self.store.discard_uncommitted(label, 1)
        before = self.spec.cycle(cycle.index - 1)
        assert before is not None
        chain = self.store.chain(before.label)
        last = chain[-1] if len(chain) >= before.last else None
        self._find_sources()
        with self.meter.measure(f"{label} carry") as work:
            if last is None:
                landed, _ = self._land(cycle, 1, None, lambda _: None, {})  # every file: the whole history
                history = {name: [self._history_entry(label, name, 1, land.rows)] for name, land in landed.items()}
                measured = {name: [[land.rows, land.deletions]] for name, land in landed.items()}
                seen = {name: [f[0] for f in land.new_files] for name, land in landed.items()}
                states: list[SavedState] = []
                schemas = {name: schema.json() for name, schema in self._schemas.items()}
                source_schemas = {name: schema.json() for name, schema in self._source_schemas.items()}
                why = f"the {before.title} did not finish: the history was landed from the sources"
            else:
                self.store.check_readable(before.label, last, before.last + 1)
                history = self._taken_history(before, last)
                measured = {name: [[sum(int(r) for r, _ in rows), sum(int(d) for _, d in rows)]]
                            for name, rows in last.get("measured", {}).items()}
                seen = dict(last.get("seen_files", {}))
                schemas = dict(last.get("schemas", {}))
                source_schemas = dict(last.get("source_schemas", {}))
                states = self._taken_states(cycle, before, last)
                why = (f"took over the {before.title}'s history ({sum(m[0][0] for m in measured.values())} rows) and "
                       f"{len(states)} state(s)")
            compacted = []
            for name in list(history):
                decision = compaction(history[name], cycle.time_points.k, self.spec.cost_constants)
                if decision:
                    history[name] = [self._compact(cycle, name, history[name], schemas.get(name))]
                    compacted.append(f"{name}: {decision}")
        if compacted:
            why += "; compacted " + "; ".join(compacted)
        inventory = self.store.listing(label, [f"states/{s.folder}" for s in states], {f"states/{s.folder}": s.rows for s in states})
        manifest = {
            "spec": self.spec.name, "cycle": label, "index": 1, "time": str(value),
            "committed_at": dt.datetime.now().isoformat(timespec="seconds"),
            "states": [s.to_json() for s in states], "landed": {}, "measured": measured, "seen_files": seen,
            "broken_keys": {}, "schemas": schemas, "source_schemas": source_schemas, "delivered": None, "delivery": None,
            "inventory": inventory, "history": history,
            "carried_from": before.label if last is not None else None, "streams": [], "fragments": [],
            "run": {"mode": "simulate" if self.simulate else "schedule", "method": "carry", "plan_id": "",
                    "stage_cost": self.spec.cost_constants.stage, "estimated_seconds": 0.0,
                    "wall_seconds": work.wall_seconds, "cpu_seconds": work.cpu_seconds, "key_check_cpu_seconds": 0.0,
                    "landing_cpu_seconds": 0.0, "landing_bytes_read": 0, "rows_landed": 0, "late_rows": 0,
                    "rejected_rows": 0, "reason": why},
        }
        reached("manifest", 1)
        self.lock.check()
        manifest = self.store.write_manifest(label, 1, manifest)
        reached("committed", 1)
        self._clean_after(label, 1, manifest)
        self.history.record_run(manifest)
        result = PointResult(label, 1, value, manifest=manifest, reason=why)
        if self.hook is not None:
            self.hook(summary(self.spec, result))
        return result

    def _history_entry(self, label: str, name: str, index: int, rows: int | None) -> dict[str, Any]:
        """A history folder (a landed interval of cycle ``label``) as a carry lists it: its path
        under the job's folder, its files with their sizes, its rows."""
        relative = f"landing/{name}/i={index:03d}"
        listed = self.store.listing(label, [relative], {relative: rows})[relative]
        return {"path": f"cycles/{label}/{relative}", **listed}

    def _taken_history(self, before: Cycle, last: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
        """The history the cycle ``before`` leaves: the history it took over, then each interval
        it landed (as its last manifest lists them)."""
        out: dict[str, list[dict[str, Any]]] = {}
        for name in self.feeds:
            entries = list(last.get("history", {}).get(name, []))
            for path, entry in sorted(last.get("inventory", {}).items()):
                if path.startswith(f"landing/{name}/i="):
                    entries.append({"path": f"cycles/{before.label}/{path}", **entry})
            out[name] = entries
        return out

    def _taken_states(self, cycle: Cycle, before: Cycle, last: dict[str, Any]) -> list[SavedState]:
        """The states the cycle ``before`` kept past its last time point that are snapshots as of
        it (a snapshot or partial aggregates, by key): copied into this cycle as snapshots at
        point 1, where its planning finds them by key. Other states (changes over intervals of
        the cycle before) mean nothing in this one."""
        out = []
        for data in last.get("states", []):
            state = SavedState.from_json(data)
            kind, _, signature = state.key.partition("|")
            if kind not in (f"SS[{before.last}]", f"PS[{before.last}]") or not signature:
                continue
            target = self.store.state_path(cycle.label, state.id, 1)
            pending = self.store.pending(cycle.label) / "states" / state.id
            self.files.delete(pending)
            self.files.copy(self.store.cycle_dir(before.label) / "states" / state.folder, pending)
            self.lock.check()
            self.files.delete(target)
            self.files.rename(pending, target)
            out.append(dataclasses.replace(state, folder=target.name, produced_at=1, key=f"{kind[:2]}[1]|{signature}"))
        return out

    def _compact(self, cycle: Cycle, name: str, entries: list[dict[str, Any]], schema: str | None) -> dict[str, Any]:
        """The history folders ``entries`` of source ``name`` rewritten as one: the carried
        cycle's landed interval 1."""
        from pyspark.sql.types import StructType

        assert schema, f"the history of {name} has no recorded columns"
        frame = landed_rows(self.spark, StructType.fromJson(json.loads(schema)), [],
                            [uri(self.store.root / e["path"]) for e in entries])
        pending = self.store.pending(cycle.label) / "landing" / name
        with self.meter.measure(f"compact {name}") as written:
            write_frame(frame, pending)
        check_visible(self.files, pending, written.rows_written)
        self.lock.check()
        final = self.store.landing_interval(cycle.label, name, 1)
        self.files.delete(final)
        self.files.rename(pending, final)
        return self._history_entry(cycle.label, name, 1, written.rows_written)

    def _manifest(self, cycle: Cycle, index: int, plan: MultiTimePlan, run: TimePointRun, landed: dict[str, Landed],
                  states: dict[str, SavedState], previous: dict[str, Any] | None, before: Mapping[str, Sequence[str]],
                  broken: dict[str, str], checks: WorkMetrics) -> dict[str, Any]:
        seen = {name: list(before.get(name, [])) for name in self.feeds}
        for name, land in landed.items():
            seen[name].extend(f[0] for f in land.new_files)
        measured = {name: list((previous or {}).get("measured", {}).get(name, [])) for name in self.feeds}
        for name, land in landed.items():
            measured[name].append([land.rows, land.deletions])
        work = run.work() + checks
        layouts = {name: {str(i): layout.to_json() for i, layout in sorted(by_index.items())}
                   for name, by_index in landed_layouts(previous, landed).items()}
        delivery = None
        if run.delivered is not None:
            files = self.files.data_files(run.delivered)
            root = run.delivered.rstrip("/") + "/"
            delivery = {"path": run.delivered, "rows": run.delivered_rows,
                        "files": {f[0].removeprefix(root) if f[0].startswith(root) else f[0]: f[1] for f in files}}
        return {
            "spec": self.spec.name,
            "cycle": cycle.label,
            "index": index,
            "time": str(cycle.points.value(index)),
            "committed_at": dt.datetime.now().isoformat(timespec="seconds"),
            "states": [s.to_json() for s in states.values()],
            "landed": {name: land.to_json() for name, land in landed.items()},
            **({"layouts": layouts} if layouts else {}),
            "measured": measured,
            "seen_files": seen,
            "open_files": {name: land.open_files for name, land in landed.items() if land.open_files is not None},
            **({"sketches_pending": dict(self._pending)} if self._pending else {}),
            "broken_keys": broken,
            "schemas": {name: schema.json() for name, schema in self._schemas.items()},
            "source_schemas": {name: schema.json() for name, schema in self._source_schemas.items()},
            "delivered": run.delivered,
            "delivery": delivery,
            "inventory": self._inventory(cycle.label, index, previous, landed, states, run),
            **({"history": previous["history"]} if previous is not None and "history" in previous else {}),
            "streams": run.streams,
            "fragments": [{**f.to_json(), "fallback": next((p.fallback for p in plan.at(index) if p.id == f.id), "")}
                          for f in run.fragments],
            "run": {
                "mode": "simulate" if self.simulate else "schedule",
                "method": plan.method,
                "plan_id": plan_id(plan),
                "stage_cost": plan.constants.stage,  # the cost per stage it was planned with (model ns)
                "estimated_seconds": plan.cost.times[index - 1] / 1e9,
                "wall_seconds": work.wall_seconds,
                "cpu_seconds": work.cpu_seconds,
                "key_check_cpu_seconds": checks.cpu_seconds,
                "landing_cpu_seconds": sum(land.cpu_seconds for land in landed.values()),
                "landing_bytes_read": sum(land.bytes_read for land in landed.values()),
                "rows_landed": sum(land.rows for land in landed.values()),
                "forecast_rows": {name: round(rows) for name, rows in self._forecasts.get((cycle.label, index), {}).items()},
                "late_rows": sum(land.late for land in landed.values()),
                "rejected_rows": sum(land.rejected for land in landed.values()),
                "null_arrival_rows": sum(land.null_arrival for land in landed.values()),
                "malformed_rows": sum(land.malformed for land in landed.values()),
                "malformed_example": next((land.malformed_example for land in landed.values() if land.malformed), ""),
            },
        }

    def _inventory(self, label: str, index: int, previous: dict[str, Any] | None, landed: dict[str, Landed],
                   states: dict[str, SavedState], run: TimePointRun) -> dict[str, Any]:
        """What later time points of the cycle may read, with the files and rows of each folder:
        every landed interval, the states alive, the latest checkpoint of each stream. Folders
        an earlier manifest listed keep their entries (they are not listed again)."""
        before: dict[str, Any] = dict((previous or {}).get("inventory", {}))
        wanted: dict[str, int | None] = {}
        first = 2 if "history" in (previous or {}) else 1  # a carried cycle's interval 1: its history
        for name, land in landed.items():
            for i in range(first, index + 1):
                wanted[f"landing/{name}/i={i:03d}"] = land.rows if i == index else None
        for state in states.values():
            wanted[f"states/{state.folder}"] = state.rows
        streams = {p.split("/", 1)[1].rpartition("@t")[0]: p for p in before if p.startswith("checkpoints/")}
        streams.update({name.rpartition("@t")[0]: f"checkpoints/{name}" for name in run.streams})
        wanted.update({path: None for path in streams.values()})
        fresh = [path for path in wanted if path not in before]
        listed = self.store.listing(label, fresh, wanted)
        return {path: before[path] if path in before else listed[path] for path in sorted(wanted)}

    def _clean_after(self, label: str, index: int, manifest: dict[str, Any]) -> None:
        """After time point ``index`` committed ``manifest`` (its newest): delete the attempt's
        pending folder, the states no later fragment reads, and the checkpoints superseded.
        Idempotent, so a run that finds the newest commit's clean-up undone does it."""
        self.files.delete(self.store.pending(label))
        self.store.drop_states(label, {str(s["folder"]) for s in manifest.get("states", [])})
        self._drop_old_checkpoints(label, index)

    def _drop_old_checkpoints(self, label: str, index: int) -> None:
        folder = self.store.cycle_dir(label) / "checkpoints"
        latest: dict[str, tuple[int, str]] = {}
        names = self.files.children(folder)
        for name in names:
            stream, _, tag = name.rpartition("@t")
            if tag.isdigit() and int(tag) <= index and (stream not in latest or int(tag) > latest[stream][0]):
                latest[stream] = (int(tag), name)
        keep = {name for _, name in latest.values()}
        for name in names:
            if name not in keep:
                self.files.delete(folder / name)

    # -- planning and re-optimisation ----------------------------------------------------------

    def settle_points(self) -> FreshnessChoice | None:
        """On a ``target_lag`` schedule, the time points the job chose (:mod:`~tempura.scheduler.freshness`):
        kept in its folder, or chosen now, before its first commit, by planning each candidate
        under the runner's method, and kept; the runner's spec takes them."""
        from tempura.scheduler.freshness import choose, planned_runs, settled

        if self.spec.model.schedule.target_lag is None:
            return None
        if self.freshness is not None:
            return self.freshness

        def choose_now() -> FreshnessChoice:
            self.chose_points = True
            constants, _ = for_job(self.spec.cost_constants, self.spec.model.cost, self.workdir, self.store.history_path)
            return choose(self.spec.model.schedule, planned_runs(self.prepared(), self.method, output_mode(self.spec),
                                                                  constants))

        committed = any(self.store.manifest_indices(label) for label in self.store.cycles())
        spec, choice = settled(self.spec, self.store.root, self.store.storage, committed, choose_now)
        if spec is not self.spec:
            self.spec = spec
            self._prepared = None  # planned again over the chosen points
            self._plans.clear()
            self.first_plans.clear()
        self.freshness = choice
        return choice

    def prepared(self) -> Prepared:
        """The spec bound for planning, with statistics of the job's sources: collected through
        Spark for a source whose files have none stored, or changed since (kept per job, so two
        jobs with a table of the same name do not share them)."""
        if self._prepared is None:
            self._prepared = prepare_job(self.spec, job_folder(self.workdir, self.spec), self.spark, progress=self.progress,
                                         by_clock=not self.simulate, meter=self.meter)
            if not self.simulate:
                self._first_statistics()
        return self._prepared

    # -- statistics kept from the landings -------------------------------------------------------

    @property
    def stats_store(self) -> StatsStore:
        root = job_folder(self.workdir, self.spec)
        return StatsStore(root, self.store.storage)

    def _sketched_columns(self, name: str, schema: StructType) -> dict[str, str]:
        """The columns of source ``name`` its statistics sketch: those its landing keeps."""
        return {f.name.lower(): f.dataType.simpleString() for f in schema.fields if f.name not in (TP, OP, FILE)}

    def _distribution_columns(self, name: str) -> set[str]:
        """The columns of source ``name`` whose distinct values and quantiles its statistics
        sketch: those the query's estimates compare rows on, and the key columns the spec
        declares on it (:mod:`tempura.stats.needs`); the other kept columns get counts and ranges."""
        from tempura.stats.needs import compared_columns

        out = {column for table, column in compared_columns(self.prepared().query.plan) if table == name}
        out.update(column for rule in self.spec.key_rules() for source, column in rule.columns if source == name)
        return out

    def _first_statistics(self) -> None:
        """Sketch, in one pass over its files, each source the job has no statistics of (its first
        collection; :mod:`tempura.stats.sketch`); from then on its landings keep them."""
        from pyspark.sql import functions as F

        store = self.stats_store
        self._find_sources()
        for name, feed in self.feeds.items():
            if store.load(name) is not None or self._sketched_at_landing(feed):
                continue  # a plain source's first collection is its first landing's pass
            files = [f[0] for f in self.files.data_files(feed.location)]
            if not files:
                continue
            if self.progress is not None:
                self.progress(f"statistics of {name}", 0, 1)
            with self.meter.measure(f"statistics of {name}", purpose="statistics"):
                raw = read_source(self.spark, feed, paths=files) if feed.table is None else read_source(self.spark, feed)
                schema = landed_schema(feed, raw.schema, self.kept_columns(name))
                columns = self._sketched_columns(name, schema)
                deleted = None
                if feed.op_column is not None:
                    deleted = F.coalesce(F.col(quote_identifier(feed.op_column)).isin(list(feed.delete_values)), F.lit(False))
                cycle = self._planning_cycle or self.spec.cycle(0)
                intervals = self._interval_conditions(name, cycle) if cycle is not None else []
                sketch, counts = collect_sketch(raw, columns, files, deleted, intervals, self._distribution_columns(name))
                arrival = None
                if intervals and cycle is not None:
                    arrival = {"cycle": cycle.label, "rows": [r for r, _ in counts], "deletions": [d for _, d in counts]}
                self._save_sketch(name, sketch, arrival)

    @staticmethod
    def _sketched_at_landing(feed: Feed) -> bool:
        """Whether a source without statistics gets them from its first landing's own pass: one
        of files arriving by a column, neither a change feed nor a range query's window (whose
        first collection is a pass of its own, before planning), as the runner lands it at
        ``t_1``, where it reads every file."""
        return feed.arrival_column is not None and feed.op_column is None and feed.window is None and feed.table is None

    def _interval_conditions(self, name: str, cycle: Cycle) -> list[Column]:
        """Per interval of ``cycle``, whether a row of source ``name`` arrives in it (none for a
        source arriving by file)."""
        from pyspark.sql import functions as F

        column = self.feeds[name].arrival_column
        if column is None:
            return []
        arrival = F.col(quote_identifier(column))
        values = list(cycle.points.values)
        lower = [self.spec.origin(name, cycle), *values[:-1]]
        return [(arrival <= _time_literal(v)) & (arrival > _time_literal(low) if low is not None else F.lit(True))
                for low, v in zip(lower, values)]

    def _save_sketch(self, name: str, sketch: TableSketch, arrival: Mapping[str, Any] | None = None) -> None:
        """Store source ``name``'s statistics read from ``sketch``: fresh when it covers every
        file the source has now, else stale (the planner scales them to the files' bytes);
        ``arrival``: what the first collection found per interval (else the stored one's kept)."""
        feed = self.feeds[name]
        listed = self.files.data_files(feed.location)
        covered = [f for f in listed if f[0] in sketch.files]
        covered_bytes = float(sum(f[1] for f in covered))
        fingerprint = ""
        if len(covered) == len(listed):
            state = file_state(self.spec.catalog().tables[name], self.spark)
            if state is not None:
                fingerprint, covered_bytes = state.digest, state.bytes
        stats = sketch.to_stats(self.spark, fingerprint, covered_bytes, covered_bytes)
        if arrival is None:
            stored = self.stats_store.load(name)
            arrival = stored.arrival if stored is not None else None
        self.stats_store.save(name, dataclasses.replace(stats, arrival=arrival))
        if self._prepared is not None:
            tables = self._prepared.estimator.tables
            if isinstance(tables, StatsCatalog):
                tables.forget(name)

    def _update_statistics(self, names: Iterable[str]) -> list[str]:
        """Merge the sketch observed for each of the sources ``names`` into its statistics (the
        files a sketch covers are never merged twice, so a time point run again after a crash
        adds nothing); returns the sources whose first statistics these are."""
        store = self.stats_store
        first: list[str] = []
        for name in names:
            observed = self._observed.pop(name, None)
            if observed is None:
                continue
            stored = store.load(name)
            delta = observed.result()
            with self.meter.measure(f"statistics of {name}", purpose="statistics"):
                if stored is None:  # the first collection: the landing read every file
                    self._save_sketch(name, delta, self._first_counts.pop(name, None))
                    first.append(name)
                    continue
                if stored.sketch is None:
                    continue
                base = TableSketch.from_json(stored.sketch)
                if not delta.files <= base.files:
                    self._save_sketch(name, base.merged(delta, self.spark))
        return first

    def plan(self, cycle: Cycle, index: int, saved: dict[str, SavedState], previous: dict[str, Any] | None) -> MultiTimePlan:
        """The plan for ``index`` and the rest of the cycle, given what is committed."""
        key = (cycle.label, index)
        made = self._plans.get(key)
        if made is None:
            made = self._plans[key] = self._planned(cycle, index, saved, previous)[0]
            self.first_plans.setdefault(key, made)
        return made

    def _after_landing(self, cycle: Cycle, index: int, plan: MultiTimePlan, saved: dict[str, SavedState],
                       previous: dict[str, Any] | None, landed: dict[str, Landed], broken: dict[str, str],
                       first: Sequence[str] = ()) -> MultiTimePlan:
        """The plan to run at ``index`` now that its intervals have landed: the same, unless a
        source landed no rows where the plan reads it at ``index`` — then an empty read is a
        fact, and the time point is planned again with the landed counts (a join probing a
        whole snapshot with an empty delta need not run) — or rows landed where the source's
        declared arrival expects none (the plan took that read as empty), or the landing broke a
        declared key the plan was made with (then it is planned again without it)."""
        empty = {name for name, land in landed.items() if land.rows == 0}
        bounds = ArrivalBounds({}, {name: {index} for name in empty})
        hit = sorted({r.scan.table for f in plan.at(index) for r in f.sources if r.end == index and bounds.read_empty(r)})
        newly = sorted(set(broken) - set((previous or {}).get("broken_keys", {})))
        expected = expected_empty(self.spec, index - 1)
        surprises = sorted(name for name, land in landed.items() if land.rows > 0 and index in expected.get(name, ()))
        if not hit and not newly and not surprises and not first:
            return plan
        replanned, _ = self._planned(cycle, index, saved, previous, landed, broken)
        reasons = [f"{', '.join(hit)} landed no rows at t{index}"] if hit else []
        reasons += [f"{name} landed {landed[name].rows} rows at t{index}, where none were expected" for name in surprises]
        reasons += [f"key {d} broken: {broken[d]}" for d in newly]
        if first:
            reasons.append(f"the first statistics of {', '.join(first)}, from its landing (planned before on defaults)")
        why = f"planned again after landing: {'; '.join(reasons)}"
        replanned.notes.append(why)
        self._plans[(cycle.label, index)] = replanned
        self.history.record_plan(plan_id(replanned), cycle.label, index, replanned.method, replanned.cost.times,
                                 replanned.cost.weighted, why, dt.datetime.now().isoformat(timespec="seconds"))
        return replanned

    def _planned(self, cycle: Cycle, floor: int, saved: dict[str, SavedState], previous: dict[str, Any] | None,
                 landed: dict[str, Landed] | None = None, broken: dict[str, str] | None = None) -> tuple[MultiTimePlan, list[str]]:
        """The plan from ``floor`` on, with the counts measured so far (and ``landed``: the
        counts of ``floor``'s own intervals, when they have landed), without the key domains
        a landing of the cycle broke (``broken``: by ``floor``'s, else those committed)."""
        counts: dict[str, list[tuple[int, int]]] = {
            name: [(int(r), int(d)) for r, d in rows] for name, rows in (previous or {}).get("measured", {}).items()}
        for name, land in (landed or {}).items():
            counts.setdefault(name, []).append((land.rows, land.deletions))
        forecast = None if self.simulate else Forecast(floor, self._earlier_cycle(cycle))
        prepared, reasons = for_cycle(self.prepared(), cycle, counts,
                                      broken if broken is not None else (previous or {}).get("broken_keys", {}), forecast)
        if landed is None:
            self._forecasts[(cycle.label, floor)] = expected_interval(prepared, floor)
        laid = landed_layouts(previous, landed or {})
        done: list[tuple[str, int, Layout | None]] = [(name, i, layout) for name, by_index in laid.items()
                                                       for i, layout in by_index.items()]
        done += [(name, land.index, None) for name, land in (landed or {}).items() if land.layout is None]
        resume = Resume(floor, tuple(CommittedState(s.id, s.produced_at, s.key, s.layout, s.rows) for s in saved.values() if s.key),
                        tuple(done))
        output = output_mode(self.spec)
        errors: dict[str, TempuraError] = {}
        constants, calibration = for_job(self.spec.cost_constants, self.spec.model.cost, self.workdir,
                                         self.store.history_path)
        stage = self.spec.cost_constants.stage  # as declared
        if calibration is not None:  # a reason when the stage cost moved from the last committed plan's
            planned = (previous or {}).get("run", {}).get("stage_cost")
            held, note = damped(constants.stage, float(planned) if planned else None)
            if note is not None:
                constants = dataclasses.replace(constants, stage=held)
                reasons.append(note)
            before = float(planned or stage)
            if before > 0 and abs(constants.stage / before - 1.0) > NOTICEABLE:
                reasons.append(calibration.describe(stage))
        plans = plan_spec(prepared, [self.method], output=output, errors=errors, resume=resume, constants=constants,
                          cache=self.plan_cache)
        if self.method not in plans:
            raise errors.get(self.method) or RunError(f"method {self.method} has no plan for this query")
        if calibration is not None:
            plans[self.method].notes.append(calibration.describe(stage))
        return plans[self.method], reasons

    def _earlier_cycle(self, cycle: Cycle) -> dict[str, list[tuple[int, int]]]:
        """Per source, the rows and deletions of each interval of the cycle before ``cycle``, when
        the job committed all of its time points (the forecast of a run by the clock)."""
        before = self.spec.cycle(cycle.index - 1) if cycle.index > 0 else None
        if before is None:
            return {}
        chain = self.store.chain(before.label)
        if len(chain) < before.last:
            return {}
        return {name: [(int(r), int(d)) for r, d in rows] for name, rows in chain[-1].get("measured", {}).items()}

    def _reoptimize(self, cycle: Cycle, index: int, plan: MultiTimePlan, result: PointResult) -> None:
        """After committing ``index``: re-plan the rest with the actuals, record the outcome."""
        manifest = result.manifest
        saved = {s["id"]: SavedState.from_json(s) for s in manifest["states"]}
        replanned, reasons = self._planned(cycle, index + 1, saved, manifest)
        self._plans[(cycle.label, index + 1)] = replanned
        changed = plan_shape(replanned, index) != plan_shape(plan, index)
        before = sum(w * c for w, c in zip(plan.objective.weights[index:], plan.cost.times[index:])) / 1e9
        after = sum(w * c for w, c in zip(replanned.objective.weights[index:], replanned.cost.times[index:])) / 1e9
        why = "; ".join(reasons) or "measured arrival as expected"
        if changed:
            why = f"plan changed ({replanned.method}, estimated rest {before:.3g}s -> {after:.3g}s): {why}"
        else:
            why = f"plan kept (estimated rest {before:.3g}s -> {after:.3g}s): {why}"
        self.history.set_replan(cycle.label, index, changed, why)
        self.history.record_plan(plan_id(replanned), cycle.label, index + 1, replanned.method, replanned.cost.times,
                                 replanned.cost.weighted, why, dt.datetime.now().isoformat(timespec="seconds"))
        result.replanned, result.plan_changed, result.reason = True, changed, why

    # -- landing -------------------------------------------------------------------------------

    def _check_keys(self, cycle: Cycle, index: int, previous: dict[str, Any] | None) -> tuple[dict[str, str], WorkMetrics]:
        """The key domains broken so far in the cycle: those committed, and under ``integrity:
        enforced`` those interval ``index``'s landing breaks; and what checking it cost."""
        declared = self.spec.key_rules()
        for rule in declared:
            for source, column in rule.columns:
                columns = {f.name.lower() for f in self._source_schemas[source].fields}
                if column not in columns:
                    key = "key" if source == rule.source else f"arrival.with.{rule.source}"
                    raise RunError(f"{self.spec.path}: sources.{source}.{key}: column '{column}' is not one of the "
                                   f"source's columns ({', '.join(sorted(columns - {TP, OP}))}); nothing was run")
        broken: dict[str, str] = dict((previous or {}).get("broken_keys", {}))
        rules = [r for r in declared if r.domain not in broken]
        if self.spec.model.integrity != "enforced" or not rules:
            return broken, WorkMetrics()

        def read(source: str, intervals: Sequence[int]) -> DataFrame:
            folders = [uri(self.store.landing_interval(cycle.label, source, i)) for i in intervals]
            return read_landed(self.spark, self._schemas[source], folders)

        with self.meter.measure("check keys", purpose="check") as cost:
            arrivals = {name.lower(): source.arrival.column for name, source in self.spec.sources.items()
                        if source.arrival.column is not None}
            broken.update(violations(rules, read, index, self.spec.key_reach(cycle), arrivals))
        return broken, cost

    def _check_drift(self, previous: dict[str, Any] | None) -> None:
        """Stop the time point before it plans (planning reads the sources) if a file first found
        now has columns other than its source's, as far as the source's ``schema`` policy allows
        (:func:`~tempura.runtime.ingest.check_schema`; under ``add_columns``, the columns read
        with are kept for the landing): those the last commit recorded (of this cycle, or at a
        cycle's first time point the cycle before); before any commit, the declared schema, else
        the oldest file's columns (a file that drifted is a newer one than those it drifted
        from, whatever the order of their names)."""
        for name, feed in self.feeds.items():
            seen = set((previous or {}).get("seen_files", {}).get(name, []))
            listed = sorted((f for f in self.files.data_files(feed.location) if f[0] not in seen),
                            key=lambda f: (f[2], f[0]))  # oldest first
            new = [f[0] for f in listed]
            found = file_schemas(self.spark, feed, new)  # every new file readable on its own, before the source whole
            reference = self._recorded_columns(previous, name)
            if reference is None and feed.schema:
                reference = read_source(self.spark, feed).schema  # the declared columns
            if reference is None and new and new[0] in found:
                reference = found[new[0]]
            if reference is None:
                reference = read_source(self.spark, feed).schema
            reading = check_schema(feed, reference, found, self.spark, reads=functools.partial(self.kept_columns, name))
            if feed.schema_policy == "add_columns" and feed.format in TYPED_FORMATS and not feed.schema:
                self._reading[name] = reading
            else:
                self._reading.pop(name, None)

    def _seen_before(self, cycle: Cycle, previous: dict[str, Any] | None,
                     last: dict[str, Any] | None) -> dict[str, list[str]]:
        """Per source, the files whose rows the job has already taken in: those the last commit
        of ``cycle`` (``previous``) records; at a cycle's first time point, for a source arriving
        by a column whose rows start to count at the cycle's own origin, those the last commit of
        an earlier cycle (``last``) closed (seen, and holding no row after its time point: not
        among its open files; not a catalog table's or a range query's, which are read whole).
        Every time point of an earlier cycle is at or before this cycle's origin, and no row at
        or before the origin is this cycle's: a closed file is not read again, and a new cycle
        costs what its delta costs, not the whole history. (An endless schedule's cycle counts
        rows from the schedule's start: its history is every file.)"""
        if previous is not None:
            return dict(previous.get("seen_files", {}))
        if last is None or cycle.origin is None:
            return {}
        still = last.get("open_files", {})
        afresh = {name for name, feed in self.feeds.items()
                  if feed.arrival_column is not None and feed.window is None and feed.table is None
                  and self.spec.origin(name, cycle) == cycle.origin}
        return {name: [f for f in files if f not in set(still.get(name) or [])]
                for name, files in last.get("seen_files", {}).items() if name in afresh}

    def _last_commit_before(self, label: str) -> dict[str, Any] | None:
        """The last committed manifest of the cycles before ``label``, if any."""
        for earlier in sorted((c for c in self.store.cycles() if c < label), reverse=True):
            indices = self.store.manifest_indices(earlier)
            if indices:
                try:
                    return self.store.chain(earlier)[-1]
                except TempuraError:
                    return None  # a damaged cycle: check and repair name it; the source's own columns stand
        return None

    @staticmethod
    def _recorded(previous: dict[str, Any] | None, key: str, name: str) -> StructType | None:
        """Source ``name``'s schema under the last commit's ``key`` (``schemas``: the landed
        columns; ``source_schemas``: the source's own); ``None`` where it recorded none."""
        from pyspark.sql.types import StructType

        recorded = (previous or {}).get(key, {}).get(name)
        return StructType.fromJson(json.loads(recorded)) if recorded else None

    @classmethod
    def _recorded_columns(cls, previous: dict[str, Any] | None, name: str) -> StructType | None:
        """Source ``name``'s columns as the last commit recorded them (all of the source's, which
        its landing may keep fewer of); ``None`` before the first commit. A commit that recorded
        no source columns landed all of them: its landing's, without ``__tp`` and ``__op``."""
        from pyspark.sql.types import StructType

        recorded = cls._recorded(previous, "source_schemas", name) or cls._recorded(previous, "schemas", name)
        if recorded is None:
            return None
        return StructType([f for f in recorded.fields if f.name not in (TP, OP)])

    def kept_columns(self, name: str) -> set[str] | None:
        """The columns of source ``name`` its landing keeps, lower case: those the query reads,
        its arrival column, and the key columns the spec declares on it. ``None`` (every column)
        for a change feed, whose deletions are matched to landed rows on all their columns.

        Landing reads and writes only these: a query reading a few columns of a wide table lands
        a few, and its fragments' reads of the landing are as narrow as its own."""
        from tempura.optimizer.layouts import scans

        feed = self.feeds[name]
        if feed.op_column is not None:
            return None
        out = {c.source.lower() for scan in scans(self.prepared().query.plan) if scan.table == name for c in scan.columns}
        if feed.arrival_column is not None:
            out.add(feed.arrival_column.lower())
        out.update(column for rule in self.spec.key_rules() for source, column in rule.columns if source == name)
        return out

    def _check_kept(self, previous: dict[str, Any] | None, name: str, schema: StructType) -> None:
        """Stop the time point when the query now reads a column of source ``name`` that the
        cycle's earlier landings did not keep (the query changed since): a read of theirs would
        find it NULL."""
        recorded = self._recorded(previous, "schemas", name)
        if recorded is None:
            return
        had = {f.name.lower() for f in recorded.fields}
        missing = sorted(f.name for f in schema.fields if f.name.lower() not in had)
        if missing:
            raise RunError(f"{self.spec.path}: sources.{name}: the query reads {', '.join(missing)}, which the "
                           f"intervals landed before in this cycle do not hold (a landing keeps the columns the query "
                           f"reads); land the cycle again with `tempura repair --from t1` (nothing was run)")

    def _slice_bounds(self, cycle: Cycle) -> Callable[[str, int, int], list[TimeValue]]:
        """Per source, interval and slice count, the bounds its landing is sliced at
        (:func:`~tempura.tvr.layout.interval_slices`; none for an interval with no start)."""
        def bounds(name: str, index: int, slices: int) -> list[TimeValue]:
            return interval_slices(cycle.points.values, self.spec.origin(name, cycle), index, slices) or []
        return bounds

    def _deleted_keys(self, label: str, name: str, schema: StructType, rows: DataFrame, previous: dict[str, Any] | None,
                      index: int) -> DataFrame | None:
        """The rows landed before interval ``index`` that its deletions (in ``rows``) may remove,
        when earlier intervals landed laid out: the buckets the deletions' keys fall in (a
        pruned read, as a fragment's); ``None`` when none did."""
        from pyspark.sql import functions as F

        laid = {i: layout for i, layout in landed_layouts(previous, {}).get(name, {}).items() if not layout.sliced}
        if not laid:
            return None
        column = Counter(layout.column for layout in laid.values()).most_common(1)[0][0]  # the most intervals'
        deleted = rows.where(F.col(OP) == "D")
        found = probe_buckets(deleted, column, [x for x in laid.values() if x.column == column])
        prune = Pruning(column, schema[column].dataType, found, PrunedRead(name, column))
        chosen, history = pruned_folders(self.store, label, name, 1, index - 1, carried_history(previous), laid, prune)
        return landed_rows(self.spark, schema, chosen, history).where(prune.where)

    def _land(self, cycle: Cycle, index: int, previous: dict[str, Any] | None, tick: Callable[[str], None],
              seen: Mapping[str, Sequence[str]],
              layouts: Mapping[str, Layout] | None = None) -> tuple[dict[str, Landed], WorkMetrics]:
        """Land every source's interval ``index`` (hash-bucketed where ``layouts`` says), each
        reading the files not in its ``seen`` (:meth:`_seen_before`); and what checking the
        change feeds cost."""
        out = {}
        changes = WorkMetrics()
        self._deferred.clear()
        for name, feed in self.feeds.items():
            with self.meter.measure(f"land {name}", purpose="landing"):
                out[name], checked = self._land_source(cycle, index, previous, name, feed, (layouts or {}).get(name),
                                                       set(seen.get(name, [])))
            changes = changes + checked
            tick(f"landed {name}: {out[name].rows} rows")
        return out, changes

    def _read_for_landing(self, feed: Feed, index: int, previous: dict[str, Any] | None, new: Sequence[str],
                          listed: set[str]) -> tuple[DataFrame, list[str] | None]:
        """The rows interval ``index``'s landing reads, with each row's file, and the files they
        come from (``None``: all of the source's). A source arriving by a column reads only the
        files first found now and those an earlier landing of the cycle found rows of later
        intervals in (its *open* files): a file whose every row has landed holds none of the
        interval's rows (a late row is one of a new file). At ``t_1`` of the first cycle every
        file is new; of a later one, every file an earlier cycle did not close
        (:meth:`_seen_before`). ``listed``: the source's files now (an open file gone is read by no one)."""
        from pyspark.sql import functions as F

        columns = self._reading.get(feed.name) or self._recorded_columns(previous, feed.name)
        whole = feed.table is not None or feed.arrival_column is None or feed.window is not None
        tracked = (previous or {}).get("open_files", {})
        if whole or (index > 1 and feed.name not in tracked):
            return read_source(self.spark, feed, columns=columns), None
        if index == 1 and set(new) >= listed:  # every file new: the first cycle
            return read_source(self.spark, feed, columns=columns), [f for f in new]
        left_open = [] if index == 1 else tracked[feed.name]  # at t_1, the closed files hold no row of the cycle
        paths = sorted(set(new) | ({str(f) for f in left_open} & listed))
        if not paths:
            return read_source(self.spark, feed, columns=columns).where(F.lit(False)), []
        return read_source(self.spark, feed, paths=paths, columns=columns), paths

    def _land_source(self, cycle: Cycle, index: int, previous: dict[str, Any] | None, name: str, feed: Feed,
                     layout: Layout | None, seen: set[str]) -> tuple[Landed, WorkMetrics]:
        """Land source ``name``'s interval ``index``, reading each file it needs once: the counts
        the landing needs (rows of later intervals, late rows, NULL arrivals, deletions) and the
        sketch of the new rows for the statistics are observed on the pass that writes it."""
        from pyspark.sql import Observation
        from pyspark.sql import functions as F
        from pyspark.sql.types import StructType

        label = cycle.label
        files = self.files.data_files(feed.location)
        new = [f for f in files if f[0] not in seen]
        # A typed format's files were each checked against the recorded columns (names and
        # types): read with those, Spark reads no footer to find them again.
        raw, read = self._read_for_landing(feed, index, previous, [f[0] for f in new], {f[0] for f in files})
        stored = self.stats_store.load(name)  # the source's statistics as the last landing left them
        self._source_schemas[name] = StructType([f for f in raw.schema.fields if f.name != FILE])
        schema = landed_schema(feed, raw.schema, self.kept_columns(name))
        self._check_kept(previous, name, schema)
        self._schemas[name] = schema
        landed_before = None
        if feed.window is not None and index > 1:
            folders, history = self.store.interval_folders(label, name, 1, index - 1, carried_history(previous))
            landed_before = landed_rows(self.spark, schema, folders, history)
        new_paths = {f[0] for f in new}
        values = cycle.points.values
        origin = self.spec.origin(name, cycle)
        if self._linkable(feed, layout, read, new_paths):
            linked = self._link_interval(cycle, index, name, feed, schema, raw, new, stored)
            if linked is not None:
                return linked, WorkMetrics()
        counted = None  # the counts observed on the pass that writes the interval: only the write reads it
        observed_raw = raw
        if feed.arrival_column is not None and feed.op_column is None:
            counted = Observation(f"tempura_landing_{name}")
            arrival = F.col(quote_identifier(feed.arrival_column))
            # each row's file compared once (not once per count): a column the write leaves out
            observed_raw = raw.withColumn(NEW_FILE, F.col(FILE).isin(sorted(new_paths)) if new_paths else F.lit(False))
            is_new = F.col(NEW_FILE)
            start = values[index - 2] if index > 1 else origin
            earlier = is_new & (arrival <= _time_literal(start)) if start is not None else F.lit(False)
            first = [] if self.simulate or stored is not None else self._interval_conditions(name, cycle)
            observed_raw = observed_raw.observe(
                counted, F.count(F.when(arrival > _time_literal(values[index - 1]), F.lit(1))).alias("later"),
                F.count(F.when(earlier, F.lit(1))).alias("earlier"),
                F.count(F.when(is_new & arrival.isNull(), F.lit(1))).alias("nulls"),
                # a first collection: the rows of each interval the files hold (the forecast's)
                *[F.count(F.when(inside, F.lit(1))).alias(f"in{j}") for j, inside in enumerate(first)])
        rows, _ = interval_rows(feed, observed_raw, new_paths, origin, values, index, self.spec.model.late, landed_before,
                                keep_file=True)
        _, late = interval_rows(feed, raw, new_paths, origin, values, index, self.spec.model.late, landed_before)
        absent, checked = 0, WorkMetrics()
        if feed.op_column is not None:  # every op value known, no deletion of a row not there
            with self.meter.measure(f"check changes of {name}", purpose="check") as checked:
                check_ops(feed, rows)
                earlier_rows = landed_before
                if feed.window is None and index > 1:  # the deletions probe the rows landed before
                    earlier_rows = self._deleted_keys(label, name, schema, rows, previous, index)
                    if earlier_rows is None:
                        folders, history = self.store.interval_folders(label, name, 1, index - 1,
                                                                       carried_history(previous))
                        earlier_rows = landed_rows(self.spark, schema, folders, history)
                rows, absent = settle_deletions(feed, rows, earlier_rows, index)
        rows = self._observe_sketch(name, schema, rows, new, feed.deletes, stored,
                                    only_new=read is not None and set(read) <= new_paths)
        written_counts = Observation(f"tempura_landed_{name}")
        rows = rows.observe(written_counts, F.count(F.lit(1)).alias("rows"),
                            (F.count(F.when(F.col(OP) == "D", F.lit(1))) if feed.deletes else F.lit(0)).alias("deletions"))
        pending = self.store.pending(label) / "landing" / name
        with self.meter.measure(f"write {name}") as written:
            columns = rows.select(*[F.col(quote_identifier(c.name)) for c in schema.fields])
            if layout is not None:
                write_laid_out(columns, layout, pending, self._slice_bounds(cycle)(name, index, layout.buckets)
                               if layout.sliced else ())
            else:
                write_frame(columns, pending)
        check_visible(self.files, pending, written.rows_written)  # the first write of a run: a workdir not shared
        reached("landing", index)
        self.lock.check()  # a run that lost its lock puts nothing in place
        final = self.store.landing_interval(label, name, index)
        self.files.rename(pending, final)
        reached("landed", index)
        found = written_counts.get
        total, deletions = written.rows_written, int(found.get("deletions") or 0)
        land = Landed(name, index, total, deletions, new_files=new, path=uri(final), absent_deletions=absent,
                      check_cpu_seconds=checked.cpu_seconds, layout=layout, cpu_seconds=written.cpu_seconds,
                      bytes_read=written.bytes_in)
        landing = counted.get if counted is not None else None  # None: not counted, so read as before
        if landing is not None and "in0" in landing:
            held = [int(landing.get(f"in{j}") or 0) for j in range(cycle.points.k)]
            self._first_counts[name] = {"cycle": label, "rows": held, "deletions": [0] * len(held)}
        if read is not None:  # the files holding rows of later intervals are read again then
            land.open_files = read if landing is None or int(landing.get("later") or 0) > 0 else []
        if landing is not None and not int(landing.get("earlier") or 0):
            late = None  # no new file has a row before the interval
        if late is not None and self.spec.model.late == "next":
            land.late = late.count()
            late = None
        with self.meter.measure(f"malformed rows of {name}") as looked:
            land.malformed, land.malformed_example = malformed_rows(self.spark, feed, sorted(new_paths))
        land.cpu_seconds += looked.cpu_seconds
        nulls = null_arrival_rows(feed, raw, new_paths) if landing is None or int(landing.get("nulls") or 0) else None
        if nulls is not None:  # in no interval: set aside with late rejected rows
            land.null_arrival = nulls.count()
        aside = ([late] if late is not None else []) + ([nulls] if nulls is not None and land.null_arrival else [])
        if aside:
            target = self.store.cycle_dir(label) / "rejected" / name / f"i={index:03d}"
            staging = self.store.pending(label) / "rejected" / name
            with self.meter.measure(f"set aside rows of {name}") as set_aside:
                write_frame(functools.reduce(lambda a, b: a.unionByName(b), aside), staging)
            land.rejected = set_aside.rows_written
            land.cpu_seconds += set_aside.cpu_seconds
            land.bytes_read += set_aside.bytes_in
            if land.rejected == 0:
                self.files.delete(staging)
            else:
                self.files.delete(target)
                self.files.rename(staging, target)
        return land, checked

    def _linkable(self, feed: Feed, layout: Layout | None, read: Sequence[str] | None, new_paths: set[str]) -> bool:
        """Whether an interval's landing may link the new files instead of writing their rows: an
        append-only parquet source's files, read as they are (no reader options), not laid out by
        a key, with new files and no file of an earlier interval still open. A simulated cycle's
        files, staged at once, hold every interval's rows: it writes its intervals."""
        if self.simulate or layout is not None or not new_paths or feed.deletes or feed.table is not None:
            return False
        if feed.format != "parquet" or feed.options:
            return False
        return feed.arrival_column is None or (read is not None and set(read) <= new_paths)

    def _link_interval(self, cycle: Cycle, index: int, name: str, feed: Feed, schema: StructType, raw: DataFrame,
                       new: Sequence[tuple[str, int, int]], stored: TableStats | None) -> Landed | None:
        """Land interval ``index`` of source ``name`` by linking its new files, when every row of
        them arrives in the interval; ``None`` when one does not (a late row, a row of a later
        interval, or one without an arrival), and the interval is written instead.

        Where the files' footers and arrival column, read on the driver, show it (local parquet
        files; not a first collection), no Spark job reads them to land them: their sketch for
        the statistics is observed on the plan's first read of the interval
        (:meth:`_defer_sketch`). Otherwise one pass over them counts their rows, the rows
        outside the interval, and sketches them."""
        from pyspark.sql import Observation
        from pyspark.sql import functions as F
        from pyspark.sql.types import StructType as Struct

        label, values = cycle.label, cycle.points.values
        paths = sorted(f[0] for f in new)
        columns = Struct([f for f in raw.schema.fields if f.name != FILE])
        start = values[index - 2] if index > 1 else self.spec.origin(name, cycle)
        # Not a first collection (that counts each interval's rows on its pass): the files'
        # footers and arrival column, read on the driver, may show every row inside.
        told = self._rows_inside(feed, paths, columns, start, values[index - 1]) if stored is not None else None
        if told is OUTSIDE:
            return None  # written instead: the footers show a row outside the interval, no pass need count it
        found: dict[str, Any] = {}
        cpu_seconds, bytes_read = 0.0, 0
        if isinstance(told, FileArrivals):
            inside = told.rows
            self._defer_sketch(name, index, schema, new, stored, paths, columns, told)
        else:
            frame = read_source(self.spark, feed, paths=paths, columns=columns)
            counted = Observation(f"tempura_linking_{name}")
            counts = [F.count(F.lit(1)).alias("rows")]
            if feed.arrival_column is not None:
                arrival = F.col(quote_identifier(feed.arrival_column))
                outside = arrival > _time_literal(values[index - 1])
                if start is not None:
                    outside = outside | (arrival <= _time_literal(start))
                counts.append(F.count(F.when(outside | arrival.isNull(), F.lit(1))).alias("outside"))
                first = [] if stored is not None else self._interval_conditions(name, cycle)
                counts += [F.count(F.when(within, F.lit(1))).alias(f"in{j}") for j, within in enumerate(first)]
            frame = self._observe_sketch(name, schema, frame.observe(counted, *counts), new, False, stored, only_new=True)
            with self.meter.measure(f"read new files of {name}") as pass_:
                frame.select(F.lit(1).alias("one")).write.format("noop").mode("overwrite").save()
            found = counted.get
            if int(found.get("outside") or 0):
                return None  # written instead, on a pass that sketches the rows again
            inside, cpu_seconds, bytes_read = int(found.get("rows") or 0), pass_.cpu_seconds, pass_.bytes_in
        pending = self.store.pending(label) / "landing" / name
        self.files.delete(pending)
        self.files.link(paths, pending)
        reached("landing", index)
        self.lock.check()  # a run that lost its lock puts nothing in place
        final = self.store.landing_interval(label, name, index)
        self.files.rename(pending, final)
        reached("landed", index)
        land = Landed(name, index, inside, 0, new_files=list(new), path=uri(final), cpu_seconds=cpu_seconds,
                      bytes_read=bytes_read, linked=True)
        if "in0" in found:
            held = [int(found.get(f"in{j}") or 0) for j in range(cycle.points.k)]
            self._first_counts[name] = {"cycle": label, "rows": held, "deletions": [0] * len(held)}
        if feed.arrival_column is not None:
            land.open_files = []  # every row of the files read has landed
        return land

    @staticmethod
    def _expected_rows(files: Sequence[str], sizes: Mapping[str, int], stored: TableStats | None) -> float:
        """About how many rows ``files`` (of ``sizes``, bytes by file) hold: their bytes at the
        rows per byte of the files the statistics ``stored`` cover (0 without them)."""
        if stored is None or stored.file_bytes <= 0:
            return 0.0
        return stored.rows / stored.file_bytes * float(sum(sizes.get(f, 0) for f in files))

    def _rows_inside(self, feed: Feed, paths: Sequence[str], columns: StructType, start: TimeValue | None,
                     end: TimeValue) -> FileArrivals | str | None:
        """The rows of the local parquet files ``paths`` of ``feed`` (read with ``columns``), and
        the range of their arrivals, when their footers and arrival column show that every one
        arrives in ``(start, end]``; :data:`OUTSIDE` when they show one that does not; ``None``
        where that cannot be told without Spark."""
        zone = self.spark.conf.get("spark.sql.session.timeZone") or "UTC"
        kind = None
        low, high = (instant(start, zone) if start is not None else None), instant(end, zone)
        if feed.arrival_column is not None:
            named = [f for f in columns.fields if f.name.lower() == feed.arrival_column.lower()]
            if len(named) != 1 or high is None or (start is not None and low is None):
                return None
            kind = named[0].dataType
        rows, earliest, latest = 0, None, None
        for path in paths:
            found = local_arrivals(feed, path, feed.arrival_column, kind, zone)
            if found is None or found.nulls:
                return None
            if feed.arrival_column is not None and found.rows:
                assert found.earliest is not None and found.latest is not None and high is not None
                if found.latest > high or (low is not None and found.earliest <= low):
                    return OUTSIDE
                earliest = found.earliest if earliest is None else min(earliest, found.earliest)
                latest = found.latest if latest is None else max(latest, found.latest)
            rows += found.rows
        return FileArrivals(rows, 0, earliest, latest)

    def _defer_sketch(self, name: str, index: int, schema: StructType, new: Sequence[tuple[str, int, int]],
                      stored: TableStats | None, paths: Sequence[str], columns: StructType, told: FileArrivals) -> None:
        """Sketch the new files (``paths``, whose rows and arrivals the driver ``told``) of source
        ``name``'s linked interval ``index`` on the plan's first read of it (:meth:`_settle_sketches`
        makes sure one did); on a pass of their own now where the sketch must tell their rows
        apart by file. What the footers hold (counts, ranges: :mod:`tempura.stats.footers`)
        and the arrival column's range are not counted row by row."""
        from urllib.parse import urlparse

        from pyspark.sql.types import TimestampType

        if self._sketch_later and stored is not None and stored.sketch is not None:
            self._pending[name] = {"files": [list(f) for f in new], "schema": schema.json(), "columns": columns.json()}
            return
        sketched = self._sketched_columns(name, schema)
        known = footer_counts([urlparse(p).path for p in paths], sketched)
        arrival = self.feeds[name].arrival_column
        kinds = {f.name.lower(): f.dataType for f in columns.fields}
        for column in sketched:
            if arrival is not None and column.lower() == arrival.lower() and told.earliest is not None \
                    and told.latest is not None and isinstance(kinds.get(column.lower()), TimestampType):
                known[column] = KnownCounts(told.rows, 0, told.earliest / 1e6, told.latest / 1e6)
        made = self._sketch_of(name, schema, new, False, stored, only_new=True, known=known)
        if made is None:
            return
        observed, everyone = made
        if everyone:
            self._deferred[name] = DeferredSketch(index, list(paths), columns, told.rows, observed)
        else:
            self._sketch_pass(name, observed, paths, columns)

    def _next_weighs_less(self, cycle: Cycle, index: int, plan: MultiTimePlan) -> bool:
        """Whether the time point after ``index`` (the next cycle's first, after the cycle's
        last) weighs less in the objective than ``index`` does: then a linked interval's sketch
        is left to that run (:meth:`_catch_up_sketches`), and the point due now pays only for its
        plan. Where there is no later time point, the sketch is taken now."""
        weights = plan.objective.weights
        here = weights[index - 1]
        if index < len(weights):
            return weights[index] < here
        if self.spec.cycle(cycle.index + 1) is None:
            return False
        return weights[cycle.offset] < here

    def _catch_up_sketches(self, previous: dict[str, Any] | None) -> None:
        """Sketch, on a pass of their own, the files whose sketch the last committed time point
        left to this run (its manifest's ``sketches_pending``), and merge them into their
        sources' statistics before planning. The files a source's statistics already cover (a
        run that died after merging them) are not sketched again; a file no longer there is
        left out."""
        from urllib.parse import urlparse

        from pyspark.sql.types import StructType as Struct

        for name, pending in (previous or {}).get("sketches_pending", {}).items():
            stored = self.stats_store.load(name) if name in self.feeds else None
            if stored is None or stored.sketch is None:
                continue
            new = [(str(f[0]), int(f[1]), int(f[2])) for f in pending["files"] if self.files.exists(str(f[0]))]
            schema = Struct.fromJson(json.loads(pending["schema"]))
            columns = Struct.fromJson(json.loads(pending["columns"]))
            known = footer_counts([urlparse(f[0]).path for f in new], self._sketched_columns(name, schema))
            made = self._sketch_of(name, schema, new, False, stored, only_new=True, known=known)
            if made is None:
                continue
            self._sketch_pass(name, made[0], [f[0] for f in new], columns)
            self._update_statistics([name])

    def _sketch_pass(self, name: str, observed: ObservedSketch, paths: Sequence[str], columns: StructType) -> None:
        """Sketch source ``name``'s files ``paths`` (read with ``columns``) on a pass of their own,
        its work the job's statistics'."""
        from pyspark.sql import functions as F

        frame = read_source(self.spark, self.feeds[name], paths=paths, columns=columns)
        if observed.keep is not None:  # the rows of the files the statistics do not cover yet
            frame = frame.withColumn(SKETCHED, F.col(FILE).isin(sorted(observed.files)))
        frame = observed.attach(frame)
        with self.meter.measure(f"sketch new files of {name}", purpose="statistics"):
            frame.select(F.lit(1).alias("one")).write.format("noop").mode("overwrite").save()
        self._observed[name] = observed

    def _settle_sketches(self) -> list[str]:
        """After the plan's fragments: each deferred sketch as observed on a fragment's read,
        or, where none read the interval whole (or the observation saw other rows than landed),
        on a pass of its own now; returns the sources whose sketch is ready."""
        ready = []
        for name, deferred in self._deferred.items():
            observed = deferred.observed
            if observed.done(wait=SKETCH_REPORTED if observed.attached else 0.0) \
                    and observed.result().inserted == deferred.rows:
                self._observed[name] = observed
            else:
                self._sketch_pass(name, observed.again(), deferred.paths, deferred.columns)
            ready.append(name)
        self._deferred.clear()
        return ready

    def _sketch_of(self, name: str, schema: StructType, new: Sequence[tuple[str, int, int]], deletes: bool,
                   stored: TableStats | None, only_new: bool = False, has_file: bool = True,
                   known: Mapping[str, KnownCounts] | None = None) -> tuple[ObservedSketch, bool] | None:
        """The sketch of the rows from files the source's statistics (``stored``) do not cover
        yet (when the job keeps the source's statistics from its landings), and whether it
        takes every row it sees (else it keeps those whose ``__sketched`` is true); ``None``
        when there is none to make. ``new``: the files first found now, with their sizes;
        ``only_new``: every row comes from one of them; ``has_file``: the rows say their file;
        ``known``: the columns whose counts and range are known without the rows."""
        from pyspark.sql import functions as F

        new_paths = {f[0] for f in new}
        if not has_file or (stored is None and (self.simulate or not self._sketched_at_landing(self.feeds[name])))\
                or (stored is not None and stored.sketch is None):
            return None
        covered = TableSketch.from_json(stored.sketch).files if stored is not None and stored.sketch is not None else set()
        fresh = sorted(new_paths - set(covered))
        if not fresh:
            return None
        everyone = only_new and set(fresh) == new_paths and not deletes  # no row to tell apart
        observed = ObservedSketch(self._sketched_columns(name, schema), fresh, keep=None if everyone else F.col(SKETCHED),
                                  deleted=F.col(OP) == "D" if deletes else None,
                                  distributions=self._distribution_columns(name),
                                  sample=Sample.for_rows(self._expected_rows(fresh, {f[0]: f[1] for f in new}, stored),
                                                         stored), name=f"tempura_sketch_{name}", known=known)
        return observed, everyone

    def _observe_sketch(self, name: str, schema: StructType, rows: DataFrame, new: Sequence[tuple[str, int, int]],
                        deletes: bool, stored: TableStats | None, only_new: bool = False) -> DataFrame:
        """``rows`` with the sketch of :meth:`_sketch_of` observed on them."""
        from pyspark.sql import functions as F

        self._observed.pop(name, None)
        made = self._sketch_of(name, schema, new, deletes, stored, only_new, has_file=FILE in rows.columns)
        if made is None:
            return rows
        observed, everyone = made
        self._observed[name] = observed
        return observed.attach(rows if everyone else rows.withColumn(SKETCHED, F.col(FILE).isin(sorted(observed.files))))


def _work_json(metrics: WorkMetrics) -> dict[str, Any]:
    """What one purpose's jobs cost at a time point, as the history keeps it."""
    return {"cpu_seconds": round(metrics.cpu_seconds, 4), "wall_seconds": round(metrics.wall_seconds, 4),
            "rows_in": metrics.rows_in, "bytes_in": metrics.bytes_in, "jobs": metrics.jobs}


def landed_layouts(previous: Mapping[str, Any] | None, landed: Mapping[str, Landed]) -> dict[str, dict[int, Layout]]:
    """Per source, the layout of each interval landed laid out so far in the cycle: as the
    committed manifests recorded them, and ``landed`` now."""
    out = {name: {int(i): Layout.from_json(entry) for i, entry in by_index.items()}
           for name, by_index in (previous or {}).get("layouts", {}).items()}
    for name, land in landed.items():
        if land.layout is not None:
            out.setdefault(name, {})[land.index] = land.layout
    return out


def carried_history(manifest: Mapping[str, Any] | None) -> dict[str, list[str]] | None:
    """A carried cycle's history per source, as its manifests list it (paths under the job's
    folder); ``None`` in a cycle that carries nothing."""
    if manifest is None or "history" not in manifest:
        return None
    return {name: [str(e["path"]) for e in entries] for name, entries in manifest["history"].items()}


def compaction(entries: Sequence[Mapping[str, Any]], k: int, constants: CostConstants) -> str:
    """Whether a carry compacts a source's history (its landed folders ``entries``) into one
    folder, and why (``""``: it does not). Kept as it is, the history costs each of the next
    cycle's ``k`` time points a look at every folder (the verification before a time point
    reads what was committed) and a plan reading the snapshot an open of every file (each open
    priced as Spark prices it: as many bytes as ``spark.sql.files.openCostInBytes``, 4 MiB, at
    the cost of a table read); compacted, it costs one read and one write of its bytes. The
    chain of folders is merged when keeping it for one more cycle costs more than merging it."""
    if len(entries) < 2:
        return ""
    files = sum(len(e.get("files", {})) for e in entries)
    size = sum(sum(e.get("files", {}).values()) for e in entries)
    opening = OPEN_COST_BYTES * constants.dfs_read
    keep = (k * len(entries) + files) * opening
    merge = size * (constants.dfs_read + constants.dfs_write) + (files + 1) * opening + 2 * constants.stage
    if keep <= merge:
        return ""
    return (f"{len(entries)} folders of {files} files, {size} bytes: keeping them costs {keep / 1e9:.3g}s over the "
            f"next cycle, merging {merge / 1e9:.3g}s")


OPEN_COST_BYTES = 4 * 1024 * 1024  # Spark's spark.sql.files.openCostInBytes: a file's open, in bytes read


def summary(spec: Spec, result: PointResult) -> dict[str, Any]:
    """The run summary the ``on_run`` hook receives."""
    run = result.manifest.get("run", {})
    return {
        "spec": spec.name,
        "cycle": result.cycle,
        "time_point": result.index,
        "time": str(result.time),
        "method": run.get("method"),
        "wall_seconds": run.get("wall_seconds"),
        "cpu_seconds": run.get("cpu_seconds"),
        "rows_landed": run.get("rows_landed"),
        "landing_cpu_seconds": run.get("landing_cpu_seconds"),
        "late_rows": run.get("late_rows"),
        "rejected_rows": run.get("rejected_rows"),
        "delivered": result.delivered,
        "replanned": result.replanned,
        "plan_changed": result.plan_changed,
        "reason": result.reason,
        "fragments": result.manifest.get("fragments", []),
    }


def _load_hook(spec: Spec, name: str = "on_run") -> Callable[[dict[str, Any]], None] | None:
    target = getattr(spec.model.hooks, name)
    if target is None:
        return None
    module_name, _, function = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise RunError(f"{spec.path}: hooks.{name}: cannot import {module_name}: {error}") from None
    hook = getattr(module, function, None)
    if not callable(hook):
        raise RunError(f"{spec.path}: hooks.{name}: {module_name} has no function {function}")
    return hook


__all__ = ["PointResult", "RunError", "Runner", "feeds", "job_folder", "summary"]
