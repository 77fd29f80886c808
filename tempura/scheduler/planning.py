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

import dataclasses
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

from tempura.algebra import Query
from tempura.catalog import Catalog
from tempura.errors import SqlError, TempuraError
from tempura.cost.model import CostConstants
from tempura.cost.vector import Objective
from tempura.optimizer import AUTO_MARGIN, Arrival, Optimizer, Resume, plan_methods
from tempura.mqo import BudgetError, MqoOptions
from tempura.runtime.storage import Location, as_location, storage_for
from tempura.scheduler.reoptimize import (Measured, after_history, expected_rows, scaled_lookup, updated,
                                          with_lookahead)
from tempura.scheduler.spec import Cycle, Spec
from tempura.sql import parse_query
from tempura.stats import Estimator, StatsCatalog, StatsStore
from tempura.tvr.arrival import ArrivalModel, SourceArrival, measure
from tempura.tvr.bounds import ArrivalBounds, SourceBound
from tempura.tvr.plan import MultiTimePlan
from tempura.tvr.time import TimePoints

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tempura.stats.model import TableStats

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


def for_cycle(base: Prepared, cycle: Cycle, counts: Mapping[str, Sequence[tuple[int, int]]] | None = None,
              broken: Iterable[str] = ()) -> tuple[Prepared, list[str]]:
    """``base`` as the runner plans ``cycle`` with, after the intervals ``counts`` says landed
    (per source, ``(rows, deletions)`` of intervals ``1..c``; none before the first run): the
    arrival model and table rows updated from them (:func:`~tempura.scheduler.reoptimize.updated`,
    whose reasons are returned), sources that declare their rows counted at the declared
    total, the landed empty intervals and the unbroken key domains as bounds."""
    counts = counts or {}
    spec = base.spec
    measured = {name: Measured(tuple(int(r) for r, _ in rows), tuple(int(d) for _, d in rows))
                for name, rows in counts.items()}
    empty = {name: {i + 1 for i, (r, _) in enumerate(rows) if int(r) == 0} for name, rows in counts.items()}
    through = max((len(rows) for rows in counts.values()), default=0)  # intervals landed
    declared = [name for name, source in spec.sources.items()
                if source.expected is not None and source.expected.kind == "rows"]
    tables = base.estimator.tables
    # a range query's sources deliver deletions (the window's leaving rows): arrival_model
    # says so, and measured ones count them
    if cycle.endless:
        arrival, rows, reasons = endless_arrival(base.arrival, cycle, tables, measured, declared)
    else:
        arrival, rows, reasons = updated(base.arrival, tables, measured, declared)
    prepared = Prepared(spec, base.catalog, base.query, Estimator(scaled_lookup(tables, rows)), arrival,
                        list(base.notes), arrival_bounds(spec, cycle, empty, broken, through), cycle)
    return prepared, reasons


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
    since they were collected (a source that cannot be listed counts as stale when it has none)."""
    from tempura.stats.store import file_state

    store = StatsStore(stats_root, storage_for(stats_root, spark))
    stale = []
    for name, table in spec.catalog().tables.items():
        stored = store.load(name)
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
                progress: Callable[[str, int, int], None] | None = None) -> Prepared:
    """``spec`` bound for planning, as its job plans it: with the statistics stored under
    ``stats_root``, collected first through Spark for a source whose files have none there, or
    changed since. Without ``spark``, a session is started (``start_spark``) only when planning
    must read data: a source without a declared schema or arrival, or statistics to collect
    (of the sources listable without Spark)."""
    from tempura.stats.store import file_state

    stale = stale_sources(spec, stats_root, spark)
    if spark is None:
        readable = {name for name, table in spec.catalog().tables.items() if file_state(table) is not None}
        stale = [name for name in stale if name in readable]
        if (stale or needs_spark(spec)) and start_spark is not None:
            spark = start_spark()
    if stale and spark is not None:
        if progress is not None:
            progress(f"statistics of {', '.join(stale)}", 0, 1)
        analyze_sources(spark, spec, stats_root, stale)
    return prepare(spec, spark, stats_root)


def needs_spark(spec: Spec) -> bool:
    """Whether planning must read the data: a source without a declared schema or arrival."""
    return any(s.schema_ is None or s.expected is None for s in spec.sources.values())


def prepare(spec: Spec, spark: SparkSession | None = None, workdir: str | Location = DEFAULT_WORKDIR) -> Prepared:
    """Everything the planner needs for ``spec``; ``spark`` reads schemas and measures arrival
    where the spec does not declare them."""
    catalog = spec.catalog()
    all_schemas = catalog.schemas(spark)
    schemas = {t: {c: ty for c, ty in cols.items() if c not in hidden_columns(spec, t)} for t, cols in all_schemas.items()}
    try:
        query = parse_query(spec.sql, schemas, spec.dialect)
    except SqlError as error:
        where = "query_file " + str(spec.model.query_file) if spec.model.query_file else "query"
        raise SqlError(f"{spec.path}: {where}: {error.detail}", error.line, error.column) from None
    root = as_location(workdir)
    stats = StatsCatalog(catalog, StatsStore(root, storage_for(root, spark)), all_schemas, spark)
    arrival, notes = arrival_model(spec, spark)
    return Prepared(spec, catalog, query, Estimator(stats), arrival, notes)


def arrival_model(spec: Spec, spark: SparkSession | None) -> tuple[ArrivalModel, list[str]]:
    """The spec's declared arrival, completed by measuring the data (or an even spread)."""
    model = spec.expected_arrival()
    time_points = spec.time_points()
    notes: list[str] = []
    for name, source in spec.sources.items():
        if name in model:
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
) -> dict[str, MultiTimePlan]:
    """Plans of the spec's query under each of ``methods`` (see :func:`plan_methods`), their states
    within the spec's ``state_budget`` unless ``mqo`` gives one. A method with no plan within the
    budget is left out, its error (naming the spec's ``state_budget`` key) put in ``errors``."""
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
    try:
        margin = AUTO_MARGIN if spec.margin is None else spec.margin
        plans = plan_methods(prepared.planner(constants), prepared.query, spec.sql, prepared.points, prepared.objective,
                             list(methods), disabled, output, options, failed, resume, margin)
    except TempuraError as error:
        raise located(error, next(iter(failed), "auto")) from None
    if errors is not None:
        errors.update({method: located(error, method) for method, error in failed.items()})
    cycle = prepared.planned_cycle
    endless = []
    if cycle.carried:
        endless.append(f"t1 is the carry: the history and the states of the cycle before, taken over at {cycle.origin}")
    if cycle.lookahead is not None:
        endless.append(f"t{cycle.points.k} is the next cycle's first time point ({cycle.lookahead}): planned so that what "
                       f"the states kept at t{cycle.last} save there is weighed, run in the next cycle")
    for plan in plans.values():
        plan.notes[:0] = prepared.notes + endless
    return plans
