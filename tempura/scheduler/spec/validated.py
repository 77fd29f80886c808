"""A validated spec (:class:`Spec`): the model, the spec file's path and the query text, and the
values derived from them: time points, weights, sources as catalog tables, key rules, the
expected arrival, the output's location."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from tempura.catalog import Catalog, TableSource
from tempura.errors import SqlError
from tempura.cost.model import CostConstants
from tempura.scheduler.spec.model import DEADLINE_EPSILON, SourceSpec, SpecFile
from tempura.scheduler.spec.paths import local_path, resolved_location
from tempura.scheduler.spec.schedule import (
    Cycle,
    cycle_index_at,
    cycle_values,
    deliver_indices,
)
from tempura.tvr.arrival import ArrivalModel
from tempura.tvr.bounds import KeyRule, reach
from tempura.tvr.time import TimePoints, TimeValue
from tempura.yamlfile import KeyPath, key_text

if TYPE_CHECKING:
    from tempura.sql.clock import NowWindow


@dataclass(frozen=True)
class Spec:
    """A validated spec: the model, the spec file's path and the query text."""

    model: SpecFile
    path: Path
    sql: str
    budget_key: str | None = None  # where state_budget is set ("file, line N: state_budget"), for errors
    where: tuple[tuple[str, str], ...] = ()  # key path -> "file, line N: key path", for validate's messages
    home: Path | None = None  # the spec file's folder, absolute, as of loading (the working folder may change)
    query_origin: tuple[int, int] | None = None  # where an inline query's text starts in the file (line, column)
    query_line: int | None = None  # the line of the query key (query, or query_file)

    def query_position(self, line: int | None, column: int | None) -> tuple[str, int, int] | None:
        """Where a position of the query text is as the user finds it: the file, and the line
        and column there (an inline query's position in the spec file; the query file's own);
        ``None`` when it cannot be said (no position, or a folded YAML scalar)."""
        if line is None or column is None:
            return None
        if self.model.query_file is not None:
            return str(local_path(self.model.query_file, self.folder)), line, column
        if self.query_origin is None:
            return None
        # a literal block's lines are all indented alike; a one-line scalar has one line
        return str(self.path), self.query_origin[0] + line - 1, self.query_origin[1] + column - 1

    def sql_error(self, detail: str, line: int | None = None, column: int | None = None) -> SqlError:
        """An error in the query at its ``line`` and ``column``, located as the user finds it
        (:meth:`query_position`): ``spec.yaml, line 9, column 21: query: …``."""
        found = self.query_position(line, column)
        key = "query_file" if self.model.query_file is not None else "query"
        if found is not None:
            file, file_line, file_column = found
            return SqlError.located(f"{file}, line {file_line}, column {file_column}: {key}", detail, file_line,
                                    file_column)
        key_line = f", line {self.query_line}" if self.query_line is not None else ""
        where = f"{self.path}{key_line}: {key}" + (f" (line {line}, column {column} of the query)"
                                                   if line is not None and column is not None else "")
        return SqlError.located(where, detail, line, column)

    @property
    def state_budget(self) -> float | None:
        """The most bytes of kept states alive at once, if the spec limits them."""
        return self.model.state_budget

    @property
    def max_catch_up(self) -> int:
        """How many cycles a normal run may catch up on (``max_catch_up``, at least 1)."""
        return self.model.max_catch_up

    @property
    def allow_empty(self) -> bool:
        """Whether an empty delivery may replace a non-empty one (``allow_empty``)."""
        return self.model.allow_empty

    @property
    def folder(self) -> Path:
        """The spec file's folder: relative paths in the spec start here."""
        return self.home if self.home is not None else self.path.resolve().parent

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def dialect(self) -> str:
        """The sqlglot dialect of the query text."""
        return self.model.dialect

    @property
    def sources(self) -> Mapping[str, SourceSpec]:
        """Per-source settings, by lower-case source name (as the catalog names tables)."""
        return {name.lower(): source for name, source in self.model.sources.items()}

    @property
    def read_sources(self) -> Mapping[str, SourceSpec]:
        """:attr:`sources` but the :attr:`unread_sources`: those a run lands and analyses."""
        unread = {name.lower() for name in self.unread_sources}
        return {name: source for name, source in self.sources.items() if name not in unread}

    @cached_property
    def unread_sources(self) -> tuple[str, ...]:
        """The declared sources the query reads no row of, and none that it reads lands with
        (``arrival.with``)."""
        from tempura.sql.parse import tables_named

        named = tables_named(self.sql, self.model.dialect)
        if named is None:
            return ()  # the query does not parse: loading it says so
        read = {name.lower() for name in self.model.sources if name.lower() in named}
        for name, source in self.model.sources.items():
            if name.lower() in read:
                read |= {target.lower() for target in source.arrival.with_}
        return tuple(name for name in self.model.sources if name.lower() not in read)

    @cached_property
    def now_window(self) -> NowWindow | None:
        """The query's window relative to now that the schedule's ``range`` keeps, if it has one
        (:func:`~tempura.sql.clock.now_window`): the planner reads the query without it."""
        from tempura.sql.clock import now_window

        ranged = self.model.schedule.range
        if ranged is None:
            return None
        arrival = {name: source.arrival.column for name, source in self.sources.items()
                   if source.arrival.column is not None}
        window = now_window(self.sql, self.dialect, arrival)
        return window if window is not None and window.length == ranged.length else None

    @property
    def planning_sql(self) -> str:
        """The query as the planner reads it: without a window relative to now that the range
        keeps (:attr:`now_window`), else as written."""
        return self.now_window.sql if self.now_window is not None else self.sql

    def time_points(self) -> TimePoints:
        """The cycle's time points, with the indices whose results are delivered."""
        return self.cycle(0).time_points  # type: ignore[union-attr]

    def cycle(self, n: int) -> Cycle | None:
        """Cycle ``n`` (0-based) of the schedule, or ``None`` if the schedule has no such cycle."""
        found = cycle_values(self.model.schedule, n)
        if found is None:
            return None
        origin, values = found
        schedule = self.model.schedule
        points = TimePoints(values, deliver_indices(schedule.deliver, len(values)))
        if not schedule.endless:
            return Cycle(n, origin, points)
        after = cycle_values(schedule, n + 1)
        return Cycle(n, origin, points, True, after[1][0] if after is not None else None)

    def origin(self, source: str, cycle: Cycle) -> TimeValue | None:
        """Where ``source``'s rows start to count in ``cycle``: the cycle's origin ``t_0`` for a
        source that starts afresh with each cycle (the schedule's ``start`` on an endless
        schedule), ``None`` (every row up to ``t_1`` lands in interval 1) for one that keeps its
        history (``history: keep``)."""
        if self.sources[source.lower()].keeps_history:
            return None
        return self.cycle(0).origin if self.model.schedule.endless else cycle.origin  # type: ignore[union-attr]

    @property
    def window(self) -> dt.timedelta | int | None:
        """A range query's window length, or ``None``."""
        window = self.model.schedule.range
        return window.length if window is not None else None

    @property
    def cost_constants(self) -> CostConstants:
        """The cost model's constants for planning this query: the defaults, with the spec's
        ``cost`` overrides."""
        return CostConstants.from_mapping(self.model.cost)

    @property
    def margin(self) -> float | None:
        """The share of recomputation's objective an incremental plan must save for ``auto`` to
        take it; ``None``: the planner's default."""
        return self.model.objective.margin

    def weights(self) -> tuple[float, ...]:
        """The objective's weight per time point: ``Σ w_i · c_i`` is minimised."""
        objective = self.model.objective
        if objective.weights is not None:
            return tuple(objective.weights)
        k = self.time_points().k
        if objective.preset == "total":
            return (1.0,) * k
        return (DEADLINE_EPSILON,) * (k - 1) + (1.0,)

    def point_weights(self, cycle: Cycle) -> tuple[float, ...]:
        """The objective's weight per point ``cycle`` is planned over (:attr:`Cycle.points`): the
        time points' weights; on an endless schedule, the carry weighs as the first time point
        (it is committed before any planning of the cycle: no work is placed there) and the
        lookahead as the heaviest, the next cycle's work standing in for the next deadline."""
        weights = self.weights()
        if not cycle.endless:
            return weights
        before = weights[:1] if cycle.carried else ()
        after = (max(weights),) if cycle.lookahead is not None else ()
        return (*before, *weights, *after)

    def location(self, source: str) -> str:
        """Where ``source``'s files are: a URI as given, a path resolved from the spec's folder;
        ``""`` for a catalog table (its location is the catalog's: :func:`tempura.catalog.table_files`)."""
        path = self.sources[source.lower()].path
        return resolved_location(path, self.folder) if path is not None else ""

    def output_location(self) -> str | None:
        """Where deliveries go (``output.path``): a URI as given, a path resolved from the spec's
        folder; ``None`` when the spec has no ``output``, or delivers to a table."""
        output = self.model.output
        return resolved_location(output.path, self.folder) if output is not None and output.path is not None else None

    def cycle_index_at(self, moment: TimeValue) -> int | None:
        """The cycle spanning ``moment`` (:func:`cycle_index_at`), computed, not searched for."""
        return cycle_index_at(self.model.schedule, moment)

    def missing_paths(self) -> list[str]:
        """One message per source path (local, or a ``file:`` URI) and ``query_file`` that does
        not exist now: ``file, line N: sources.x.path: /abs/x does not exist``. Other URIs are
        the cluster's to check."""
        keys = dict(self.where)
        paths: list[tuple[KeyPath, str]] = [(("sources", name, "path"), source.path)
                                            for name, source in self.model.sources.items() if source.path is not None]
        if self.model.query_file is not None:
            paths.append((("query_file",), self.model.query_file))
        out = []
        for key_path, path in paths:
            local = local_path(path, self.folder)
            if local is not None and not local.exists():
                key = key_text(key_path)
                out.append(f"{keys.get(key, f'{self.path}: {key}')}: {local} does not exist")
        return out

    def located(self, key: str) -> str:
        """``file, line N: key`` for a key the spec sets (a source's ``path``, ``query_file``,
        ``schedule``): where a message about it starts."""
        return dict(self.where).get(key, f"{self.path}: {key}")

    def catalog(self) -> Catalog:
        """The sources as catalog tables, named in lower case."""
        tables = {}
        for name, source in self.sources.items():
            schema = {c.lower(): t.lower() for c, t in source.declared_schema.items()} if source.declared_schema else None
            tables[name] = TableSource(name, self.location(name), source.format, dict(source.options), schema,
                                       source.table)
        return Catalog(tables, origin=str(self.path))

    def key_rules(self) -> list[KeyRule]:
        """The keys the spec declares (``key``), each with the columns that land with it
        (``arrival.with``); names in lower case, domains ``"source.column"``."""
        sources = self.sources
        out = []
        for name, source in sources.items():
            if source.key is None:
                continue
            referencing = tuple((other, column.lower()) for other, spec in sources.items()
                                for target, column in spec.arrival.with_.items() if target.lower() == name)
            within = tuple(((other, column), lag) for other, column in referencing
                           if (lag := sources[other].arrival.within) is not None)
            out.append(KeyRule(f"{name}.{source.key.lower()}", name, source.key.lower(), referencing, within))
        return out

    def key_reach(self, cycle: Cycle) -> dict[tuple[str, str], tuple[int, ...]]:
        """Per referencing ``(source, column)`` landing within a lag of its key (``arrival.within``),
        how far back the keys of each interval's rows reach in ``cycle`` (:func:`tempura.tvr.bounds.reach`)."""
        return {at: reach(cycle.time_points.values, cycle.origin, lag) for rule in self.key_rules() for at, lag in rule.within}

    def key_domains(self) -> dict[str, dict[str, str]]:
        """Per source, the columns that hold keys landing once and the key's domain."""
        out: dict[str, dict[str, str]] = {}
        for rule in self.key_rules():
            for source, column in rule.columns:
                out.setdefault(source, {})[column] = rule.domain
        return out

    def expected_arrival(self) -> ArrivalModel:
        """The arrival model the spec states, for the sources that declare ``expected``; the
        others are measured (:func:`tempura.tvr.arrival.measure`) and added with ``with_source``."""
        model = ArrivalModel(self.time_points().k)
        for name, source in self.sources.items():
            if source.expected is not None:
                model = model.with_source(name, source.expected.arrival(deletes=source.changes is not None))
        return model
