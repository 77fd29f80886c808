"""From a spec to multi-time-point plans: catalog, statistics, arrival model and planner.

:func:`prepare` binds a :class:`~tempura.scheduler.spec.Spec` to everything the planner
needs — the sources as catalog tables (a change-data source shows the query its data columns
only: its op and arrival columns are change metadata), the statistics ``tempura analyze`` stored
(or defaults from file sizes), and the arrival model: what the spec declares per source
(``expected``), else what the data's arrival column shows when Spark can read it, else an even
spread with a note saying so. :func:`for_cycle` adds what a cycle's landed intervals measured
(:mod:`tempura.scheduler.reoptimize`) and what the landing guarantees: the inputs the runner plans
a time point with, and ``tempura plan`` the first one. :func:`plan_spec` plans the query under
one or more methods; :func:`output_mode` is the delivery the spec asks for.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

from tempura.algebra import Query
from tempura.algebra.rebuild import Rebuild
from tempura.catalog import Catalog
from tempura.errors import SparkRejects, SqlError, TempuraError
from tempura.cost.model import CostConstants
from tempura.cost.vector import Objective
from tempura.optimizer import AUTO_MARGIN, Arrival, Optimizer, Resume, plan_methods
from tempura.optimizer.layouts import scans
from tempura.mqo import BudgetError, MqoOptions
from tempura.runtime.executor import analyzed_types, spark_result
from tempura.sql.opaque import opaque_notes
from tempura.runtime.storage import Location, as_location, storage_for
from tempura.scheduler.reoptimize import (Measured, after_history, expected_rows, scaled_lookup, updated,
                                          with_lookahead)
from tempura.scheduler.plan_cache import PlanCache, planning_key
from tempura.scheduler.spec import Cycle, Spec
from tempura.sql import parse_query
from tempura.sql.clock import Call, at_time, chance_calls, reads_clock, time_calls
from tempura.stats import Estimator, StatsCatalog, StatsStore
from tempura.tvr.arrival import ArrivalModel, SourceArrival, measure
from tempura.tvr.bounds import ArrivalBounds, SourceBound
from tempura.tvr.plan import MultiTimePlan
from tempura.tvr.time import TimePoints

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tempura.stats.model import TableStats

    from tempura.runtime.metrics import Meter
    from tempura.runtime.sources import SourceData

DEFAULT_WORKDIR = ".tempura"


@dataclass
class Prepared:
    """A spec bound to its catalog, bound query, statistics and arrival model."""

    spec: Spec
    catalog: Catalog
    query: Query
    estimator: Estimator
    arrival: ArrivalModel
    notes: list[str] = field(default_factory=list)
    bounds: ArrivalBounds | None = None  # of the cycle planned; None: the first cycle's
    cycle: Cycle | None = None  # the cycle planned; None: the first

    @property
    def planned_cycle(self) -> Cycle:
        cycle = self.cycle or self.spec.cycle(0)
        assert cycle is not None
        return cycle

    @property
    def points(self) -> TimePoints:
        """The points the plan covers (:attr:`~tempura.scheduler.spec.Cycle.points`)."""
        return self.planned_cycle.points

    @property
    def objective(self) -> Objective:
        return Objective(self.spec.point_weights(self.planned_cycle))

    def planner(self, constants: CostConstants | None = None) -> Optimizer:
        """The planner of this spec's query, with the spec's cost constants unless ``constants``
        are given."""
        bounds = self.bounds if self.bounds is not None else arrival_bounds(self.spec)
        return Optimizer(self.estimator, Arrival(self.arrival.fraction, self.arrival.insert_only, bounds),
                         constants if constants is not None else self.spec.cost_constants)


def expected_empty(spec: Spec, landed: int = 0, offset: int = 0) -> dict[str, set[int]]:
    """The intervals after the first ``landed`` that a source's declared ``expected`` arrival
    says land no rows (``expected: [1, 0, 0, 0]``: a reference table found at ``t_1``), numbered
    as the cycle's points are (``offset``: the points before its first time point)."""
    out = {}
    for name, source in spec.sources.items():
        if source.expected is not None:
            found = {i + 1 + offset for i, value in enumerate(source.expected.values)
                     if value == 0 and i + 1 + offset > landed}
            if found:
                out[name] = found
    return out


def arrival_bounds(spec: Spec, cycle: Cycle | None = None,
                   empty: Mapping[str, Iterable[int]] | None = None, broken: Iterable[str] = (),
                   landed: int = 0) -> ArrivalBounds:
    """What the landing guarantees of each source's reads in ``cycle`` (the first by default):
    an insert-only source arriving by a column has its rows' arrival values within the read's
    time range (:mod:`tempura.tvr.bounds`); a range query's window and ``late: next`` keep
    only the upper end of a delta's range. ``empty``: the intervals of each source that have
    landed no rows; the intervals after the first ``landed`` that a source declares will land
    none are planned as empty too (the runner plans a time point again when rows land there
    after all). Declared keys and ``arrival.with`` give key domains, except those ``broken``:
    found violated by a landing of this cycle; ``arrival.within`` how far back the keys of a
    referencing column's interval reach."""
    cycle = cycle or spec.cycle(0)
    assert cycle is not None
    window = spec.window is not None
    out = {}
    for name, source in spec.sources.items():
        if source.arrival.column is None or source.changes is not None:
            continue
        out[name] = SourceBound(source.arrival.column, tuple(cycle.points.values),
                                None if window else spec.origin(name, cycle), on_time=spec.model.late == "reject" and not window)
    dropped = set(broken)
    keys = {name: {c: d for c, d in columns.items() if d not in dropped} for name, columns in spec.key_domains().items()}
    reach: dict[str, dict[str, tuple[int, ...]]] = {}
    for (table, column), back in spec.key_reach(cycle).items():
        reach.setdefault(table, {})[column] = back
    lags = {at: (rule.source, rule.column, lag) for rule in spec.key_rules() if rule.domain not in dropped
            for at, lag in rule.within}
    return ArrivalBounds(out, empty, keys, expected_empty(spec, landed, cycle.offset), reach, lags)


def output_mode(spec: Spec) -> str:
    """What each delivery is: the spec's ``output.mode``, else ``snapshot``."""
    return spec.model.output.mode if spec.model.output is not None else "snapshot"


@dataclass(frozen=True)
class Forecast:
    """What a run by the clock knows of the intervals still to come: the source folders hold
    what arrived up to time point ``at``, and ``earlier`` holds, per source, the ``(rows,
    deletions)`` of each interval of the job's last complete cycle (empty on the first cycle)."""

    at: int
    earlier: Mapping[str, Sequence[tuple[int, int]]] = field(default_factory=dict)


def interval_lengths(values: Sequence[object], origin: object | None) -> list[float]:
    """The length of each interval ``(t_{i-1}, t_i]`` of time points ``values`` (seconds for
    dates and timestamps, the difference for numbers); the first interval, without an
    ``origin``, as long as the mean of the others (1 when there are none)."""
    def number(value: object) -> float:
        if isinstance(value, dt.datetime):
            return value.timestamp() if value.tzinfo else value.replace(tzinfo=dt.timezone.utc).timestamp()
        if isinstance(value, dt.date):
            return value.toordinal() * 86400.0
        return float(value)  # type: ignore[arg-type]

    points = [number(v) for v in values]
    lengths = [max(0.0, b - a) for a, b in zip(points, points[1:])]
    if origin is not None:
        first = max(0.0, points[0] - number(origin))
    else:
        first = math.fsum(lengths) / len(lengths) if lengths else 1.0
    out = [first, *lengths]
    return out if math.fsum(out) > 0 else [1.0] * len(out)


def forecast_arrival(spec: Spec, cycle: Cycle, model: ArrivalModel, tables: Callable[[str], TableStats],
                     forecast: Forecast, counts: Mapping[str, Sequence[tuple[int, int]]] | None = None
                     ) -> tuple[ArrivalModel, list[str], list[str]]:
    """The arrival model of a run by the clock, whose source folders hold only what has arrived
    so far: every source without a declared ``expected`` arrival is forecast per interval from
    the job's last complete cycle (its intervals' rows), else at the rate it has arrived at so
    far over every interval (never "nothing more will arrive"): the rows its landed intervals
    ``counts`` measured over their time, or, before any landed, the rows its files hold now over
    the time to ``forecast.at``. Returns the model, the sources forecast and a note each."""
    out, names, notes = model, [], []
    k = model.k
    lengths = interval_lengths(cycle.time_points.values, cycle.origin)[:k]
    if len(lengths) < k:
        lengths += [math.fsum(lengths) / len(lengths)] * (k - len(lengths))
    for name, source in spec.sources.items():
        if source.expected is not None or name not in model:
            continue
        current = model.source(name)
        earlier = [(int(r), int(d)) for r, d in forecast.earlier.get(name, ())]
        stats = tables(name)
        held = None
        if stats.arrival is not None and stats.arrival.get("cycle") == cycle.label and len(stats.arrival["rows"]) == k:
            held = [int(r) for r in stats.arrival["rows"]]  # counted by the first collection's pass
        elif stats.arrival is None:
            held = files_hold(stats, source.arrival.column, cycle, k, spec.origin(name, cycle))
        upto = max(1, min(forecast.at, k))
        counted: list[int] = []  # the deletions counted with the rows taken
        if held is not None and sum(held[upto:]) > 0:  # the files hold rows of intervals to come already
            rows = held
            counted = [int(d) for d in (stats.arrival or {}).get("deletions", [])]
            how = "as the source's files held them when its statistics were first collected"
        elif len(earlier) == k and sum(r for r, _ in earlier) > 0:
            rows = [r for r, _ in earlier]
            counted = [d for _, d in earlier]
            how = "as in the last complete cycle"
        else:
            landed = [int(r) for r, _ in (counts or {}).get(name, ())][:k]
            if landed and math.fsum(lengths[:len(landed)]) > 0:
                present, upto = float(sum(landed)), len(landed)
                how = f"at the rate of the {present:.0f} rows landed by t{upto}"
            else:
                present = max(1.0, stats.rows)
                how = f"at the rate of the {present:.0f} rows its files hold by t{upto}"
            elapsed = math.fsum(lengths[:upto])
            rows = [max(0, round(present * length / elapsed)) for length in lengths]
        total = sum(rows)
        if total <= 0:
            continue
        deletions = current.deletions
        if source.changes is not None and len(counted) == k and sum(counted) > 0:
            # a change feed's deletion shares as counted (none counted yet says nothing of later ones)
            deletions = tuple(min(1.0, d / r) if r else 0.0 for r, d in zip(rows, counted))
        out = out.with_source(name, SourceArrival(tuple(r / total for r in rows), deletions, tuple(rows)))
        names.append(name)
        notes.append(f"source '{name}': intervals forecast {how}: {', '.join(str(r) for r in rows)} rows")
    return out, names, notes


def files_hold(stats: TableStats, column: str | None, cycle: Cycle, k: int, origin: object | None) -> list[int] | None:
    """Rows per interval of ``cycle`` (the first ``k``) that a source's files hold, read from
    its statistics' histogram of the arrival ``column`` (interval 1 from the source's
    ``origin``, or from its first row: a source keeping its history); ``None`` without one."""
    from tempura.stats.relation import fraction_below
    from tempura.stats.values import encode

    found = stats.column(column) if column is not None else None
    if found is None or found.histogram is None or found.kind not in ("date", "timestamp", "number"):
        return None
    histogram, rows = found.histogram, stats.rows - (found.nulls or 0.0)

    def below(value: object) -> float:
        point = encode(value, found.kind)
        return rows * fraction_below(histogram, point, True, found.step) if isinstance(point, float) else 0.0

    values = list(cycle.time_points.values)[:k]
    bounds = [below(origin) if origin is not None else 0.0] + [below(v) for v in values]
    return [max(0, round(b - a)) for a, b in zip(bounds, bounds[1:])]


def for_cycle(base: Prepared, cycle: Cycle, counts: Mapping[str, Sequence[tuple[int, int]]] | None = None,
              broken: Iterable[str] = (), forecast: Forecast | None = None) -> tuple[Prepared, list[str]]:
    """``base`` as the runner plans ``cycle`` with, after the intervals ``counts`` says landed
    (per source, ``(rows, deletions)`` of intervals ``1..c``; none before the first run): the
    arrival model and table rows updated from them (:func:`~tempura.scheduler.reoptimize.updated`,
    whose reasons are returned), sources that declare their rows counted at the declared
    total, the landed empty intervals and the unbroken key domains as bounds. With a
    ``forecast`` (a run by the clock), the intervals not landed are forecast first
    (:func:`forecast_arrival`), and a landed interval's measured rows scale the forecast of
    the ones after it."""
    counts = counts or {}
    spec = base.spec
    measured = {name: Measured(tuple(int(r) for r, _ in rows), tuple(int(d) for _, d in rows))
                for name, rows in counts.items()}
    empty = {name: {i + 1 for i, (r, _) in enumerate(rows) if int(r) == 0} for name, rows in counts.items()}
    through = max((len(rows) for rows in counts.values()), default=0)  # intervals landed
    declared = [name for name, source in spec.sources.items()
                if source.expected is not None and source.expected.kind == "rows"]
    tables = base.estimator.tables
    model, notes = base.arrival, list(base.notes)
    if forecast is not None:
        model, forecast_sources, forecast_notes = forecast_arrival(spec, cycle, model, tables, forecast, counts)
        declared += forecast_sources
        notes = [n for n in notes if not n.endswith(FORECAST_NOTE)] + forecast_notes
    # a range query's sources deliver deletions (the window's leaving rows): arrival_model
    # says so, and measured ones count them
    if cycle.endless:
        arrival, rows, reasons = endless_arrival(model, cycle, tables, measured, declared)
    else:
        arrival, rows, reasons = updated(model, tables, measured, declared)
    prepared = Prepared(spec, base.catalog, base.query, Estimator(scaled_lookup(tables, rows)), arrival,
                        notes, arrival_bounds(spec, cycle, empty, broken, through), cycle)
    return prepared, reasons


def run_overhead(prepared: Prepared, constants: CostConstants | None = None) -> list[float]:
    """The model's cost (ns) of what a run does around its plan at each time point, the same
    whatever the plan: landing each source's interval (reading its new files, writing the
    landing, with a stage each) and merging its statistics (no data read). What the plan's
    own reads of a landing cost is the plan's."""
    constants = constants or prepared.spec.cost_constants
    k = prepared.points.k
    out = [0.0] * k
    for name in prepared.arrival.sources:
        stats = prepared.estimator.tables(name)
        width = stats.bytes / stats.rows if stats.rows > 0 else 0.0
        for i, rows in enumerate(expected_rows(prepared.arrival.source(name), stats.rows)[:k]):
            out[i] += rows * width * (constants.dfs_read + constants.dfs_write) + rows * constants.cpu + 2 * constants.stage
    return out


def expected_interval(prepared: Prepared, index: int) -> dict[str, float]:
    """Per source, the rows the plan of ``prepared`` expects interval ``index`` to land (the
    forecast a run by the clock records, to set against what lands)."""
    out = {}
    for name in prepared.arrival.sources:
        expected = expected_rows(prepared.arrival.source(name), prepared.estimator.tables(name).rows)
        if 1 <= index <= len(expected):
            out[name] = expected[index - 1]
    return out


def endless_arrival(model: ArrivalModel, cycle: Cycle, tables: Callable[[str], TableStats],
                    measured: Mapping[str, Measured], declared: Sequence[str]) -> tuple[ArrivalModel, dict[str, float], list[str]]:
    """The arrival model over an endless cycle's points: its time points' intervals as
    :func:`~tempura.scheduler.reoptimize.updated` has them after ``measured`` (the counts of the
    points committed, numbered as the points are), the lookahead's expected like an average
    interval, and, in a carried cycle, the history taken over at the carry in interval 1 (its
    rows measured there)."""
    ahead = ArrivalModel(model.k + 1, [(name, with_lookahead(model.source(name))) for name in model.sources])
    own = {name: Measured(m.rows[cycle.offset:], m.deletions[cycle.offset:]) for name, m in measured.items()}
    arrival, rows, reasons = updated(ahead, tables, {n: m for n, m in own.items() if m.rows}, declared)
    if not cycle.carried:
        return arrival, rows, reasons
    out = ArrivalModel(arrival.k + 1)
    for name in arrival.sources:
        source = arrival.source(name)
        cycle_rows = rows.get(name, math.fsum(expected_rows(source, tables(name).rows)))
        seen = measured.get(name)
        history = (seen.rows[0], seen.deletions[0]) if seen is not None and seen.rows else (0, 0)
        extended, rows[name] = after_history(source, cycle_rows, history)
        out = out.with_source(name, extended)
    return out, rows, reasons


def hidden_columns(spec: Spec, table: str) -> set[str]:
    """Columns of ``table`` the query does not see: a CDC source's op and arrival columns."""
    source = spec.sources[table]
    if source.changes is None or source.arrival.column is None:
        return set()
    return {source.changes.op_column.lower(), source.arrival.column.lower()}


def job_folder(workdir: str | Location, spec: Spec, simulate_method: str | None = None) -> Location:
    """Where a job keeps its statistics, cycles and history; a simulation of one method keeps its
    cycles and history apart (the statistics of the sources are the job's)."""
    from tempura.runtime.store import SIMULATIONS

    root = as_location(workdir) / "jobs" / spec.name
    return root / f"{SIMULATIONS}{simulate_method}" if simulate_method else root


def stale_sources(spec: Spec, stats_root: Location, spark: SparkSession | None = None) -> list[str]:
    """The sources of ``spec`` whose files have no statistics under ``stats_root``, or changed
    since they were collected (a source that cannot be listed counts as stale when it has none).
    Statistics a job keeps from its landings (:mod:`tempura.stats.sketch`) are never stale."""
    from tempura.stats.store import file_state

    store = StatsStore(stats_root, storage_for(stats_root, spark))
    stale = []
    read = set(spec.read_sources)
    for name, table in spec.catalog().tables.items():
        if name not in read:
            continue  # the query reads no row of it: never analysed
        stored = store.load(name)
        if stored is not None and stored.sketch is not None:
            continue  # kept up to date from each landed interval: never analysed whole again
        state = file_state(table, spark)
        if stored is None or (state is not None and state.digest != stored.fingerprint):
            stale.append(name)
    return stale


def analyze_sources(spark: SparkSession, spec: Spec, stats_root: Location, stale: list[str]) -> None:
    """Collect statistics of the ``stale`` sources into ``stats_root``."""
    from pyspark.errors import PySparkException

    from tempura.runtime.executor import spark_error_message
    from tempura.stats.collect import analyze_tables

    if stale:
        try:
            analyze_tables(spark, spec.catalog(), stale, StatsStore(stats_root, storage_for(stats_root, spark)))
        except PySparkException as error:  # e.g. a source folder without a data file
            raise TempuraError(f"{spec.path}: cannot collect the statistics of {', '.join(stale)}: "
                               f"{spark_error_message(error)}") from None


def prepare_job(spec: Spec, stats_root: Location, spark: SparkSession | None = None,
                start_spark: Callable[[], SparkSession] | None = None,
                progress: Callable[[str, int, int], None] | None = None, by_clock: bool = False,
                meter: Meter | None = None) -> Prepared:
    """``spec`` bound for planning, as its job plans it: with the statistics stored under
    ``stats_root``, collected first through Spark for a source whose files have none there, or
    changed since. Without ``spark``, a session is started (``start_spark``) only when planning
    must read data: a source without a declared schema or arrival, or statistics to collect
    (of the sources listable without Spark). ``by_clock``: a run by the clock, whose sources
    hold only what has arrived so far: no statistics are collected here (the runner sketches a
    source the job has none of, in one pass, and keeps them from its landings), and the arrival
    is forecast, not measured (:func:`forecast_arrival`). ``meter``: the run's, which counts
    the Spark jobs of each purpose (statistics, arrival, schema)."""
    from tempura.stats.store import file_state

    if by_clock:
        if spark is None and start_spark is not None and spec.catalog().needs_spark_for_schemas:
            spark = start_spark()
        return prepare(spec, spark, stats_root, measure_data=False, meter=meter, kept_statistics=True)
    stale = stale_sources(spec, stats_root, spark)
    if spark is None:
        readable = {name for name, table in spec.catalog().tables.items() if file_state(table) is not None}
        stale = [name for name in stale if name in readable]
        if (stale or needs_spark(spec)) and start_spark is not None:
            spark = start_spark()
    if stale and spark is not None:
        if progress is not None:
            progress(f"statistics of {', '.join(stale)}", 0, 1)
        with measured(meter, f"analyze {', '.join(stale)}", "statistics"):
            analyze_sources(spark, spec, stats_root, stale)
    return prepare(spec, spark, stats_root, meter=meter)


def accepted_by_spark(spec: Spec, spark: SparkSession, schemas: Mapping[str, Mapping[str, str]]) -> str:
    """Spark's analysis of the spec's query over its sources' columns (its result ``StructType``
    as JSON: what the result's columns are called and typed), or the query is the user's error:
    one line with Spark's reason, at its line and column in the query. (A plan of an accepted
    query that Spark rejects is then tempura's fault.)"""
    try:
        return spark_result(spark, spec.sql, spec.dialect, schemas)
    except SparkRejects as error:
        raise spec.sql_error(error.detail, error.line, error.column) from None


def recompute_only(spec: Spec) -> str | None:
    """Why the spec's query is recomputed at every time point, or ``None``: it reads the clock
    (each time point's own time, :mod:`tempura.sql.clock`), or chance where the spec's
    ``nondeterministic: recompute`` allows it. Chance the spec does not allow is an error naming
    the call."""
    chance = chance_calls(spec.sql, spec.dialect)
    if chance and spec.model.nondeterministic != "recompute":
        first = chance[0]
        raise spec.sql_error(f"{first.name}() gives another value at every run, so no result of the query can be "
                             "maintained or checked (set nondeterministic: recompute in the spec to recompute it at "
                             "every time point)", first.line, first.column)
    clock = time_calls(spec.planning_sql, spec.dialect)  # a window relative to now kept by the range is not recomputed
    if clock and not all(isinstance(v, dt.datetime) for v in spec.time_points().values):
        raise spec.sql_error(f"{clock[0].name}() is the time point's time, but the schedule's time points are not "
                             "timestamps", clock[0].line, clock[0].column)

    def named(calls: list[Call]) -> str:
        out = []
        for call in calls:
            found = spec.query_position(call.line, call.column)
            out.append(f"{call.name}()" + (f" at line {found[1]}, column {found[2]}" if found is not None else ""))
        return ", ".join(out)

    reasons = []
    if clock:
        reasons.append(f"the query reads the clock ({named(clock)}), which is each time point's own time")
    if chance:
        reasons.append(f"the query reads chance ({named(chance)}), as nondeterministic: recompute allows")
    return "; ".join(reasons) or None


def clock_stopped(plan: MultiTimePlan) -> MultiTimePlan:
    """``plan`` with the clock in each fragment stopped at the fragment's time point."""
    fragments = []
    for fragment in plan.fragments:
        now = plan.time_points.values[fragment.time - 1]
        assert isinstance(now, dt.datetime)
        stop = Rebuild(expression=lambda e, now=now: at_time(e, now) if reads_clock(e) else e)  # type: ignore[misc]
        fragments.append(stop.value(fragment))
    return dataclasses.replace(plan, fragments=fragments)


def measured(meter: Meter | None, label: str, purpose: str) -> contextlib.AbstractContextManager[object]:
    """``meter``'s block of ``purpose`` (nothing without a meter)."""
    return meter.measure(label, purpose=purpose) if meter is not None else contextlib.nullcontext()


def needs_spark(spec: Spec) -> bool:
    """Whether planning must read the data: a source without a declared schema or arrival."""
    return any(s.declared_schema is None or s.expected is None for s in spec.sources.values())


def prepare(spec: Spec, spark: SparkSession | None = None, workdir: str | Location = DEFAULT_WORKDIR,
            measure_data: bool = True, meter: Meter | None = None, kept_statistics: bool = False) -> Prepared:
    """Everything the planner needs for ``spec``; ``spark`` reads schemas and measures arrival
    where the spec does not declare them (unless ``measure_data`` is false: see
    :func:`arrival_model`). ``kept_statistics``: the statistics are a job's, kept from its
    landings (see :class:`~tempura.stats.store.StatsCatalog`)."""
    catalog = spec.catalog()
    with measured(meter, "the sources' columns", "schema"):
        all_schemas = catalog.schemas(spark)
    schemas = {t: {c: ty for c, ty in cols.items() if c not in hidden_columns(spec, t)} for t, cols in all_schemas.items()}
    result = accepted_by_spark(spec, spark, schemas) if spark is not None else None
    try:
        query = parse_query(spec.planning_sql, schemas, spec.dialect, analyzed_types(spark) if spark is not None else None,
                            result, analyze=(lambda text: spark_result(spark, text, "spark", schemas)) if spark is not None else None)
    except SqlError as error:
        raise spec.sql_error(error.detail, error.line, error.column) from None
    root = as_location(workdir)
    stats = StatsCatalog(catalog, StatsStore(root, storage_for(root, spark)), all_schemas, spark, kept=kept_statistics)
    with measured(meter, "arrival of the sources", "arrival"):
        arrival, notes = arrival_model(spec, spark, measure_data)
    return Prepared(spec, catalog, query, Estimator(stats), arrival, notes)


FORECAST_NOTE = "forecast when each time point is planned"


def arrival_model(spec: Spec, spark: SparkSession | None, measure_data: bool = True) -> tuple[ArrivalModel, list[str]]:
    """The spec's declared arrival, completed by measuring the data (or an even spread).
    ``measure_data=False``: the data's files hold only what has arrived so far (a run by the
    clock), so nothing is measured: the runner forecasts the sources without a declared
    arrival when it plans (:func:`forecast_arrival`)."""
    model = spec.expected_arrival()
    time_points = spec.time_points()
    notes: list[str] = []
    for name, source in spec.sources.items():
        if name in model:
            continue
        if not measure_data:
            model = model.with_source(name, SourceArrival.uniform(time_points.k) if source.changes is None
                                      else SourceArrival.from_fractions([1 / time_points.k] * time_points.k, deletes=True))
            notes.append(f"source '{name}': no expected arrival declared: {FORECAST_NOTE}")
            continue
        if spark is not None and source.arrival.column is not None:
            frame = spec.catalog().tables[name].reader(spark)
            op = source.changes.op_column if source.changes else None
            deletes = tuple(source.changes.delete_values) if source.changes else ("D",)
            measured = measure(spark, frame, source.arrival.column, time_points, op, deletes)
            if source.changes is not None and measured.insert_only:
                # a change feed whose files hold no deletion yet may still deliver some: never
                # insert-only (the share is unknown), or a MIN or MAX would be merged over them
                measured = SourceArrival(measured.fractions, None, measured.rows)
            model = model.with_source(name, measured)
        else:
            model = model.with_source(name, SourceArrival.uniform(time_points.k) if source.changes is None
                                      else SourceArrival.from_fractions([1 / time_points.k] * time_points.k, deletes=True))
            why = "arrival by file" if source.arrival.column is None else "no data read"
            notes.append(f"source '{name}': no expected arrival declared and {why}: assumed evenly spread")
    if spec.window is not None:  # a range query's window lands leaving rows again, as deletions
        for name in spec.sources:
            model = model.with_source(name, SourceArrival(model.source(name).fractions, None))
    return model, notes


def source_data(spec: Spec, spark: SparkSession) -> dict[str, SourceData]:
    """Every source's rows with its arrival and change columns, for the executor."""
    from tempura.runtime.sources import SourceData

    catalog = spec.catalog()
    values = spec.time_points().values
    out = {}
    for name, source in spec.sources.items():
        if source.arrival.column is None:
            raise TempuraError(f"{spec.path}: sources.{name}: arrives by file, so only the runner (tempura run) replays it")
        frame = catalog.tables[name].reader(spark)
        changes = source.changes
        out[name] = SourceData(
            name, frame, source.arrival.column,
            changes.op_column if changes else None,
            tuple(changes.delete_values) if changes else ("D",),
            tuple(values),
        )
    return out


def plan_spec(
    prepared: Prepared,
    methods: Iterable[str],
    disabled: Iterable[str] = (),
    output: str = "snapshot",
    constants: CostConstants | None = None,
    mqo: MqoOptions | None = None,
    errors: dict[str, TempuraError] | None = None,
    resume: Resume | None = None,
    cache: PlanCache | None = None,
) -> dict[str, MultiTimePlan]:
    """Plans of the spec's query under each of ``methods`` (see :func:`plan_methods`), their states
    within the spec's ``state_budget`` unless ``mqo`` gives one. A method with no plan within the
    budget is left out, its error (naming the spec's ``state_budget`` key) put in ``errors``.
    With ``cache``, a planning whose inputs are exactly an earlier one's takes its plans
    (:mod:`tempura.scheduler.plan_cache`)."""
    methods = list(methods)
    key = planning_key(planning_inputs(prepared, methods, disabled, output, constants, mqo, resume)) if cache else None
    found = cache.get(key) if cache is not None else None
    if found is not None:
        plans, failed_here = found
    else:
        failed_here = {}
        plans = _plan_spec(prepared, methods, disabled, output, constants, mqo, failed_here, resume)
        if cache is not None:
            cache.put(key, (plans, failed_here))
    if errors is not None:
        errors.update(failed_here)
    return plans


def planning_inputs(prepared: Prepared, methods: Sequence[str], disabled: Iterable[str], output: str,
                    constants: CostConstants | None, mqo: MqoOptions | None, resume: Resume | None) -> dict[str, object]:
    """Everything :func:`plan_spec` plans from (the key of :mod:`tempura.scheduler.plan_cache`)."""
    spec = prepared.spec
    tables = sorted({scan.table for scan in scans(prepared.query.plan)})
    return {
        "sql": spec.sql, "query": prepared.query, "methods": list(methods), "disabled": sorted(disabled),
        "output": output, "points": prepared.points, "objective": prepared.objective,
        "arrival": prepared.arrival, "bounds": prepared.bounds if prepared.bounds is not None else arrival_bounds(spec),
        "statistics": {name: prepared.estimator.tables(name) for name in tables},
        "constants": constants if constants is not None else spec.cost_constants, "mqo": mqo,
        "budget": spec.state_budget, "budget_key": spec.budget_key, "margin": spec.margin, "resume": resume,
        "cycle": prepared.planned_cycle, "notes": list(prepared.notes),
    }


def _plan_spec(prepared: Prepared, methods: list[str], disabled: Iterable[str], output: str,
               constants: CostConstants | None, mqo: MqoOptions | None, errors: dict[str, TempuraError],
               resume: Resume | None) -> dict[str, MultiTimePlan]:
    spec = prepared.spec
    options = mqo or MqoOptions()
    if options.budget is None and spec.state_budget is not None:
        options = dataclasses.replace(options, budget=spec.state_budget)
    failed: dict[str, TempuraError] = {}

    def located(error: TempuraError, method: str) -> TempuraError:
        if isinstance(error, BudgetError) and spec.budget_key and options.budget == spec.state_budget:
            return BudgetError(f"{spec.budget_key}: method {method}: {error}")
        return error

    if prepared.arrival.k != prepared.points.k:  # an endless cycle's points, not yet bound to its arrival
        prepared, _ = for_cycle(prepared, prepared.planned_cycle)
    recomputed = recompute_only(spec)
    asked = methods
    if recomputed is not None:  # the query reads the clock, or chance: recomputed at every time point
        refused = [m for m in methods if m not in ("auto", "batch")]
        for method in refused:
            failed[method] = TempuraError(f"{spec.path}: method {method}: {recomputed}; it is recomputed at every "
                                          "time point (method batch, which auto takes)")
        if len(refused) == len(methods):
            raise failed[refused[0]]
        asked = ["batch"]
    try:
        margin = AUTO_MARGIN if spec.margin is None else spec.margin
        plans = plan_methods(prepared.planner(constants), prepared.query, spec.sql, prepared.points, prepared.objective,
                             asked, disabled, output, options, failed, resume, margin)
    except TempuraError as error:
        raise located(error, next(iter(failed), "auto")) from None
    if recomputed is not None:
        batch = plans.pop("batch", None)
        if batch is not None:
            batch = clock_stopped(batch)
            batch.notes.append(f"{recomputed}: recomputed at every time point")
            plans = {m: dataclasses.replace(batch, method=m) if m == "auto" else batch
                     for m in methods if m in ("auto", "batch")}
    errors.update({method: located(error, method) for method, error in failed.items()})
    cycle = prepared.planned_cycle
    endless = []
    if cycle.carried:
        endless.append(f"t1 is the carry: the history and the states of the cycle before, taken over at {cycle.origin}")
    if cycle.lookahead is not None:
        endless.append(f"t{cycle.points.k} is the next cycle's first time point ({cycle.lookahead}): planned so that what "
                       f"the states kept at t{cycle.last} save there is weighed, run in the next cycle")
    opaque = opaque_notes(prepared.query.plan)
    for plan in plans.values():
        plan.notes[:0] = prepared.notes + endless + opaque
    return plans
