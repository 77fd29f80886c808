"""The public way in for standing queries: :class:`StandingQuery`.

A standing query is a spec file (SQL, sources, schedule, objective) and the job folder its runs
keep under a workdir. :class:`StandingQuery` loads the spec once and offers everything done with
it: ``validate``, ``plan``, ``run_due`` (the time points due by the clock), ``run_daemon``,
``simulate`` (a whole cycle now, replaying the data's arrival), ``check`` and ``repair`` of the
job folder, and ``history``. Plans, runs and history come back as plain data (dataclasses, lists
of dicts, JSON-ready dicts). The command line, the demo and the benchmarks go through it; what it
drives lives in :mod:`tempura.scheduler`.

>>> import tempura
>>> query = tempura.StandingQuery("specs/revenue.yaml", workdir=".tempura")  # doctest: +SKIP
>>> query.plan().plan.method                                                 # doctest: +SKIP
'ivm'
>>> [r.index for r in query.run_due().results]                               # doctest: +SKIP
[1, 2]
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from tempura.errors import TempuraError
from tempura.runtime.storage import Location, Storage, Uri, location, storage_for
from tempura.scheduler.spec import Spec, load_spec, parse_size
from tempura.tvr.time import TimeValue

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tempura.runtime.lock import Holder
    from tempura.scheduler.check import JobReport
    from tempura.scheduler.freshness import FreshnessChoice
    from tempura.scheduler.reference import References
    from tempura.scheduler.runner import PointResult, Runner
    from tempura.scheduler.simulation import MethodRun
    from tempura.scheduler.stopping import Stopper
    from tempura.tvr.plan import MultiTimePlan

DEFAULT_WORKDIR = ".tempura"
METHODS = ("auto", "batch", "ivm", "streaming", "ojv", "higher-order")
SELECTORS = ("auto", "ilp", "greedy", "off")

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Validation:
    """What ``validate`` found: the spec's shape, and each problem as one line naming the file,
    line and key (an empty list: the spec is valid)."""

    spec: Spec
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what could not be checked, and why

    @property
    def ok(self) -> bool:
        return not self.problems

    def describe(self) -> str:
        """``name: N source(s), K time point(s), deliver t…`` or the first problem."""
        if self.problems:
            more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
            return self.problems[0] + more
        tp = self.spec.time_points()
        return (f"{self.spec.name}: {len(self.spec.sources)} source(s), {tp.k} time point(s), "
                f"deliver {', '.join(f't{i}' for i in tp.deliver)}" + "".join(f"; {note}" for note in self.notes))


@dataclass
class PlanChoice:
    """The plan of one method, beside every method's plan for comparison."""

    method: str
    output: str  # snapshot | delta
    plan: MultiTimePlan
    alternatives: dict[str, MultiTimePlan] = field(default_factory=dict)
    overhead: list[float] = field(default_factory=list)  # per time point, the run around the plan (model ns)
    freshness: FreshnessChoice | None = None  # a target_lag schedule's time points, and why
    calibration: str = ""  # what a second of the model's estimate came to in measured CPU (model_factor_words)

    def whole(self, plan: MultiTimePlan | None = None) -> float:
        """The weighted cost of the whole runs: the plan's and what each run does around it."""
        chosen = plan or self.plan
        weights = chosen.objective.weights
        return chosen.cost.weighted + sum(w * c for w, c in zip(weights, self.overhead))

    def text(self, sql: bool = False, verbose: bool = False) -> str:
        """The plan as ``tempura plan`` prints it, then the methods side by side; ``verbose``
        adds the memo's names of forms and groups."""
        from tempura.tvr.render import alternatives_text, format_time, plan_text

        around = ""
        if self.overhead:
            around = (f"\n\naround the plan at each time point, whatever the method (landing the intervals, "
                      f"statistics): [{', '.join(format_time(c) for c in self.overhead)}]; the whole runs' objective: "
                      f"{format_time(self.whole())}")
        chosen = f"\n\n{self.freshness.text()}" if self.freshness is not None else ""
        factor = f"\n{self.calibration}" if self.calibration else ""
        return (f"{plan_text(self.plan, sql=sql, verbose=verbose)}\n\nmethods (* = this plan):\n"
                f"{alternatives_text(self.alternatives, self.method)}{around}{factor}{chosen}")

    def dot(self, verbose: bool = False) -> str:
        from tempura.tvr.render import plan_dot

        return plan_dot(self.plan, verbose)

    def to_json(self, verbose: bool = False) -> dict[str, Any]:
        """The plan's JSON (``plan.json``) and every method's summary; the memo's names of forms
        (``form``) only when ``verbose``."""
        data = self.plan.to_json()
        if not verbose:
            for item in (*data.get("fragments", []), *data.get("states", [])):
                item.pop("form", None)
        data["alternatives"] = {m: p.summary() for m, p in self.alternatives.items()}
        data["run_overhead_ns"] = self.overhead
        data["whole_objective_ns"] = self.whole() if self.overhead else None
        data["freshness"] = self.freshness.to_json() if self.freshness is not None else None
        return data


@dataclass
class RunOutcome:
    """What a run by the clock (or a repair) did: one result per time point it took, how many
    earlier cycles ``max_catch_up`` left out, and the time points it chose (a ``target_lag``
    schedule's first run)."""

    results: list[PointResult]
    skipped: int = 0
    chose: FreshnessChoice | None = None


@dataclass
class RunHistory:
    """A job's committed runs (one dict per time point) and fragments (estimated against
    measured), as the history database holds them, and the fitted stage cost in words."""

    runs: list[dict[str, Any]]
    fragments: list[dict[str, Any]]
    calibration: str
    events: list[dict[str, Any]] = field(default_factory=list)  # the event log: every attempt, oldest first

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class JobStatus:
    """Where a job stands (``tempura status``): its last committed time point and when, the next
    time point due, how far it lags behind the schedule, the method it ran, its last failure,
    and who holds its lock."""

    name: str
    spec: str
    job_folder: str
    last: dict[str, Any] | None  # cycle, index, time, committed_at, method
    next: dict[str, Any] | None  # cycle, index, time, due (whether the clock has passed it)
    lag_seconds: float  # now minus the earliest uncommitted time point the clock has passed (0 if none)
    method: str | None
    last_failure: dict[str, Any] | None  # at, message, kind, and whether a commit came after it
    lock: str | None
    attempts: int  # records in the event log

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class StandingQuery:
    """One standing query: its spec and its job under ``workdir`` (by default ``.tempura`` beside
    the spec file, whatever the current folder).

    ``spark`` is used if given; otherwise a session is started on first need, with the spec's
    ``spark`` section (master, settings). ``validate`` starts one only for a query calling a
    function sqlglot does not know (to ask Spark whether it exists), ``check`` and ``history``
    never for a workdir on a local path; ``plan`` starts one only if planning must read
    data. A workdir at a URI (``hdfs://…``, ``s3a://…``, ``file://…``) is read and written
    through Hadoop's file system on the session's JVM, so everything that reads the job folder
    there starts one.
    """

    def __init__(self, spec: str | Path | Spec, workdir: str | Path | None = None,
                 spark: SparkSession | None = None, progress: Progress | None = None, verbose: bool = False) -> None:
        self.spec = spec if isinstance(spec, Spec) else load_spec(spec)
        # absolute as of now (the working folder may change later); by default beside the spec file,
        # so that a command run from another folder finds the same job
        self.workdir = location(workdir if workdir is not None else self.spec.folder / DEFAULT_WORKDIR)
        self.progress = progress
        self.verbose = verbose  # progress names fragments by the memo's forms too
        self._spark = spark

    def __repr__(self) -> str:
        return f"StandingQuery({self.name!r}, spec={str(self.path)!r}, workdir={str(self.workdir)!r})"

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def path(self) -> Path:
        return self.spec.path

    @property
    def spark(self) -> SparkSession:
        """The session the job runs on (started with the spec's ``spark`` section if needed)."""
        if self._spark is None:
            from tempura.runtime import get_spark

            self._spark = get_spark(self.spec.model.spark.master, dict(self.spec.model.spark.conf),
                                     app_name=f"tempura:{self.name}")
        return self._spark

    def job_folder(self, simulated: str | None = None) -> Location:
        """Where the job keeps statistics, cycles and history (a simulation of ``simulated``:
        its own folder inside)."""
        from tempura.scheduler.planning import job_folder

        return job_folder(self.workdir, self.spec, simulated)

    def _storage(self, where: Location) -> Storage:
        """The storage of a place in the workdir: for a workdir at a URI, Hadoop's, over the job's
        session (started with the spec's ``spark`` section)."""
        return storage_for(where, self.spark if isinstance(where, Uri) else None)

    def _spark_for_workdir(self) -> SparkSession | None:
        """The session if one is running, or the workdir is at a URI (read through Spark's JVM)."""
        return self.spark if isinstance(self.workdir, Uri) else self._spark

    # -- looking ------------------------------------------------------------------------------

    def validate(self) -> Validation:
        """The spec's problems: loading checked its keys, types, schedule and objective; this
        adds the paths that do not exist, the local parquet files whose footer cannot be read
        (every file's, with pyarrow), a schedule of one cycle whose every time point is before
        a source's earliest arrival (as the footers' statistics tell it, where they hold it),
        and binds the query against the sources' columns (declared, or read from parquet
        footers), so an unknown table or column is named with its position. A source whose
        columns need Spark to read (CSV or JSON without ``schema``, a URI, partition folders)
        leaves the query unbound, with a note.

        All that is done without Spark. Only a query calling a function sqlglot does not know
        (``foo_bar(x)``) makes it ask Spark whether the function exists (built in, or
        registered in the job's session): then the job's session is used, started with the
        spec's ``spark`` section if none was given."""
        from tempura.catalog import column_minimum, parquet_footers
        from tempura.errors import CatalogError, SqlError
        from tempura.scheduler.planning import hidden_columns, recompute_only
        from tempura.sql import parse_query

        problems = self.spec.missing_paths()
        notes: list[str] = []
        if not problems:
            catalog = self.spec.catalog()
            for name, table in catalog.tables.items():
                source = self.spec.sources[name]
                key = f"sources.{next(n for n in self.spec.model.sources if n.lower() == name)}"
                try:
                    footers = parquet_footers(table)
                except CatalogError as error:
                    problems.append(f"{self.spec.located(key + '.path')}: {error}")
                    continue
                if footers and source.arrival.column is not None:
                    problem = self._schedule_before(key, column_minimum(footers, source.arrival.column))
                    if problem is not None:
                        problems.append(problem)
        if not problems:
            schemas, unread = self.spec.catalog().footer_schemas()
            if unread:
                notes.append(f"query not bound: the columns of {', '.join(sorted(unread))} need Spark to read "
                             f"(declare them with schema: to check them here)")
            else:
                visible = {t: {c: ty for c, ty in cols.items() if c not in hidden_columns(self.spec, t)}
                           for t, cols in schemas.items()}
                try:
                    parse_query(self.spec.sql, visible, self.spec.dialect)
                except SqlError as error:
                    problems.append(str(self.spec.sql_error(error.detail, error.line, error.column)))
        if not problems:
            problems.extend(self._unknown_functions())
        window = self.spec.now_window
        if window is not None:
            from tempura.scheduler.freshness import duration_words

            at = self.spec.query_position(window.line, window.position)
            where = f" (line {at[1]}, column {at[2]})" if at is not None else ""
            notes.append(f"{window.describe()}{where}: maintained as a range query over the last "
                         f"{duration_words(window.length.total_seconds())} (schedule.range), not recomputed")
        for name in self.spec.unread_sources:
            notes.append(f"sources.{name}: the query reads no row of it, so it is neither landed nor analysed")
        try:
            recomputed = recompute_only(self.spec)
        except SqlError as error:
            problems.append(str(error))
        else:
            if recomputed is not None:
                notes.append(f"{recomputed}: recomputed at every time point (methods other than batch and auto "
                             "are refused)")
        return Validation(self.spec, problems, notes)

    def _schedule_before(self, key: str, earliest: object | None) -> str | None:
        """The problem of a schedule of one cycle whose every time point is before ``earliest``,
        the least arrival value of source ``key`` (``sources.x``): no row of it arrives within
        the schedule. ``None`` when the schedule repeats (a later cycle reaches the data), or
        the values cannot be compared."""
        if earliest is None or self.spec.cycle(1) is not None:
            return None
        values = self.spec.time_points().values
        last = max(values)
        if isinstance(last, dt.datetime) != isinstance(earliest, dt.datetime) \
                and isinstance(last, dt.date) and isinstance(earliest, dt.date):
            before = _day(last) < _day(earliest)  # a date against a timestamp: only a whole day apart counts
        elif isinstance(last, (int, float)) != isinstance(earliest, (int, float)) or isinstance(earliest, bool):
            return None
        else:
            try:
                before = last < earliest  # type: ignore[operator]
            except TypeError:
                return None
        if not before:
            return None
        points = f"{_shown(values[0])}" if len(values) == 1 else f"{_shown(values[0])} … {_shown(last)}"
        return (f"{self.spec.located('schedule')}: every time point ({points}) is before the earliest arrival of "
                f"{key} ({_shown(earliest)}, from its files' statistics): no row of it arrives within the schedule")

    def _unknown_functions(self) -> list[str]:
        """One problem per call of a function neither sqlglot nor Spark knows, at its position;
        Spark is asked only if the query calls a function sqlglot does not know."""
        from tempura.errors import SqlError
        from tempura.sql.clock import unknown_calls

        try:
            calls = unknown_calls(self.spec.sql, self.spec.dialect)
        except SqlError:  # a syntax error: the binding or the planning names it
            return []
        if not calls:
            return []
        known: dict[str, bool] = {}
        out = []
        for call in calls:
            if call.name not in known:
                try:
                    known[call.name] = bool(self.spark.catalog.functionExists(call.name))
                except Exception:  # noqa: BLE001 - Spark refuses the name (a database it has not): not a function it knows
                    known[call.name] = False
            if not known[call.name]:
                out.append(str(self.spec.sql_error(f"unknown function {call.name} (neither sqlglot nor Spark knows it)",
                                                   call.line, call.column)))
        return out

    def plan(self, method: str = "auto", *, selector: str = "auto", output: str | None = None,
             no_rules: Iterable[str] = (), ilp_limit: int | None = None, state_budget: str | float | None = None,
             cost: Mapping[str, object] | None = None) -> PlanChoice:
        """The multi-time-point plan the job's first time point would run under ``method``, and
        every method's plan beside it: with the job's statistics (collected where missing, as a
        run would), the stage cost its history supports (unless the spec or ``cost`` sets it),
        and the spec's output mode unless ``output`` says otherwise."""
        from tempura.mqo import MqoOptions
        from tempura.scheduler.calibration import for_job, model_factor_words
        from tempura.scheduler.history import history_at
        from tempura.scheduler.planning import Forecast, for_cycle, output_mode, plan_spec, prepare_job, run_overhead
        from tempura.runtime.store import history_location
        from tempura.stats.store import StatsStore

        _choice("method", method, METHODS)
        _choice("selector", selector, SELECTORS)
        try:
            budget = state_budget if isinstance(state_budget, float) or state_budget is None else parse_size(state_budget)
        except ValueError as error:
            raise TempuraError(f"state budget: {error}") from None
        constants, pinned = self._cost_constants(cost)
        root = self.job_folder()
        spark = self._spark_for_workdir()
        constants, calibration = for_job(constants, pinned, self.workdir, history_location(root))
        # A job run by the clock keeps its sources' statistics from its landings: then plan as its
        # runner does, with the forecast arrival; else with the data's measured arrival
        store = StatsStore(root, self._storage(root))
        kept = all((found := store.load(name)) is not None and found.sketch is not None for name in self.spec.sources)
        prepared = prepare_job(self.spec, root, spark, lambda: self.spark, self.progress, by_clock=kept)
        mode = output or output_mode(self.spec)
        freshness = None
        if self.spec.model.schedule.target_lag is not None:  # the time points the job keeps, or would choose
            from tempura.scheduler.freshness import choose, planned_runs, settled

            schedule = self.spec.model.schedule
            chosen_spec, freshness = settled(self.spec, root, self._storage(root), False, keep=False, choose_now=lambda:
                                             choose(schedule, planned_runs(prepared, method, mode, constants)))
            prepared = prepare_job(chosen_spec, root, spark, lambda: self.spark, self.progress, by_clock=kept)
        cycle = prepared.spec.cycle(0)
        assert cycle is not None
        prepared, _ = for_cycle(prepared, cycle, forecast=Forecast(1) if kept else None)  # as the runner plans t1
        options = MqoOptions(selector=selector, budget=budget)
        if ilp_limit is not None:
            options = dataclasses.replace(options, ilp_limit=ilp_limit)
        errors: dict[str, TempuraError] = {}
        plans = plan_spec(prepared, METHODS, list(no_rules), mode, constants=constants, mqo=options, errors=errors)
        if method not in plans:
            if method in errors:
                raise errors[method]
            raise TempuraError(f"method {method} has no plan for this query and output ({mode})")
        chosen = plans[method]
        if calibration is not None and (calibration.stage is not None or calibration.fragments > 0
                                        or calibration.probe_keys is not None):
            chosen.notes.append(calibration.describe(self.spec.cost_constants.stage))
        factor = model_factor_words(history_at(history_location(root), read_only=True).fragments())
        return PlanChoice(method, mode, chosen, plans, run_overhead(prepared, constants), freshness, factor)

    def analyze(self) -> list[str]:
        """Collect the statistics of the sources whose files have none stored in the job's
        folder, or changed since (as a run does before planning); returns their names."""
        from tempura.scheduler.planning import analyze_sources, stale_sources

        root = self.job_folder()
        stale = stale_sources(self.spec, root, self.spark)
        analyze_sources(self.spark, self.spec, root, stale)
        return stale

    def check(self, simulated: str | None = None) -> JobReport:
        """The job folder verified: the chain of manifests, every file they list, the newest
        delivery (no Spark for a local workdir)."""
        from tempura.runtime.store import JobStore
        from tempura.scheduler.check import check_job

        root = self.job_folder(simulated)
        return check_job(JobStore(root, storage=self._storage(root)))

    def history(self, simulated: str | None = None) -> RunHistory:
        """The committed runs and fragments of the job (of a simulation of ``simulated``)."""
        from tempura.runtime.store import history_location
        from tempura.scheduler.calibration import for_job
        from tempura.scheduler.history import history_at

        path = history_location(self.job_folder(simulated))
        history = history_at(path, read_only=True, storage=self._storage(path))
        runs = history.runs()
        fragments = history.fragments()
        events = history.events()
        _, calibration = for_job(self.spec.cost_constants, self.spec.model.cost, self.workdir, path)
        stage = self.spec.cost_constants.stage
        words = (calibration.describe(stage) if calibration is not None
                 else f"stage cost set by the spec: {stage / 1e9:.3g} s per stage")
        return RunHistory(runs, fragments, words, events)

    def status(self, now: dt.datetime | None = None) -> JobStatus:
        """Where the job stands at ``now`` (the wall clock): read from its folder, without Spark
        for a local workdir."""
        from tempura.runtime.lock import LEASE, read_holder, stale
        from tempura.runtime.lock import NAME as LOCK_NAME
        from tempura.runtime.store import JobStore

        clock = now or dt.datetime.now()
        root = self.job_folder()
        store = JobStore(root, storage=self._storage(root))
        history = self.history()
        committed = sorted((r for r in history.runs if r.get("committed_at")), key=lambda r: r["committed_at"])
        last = None
        if committed:
            r = committed[-1]
            last = {"cycle": r["cycle"], "index": r["time_index"], "time": r["time_value"],
                    "committed_at": r["committed_at"], "method": r["method"]}
        upcoming, lag = self._next_point(store, clock)
        failures = [e for e in history.events if e["outcome"] == "failed"]
        failure = None
        if failures:
            e = failures[-1]
            later = any(x["outcome"] == "committed" and x["at"] > e["at"] for x in history.events)
            failure = {"at": e["at"], "message": e["message"], "kind": (e.get("details") or {}).get("kind"),
                       "time_index": e.get("time_index"), "recovered": later}
        holder = read_holder(root / LOCK_NAME, store.storage)
        lock = None if holder is None else holder.describe() + (" (stale)" if stale(holder, LEASE) else "")
        return JobStatus(self.name, str(self.path), str(root), last, upcoming, lag,
                         last["method"] if last else None, failure, lock, len(history.events))

    def job_spec(self) -> Spec:
        """The spec with the time points its job runs: on a ``target_lag`` schedule, those the
        job chose and keeps (:mod:`tempura.scheduler.freshness`), else the fewest that meet the
        target; any other spec as it is."""
        if self.spec.model.schedule.target_lag is None:
            return self.spec
        from tempura.scheduler.freshness import settled

        root = self.job_folder()
        return settled(self.spec, root, self._storage(root), False, None)[0]

    def _next_point(self, store: Any, now: dt.datetime) -> tuple[dict[str, Any] | None, float]:
        """The earliest time point not committed (in the cycles a run by the clock considers),
        and how long ago the clock passed it (0 when it is still ahead)."""
        from tempura.scheduler.spec import cycle_index_at

        spec = self.job_spec()
        schedule = spec.model.schedule
        if not isinstance(spec.time_points().values[0], dt.datetime):
            return None, 0.0
        under_way = cycle_index_at(schedule, now)
        first = 0 if under_way is None else max(0, under_way - spec.max_catch_up)
        n = first
        while True:
            cycle = spec.cycle(n)
            if cycle is None:
                return None, 0.0
            done = set(store.manifest_indices(cycle.label))
            for index in cycle.steps:
                if index in done:
                    continue
                value = cycle.points.value(index)
                if not isinstance(value, dt.datetime):
                    return None, 0.0
                lag = max(0.0, (now - value).total_seconds())
                return {"cycle": cycle.label, "index": index, "time": str(value), "due": value <= now}, lag
            n += 1
            if n > first + 10_000:  # an endless schedule all committed far ahead: nothing to say
                return None, 0.0

    # -- running ------------------------------------------------------------------------------

    def runner(self, method: str = "auto", simulate: bool = False, wait: float = 0.0) -> Runner:
        """The runner of this job under ``method`` (waiting up to ``wait`` seconds for another
        run's lock)."""
        from tempura.scheduler.runner import Runner

        _choice("method", method, METHODS)
        return Runner(self.spec, self.spark, self.workdir, method, simulate, self.progress, wait=wait, verbose=self.verbose)

    def run_due(self, now: TimeValue | None = None, *, since: TimeValue | None = None, method: str = "auto",
                wait: float = 0.0) -> RunOutcome:
        """Run every time point due by ``now`` (default: the wall clock; a number, for a
        schedule of numbers) and not committed yet,
        in the cycle under way and at most ``max_catch_up`` cycles before it (or every cycle from
        the one under way at ``since``). Idempotent: what is committed is not run again. A live
        run holding the job's lock stops this one at once, before Spark starts, unless ``wait``."""
        if wait == 0:
            self._refuse_if_locked(method)
        runner = self.runner(method, wait=wait)
        results = runner.run_due(now, since)
        return RunOutcome(results, runner.skipped, runner.freshness if runner.chose_points else None)

    def _refuse_if_locked(self, method: str) -> None:
        from tempura.runtime.lock import JobLock, LockHeld
        from tempura.runtime.store import history_location
        from tempura.scheduler.events import EventLog
        from tempura.scheduler.history import history_at

        root = self.job_folder()
        if isinstance(root, Uri):
            return  # reading it needs Spark's file systems: the runner's own acquire says so
        try:
            JobLock(root, storage=self._storage(root)).refuse_if_held()
        except LockHeld as error:
            path = history_location(root)
            EventLog(history_at(path, storage=self._storage(path)), method).refused(error)
            raise

    def run_daemon(self, method: str = "auto", wait: float = 0.0, *, stopper: Stopper | None = None,
                   on_point: Callable[[PointResult], None] = lambda _r: None,
                   on_failure: Callable[[TempuraError], None] | None = None) -> None:
        """Run each time point when the clock reaches it, until the schedule ends or ``stopper``
        is asked to stop (:mod:`tempura.scheduler.stopping`). ``on_point`` hears of each time
        point as it is taken; a time point that fails goes to ``on_failure`` and is tried again
        (without it, the failure ends the daemon)."""
        if stopper is None:
            self.runner(method, wait=wait).daemon(on_point=on_point, on_failure=on_failure)
        else:
            self.runner(method, wait=wait).daemon(stopper.sleep, stop=stopper.stopped, on_point=on_point,
                                                  on_failure=on_failure)

    def simulate(self, method: str = "auto", *, check: bool = False, references: References | None = None
                 ) -> MethodRun:
        """Run cycle 0 now, afresh, replaying the data's arrival: each time point lands exactly
        its interval's rows. Deliveries go to the simulation's folder under the job, never to
        the spec's output. ``check``: compare each delivery with ``spark.sql`` on its snapshot;
        ``references``: those snapshots' results, kept across simulations of this spec (e.g.
        one per method) while its sources do not change."""
        from tempura.scheduler.simulation import simulate

        _choice("method", method, METHODS)
        return simulate(self.spark, self.spec, method, self.workdir, check=check, progress=self.progress,
                        references=references, verbose=self.verbose)

    def references(self) -> References:
        """An empty store of this query's reference results, to pass to several
        :meth:`simulate` calls (each snapshot's ``spark.sql`` then runs once for all)."""
        from tempura.scheduler.reference import References

        return References(self.spark, self.spec)

    def repair(self, first: int | None = None, cycle: str | None = None, method: str = "auto",
               wait: float = 0.0) -> RunOutcome:
        """Rebuild damaged cycles from the sources, from the last intact time point (or from
        ``first``): later commits are taken back (kept aside under ``uncommitted/``) and run
        again."""
        return RunOutcome(self.runner(method, wait=wait).repair(cycle, first))

    def force_unlock(self, simulated: str | None = None) -> Holder | None:
        """Remove the job's lock, whoever holds it; returns who held it. Only when that run is
        known to be dead: two writers can commit a wrong result."""
        from tempura.runtime.lock import force_unlock

        folder = self.job_folder(simulated)
        return force_unlock(folder, self._storage(folder))

    def _cost_constants(self, cost: Mapping[str, object] | None) -> tuple[Any, set[str]]:
        """The cost constants (the defaults, then the spec's ``cost``, then ``cost``) and the
        names set by either."""
        from tempura.cost import CostConstants

        pairs: dict[str, object] = dict(self.spec.model.cost or {})
        pairs.update(cost or {})
        return CostConstants.from_mapping(pairs), set(pairs)


def _day(value: dt.date) -> dt.date:
    return value.date() if isinstance(value, dt.datetime) else value


def _shown(value: object) -> str:
    """A time value as a message shows it: ISO dates and timestamps, numbers as written."""
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def _choice(what: str, value: str, known: Sequence[str]) -> None:
    if value not in known:
        raise TempuraError(f"{what} '{value}' is not one of {', '.join(known)}")


__all__ = ["DEFAULT_WORKDIR", "METHODS", "SELECTORS", "PlanChoice", "RunHistory", "RunOutcome", "StandingQuery",
           "Validation"]

