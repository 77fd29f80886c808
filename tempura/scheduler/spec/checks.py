"""Loading a spec: :func:`load_spec` reads the YAML, lets pydantic check each key's shape
(:mod:`model`), then checks the rules that tie keys together (one query, increasing time points,
one weight per time point, declared columns, paths). Every error is a :class:`SpecError` whose
one-line message names the file, the line and the key path."""

from __future__ import annotations

import datetime as dt
import difflib
import re
import types
import typing
from pathlib import Path
from typing import Annotated, NoReturn, Sequence

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from tempura.cost.model import CostConstants
from tempura.errors import TempuraError
from tempura.scheduler.spec.model import (
    MAX_TIME_POINTS,
    ObjectiveSpec,
    ScheduleSpec,
    SourceSpec,
    SpecError,
    SpecFile,
    time_of_day,
)
from tempura.scheduler.spec.paths import (
    climbs_out,
    local_path,
    path_overlap,
    relative_part,
)
from tempura.scheduler.spec.schedule import cycle_values, deliver_indices, lag_points, time_kind, with_points
from tempura.scheduler.spec.validated import Spec
from tempura.tvr.time import TimePoints, TimeValue
from tempura.yamlfile import KeyPath, YamlDocument, key_text, load_yaml


def load_spec(path: str | Path) -> Spec:
    """Read and validate the spec at ``path``; any problem raises :class:`SpecError`."""
    document = _load_document(Path(path))
    if not isinstance(document.data, dict):
        raise SpecError(f"{document.path}: a spec is a mapping with keys name, query, sources, schedule")
    try:
        model = SpecFile.model_validate(document.data)
    except ValidationError as error:
        raise SpecError(_validation_message(document, error)) from None
    _check_query_choice(document, model)
    _check_sources(document, model)
    model = _check_target_lag(document, model)
    points = _check_schedule(document, model.schedule)
    _check_lags(document, model, points)
    _check_endless(document, model)
    _check_objective(document, model.objective, points.k)
    _check_expected(document, model, points.k)
    _check_paths(document, model)
    _check_cost(document, model)
    sql = _query_text(document, model)
    model = _now_window_range(model, sql)
    budget_key = _located(document, ("state_budget",), "").removesuffix(": ") if model.state_budget is not None else None
    path_keys: list[KeyPath] = [("sources", name, "path") for name in model.sources] + [("query_file",), ("schedule",)]
    where = tuple((key_text(key), _located(document, key, "").removesuffix(": ")) for key in path_keys)
    key = ("query",) if model.query is not None else ("query_file",)
    return Spec(model, document.path, sql, budget_key, where, document.path.resolve().parent,
                document.text_origin(("query",)) if model.query is not None else None, document.line_of(key))


def _check_cost(document: YamlDocument, model: SpecFile) -> None:
    """Each ``cost`` key names a cost constant and holds a value it accepts."""
    for name, value in model.cost.items():
        try:
            CostConstants.from_mapping({name: value})
        except TempuraError as error:
            _fail(document, ("cost", name), str(error))


def _load_document(path: Path) -> YamlDocument:
    try:
        return load_yaml(path, SpecError)
    except SpecError as error:
        # load_yaml says "file:7: invalid YAML"; spec errors say "file, line 7: …" throughout.
        prefix = re.compile(re.escape(str(path)) + r":(\d+): ")
        message = prefix.sub(lambda m: f"{path}, line {m.group(1)}: ", str(error), count=1)
        raise SpecError(message) from None


def _fail(document: YamlDocument, key_path: KeyPath, message: str) -> NoReturn:
    raise SpecError(_located(document, key_path, message))


def _located(document: YamlDocument, key_path: Sequence[str | int], message: str) -> str:
    line = document.line_of(key_path)
    where = f"{document.path}, line {line}" if line is not None else str(document.path)
    key = key_text(key_path)
    return f"{where}: {key}: {message}" if key else f"{where}: {message}"


def _validation_message(document: YamlDocument, error: ValidationError) -> str:
    """One line per problem, the earliest line first."""
    problems = [(document.line_of(p["loc"]) or 0, _located(document, p["loc"], _describe(p))) for p in error.errors()]
    return "\n".join(dict.fromkeys(text for _, text in sorted(problems)))


def _describe(problem: ErrorDetails) -> str:
    """pydantic's wording, rephrased for someone editing YAML."""
    kind, ctx = problem["type"], problem.get("ctx", {})
    if kind == "extra_forbidden":
        loc = tuple(problem["loc"])
        close = difflib.get_close_matches(str(loc[-1]), _known_keys(loc[:-1]), n=1) if loc else []
        return f"unknown key (did you mean '{close[0]}'?)" if close else "unknown key"
    if kind == "missing":
        return "required key is missing"
    if kind == "literal_error":
        return "must be one of " + ", ".join(re.findall(r"'([^']*)'", str(ctx.get("expected", ""))))
    if kind in ("value_error", "assertion_error"):
        return str(ctx.get("error", problem["msg"]))
    if kind in ("dict_type", "model_type", "model_attributes_type", "dataclass_type"):
        return "must be a mapping"
    if kind in ("list_type", "tuple_type"):
        return "must be a list"
    if kind == "string_type":
        return "must be a string"
    if kind in ("bool_type", "bool_parsing"):
        return "must be true or false"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return "must be an integer"
    if kind == "greater_than_equal":
        return f"must be at least {ctx.get('ge')}"
    message = problem["msg"]
    return message[:1].lower() + message[1:]


def _known_keys(loc: Sequence[str | int]) -> list[str]:
    """The keys the mapping at ``loc`` accepts, as written in a spec (empty if it takes any)."""
    shape: object = SpecFile
    for part in loc:
        shape = _inside(shape, part)
    return sorted({(field.alias or name) for model in _models(shape) for name, field in model.model_fields.items()})


def _inside(shape: object, part: str | int) -> object:
    """The type of ``part`` within a value of type ``shape`` (``None``: not known)."""
    for option in _options(shape):
        if isinstance(option, type) and issubclass(option, BaseModel):
            for name, field in option.model_fields.items():
                if part in (name, field.alias):
                    return field.annotation
        elif typing.get_origin(option) is dict:
            return typing.get_args(option)[1]
        elif typing.get_origin(option) in (tuple, list) and isinstance(part, int):
            return typing.get_args(option)[0]
    return None


def _options(shape: object) -> list[object]:
    """``shape`` without ``Annotated``, a union as its members."""
    if typing.get_origin(shape) is Annotated:
        return _options(typing.get_args(shape)[0])
    if typing.get_origin(shape) in (typing.Union, types.UnionType):
        return [o for member in typing.get_args(shape) for o in _options(member)]
    return [shape]


def _models(shape: object) -> list[type[BaseModel]]:
    return [o for o in _options(shape) if isinstance(o, type) and issubclass(o, BaseModel)]


def _check_query_choice(document: YamlDocument, model: SpecFile) -> None:
    if model.query is not None and model.query_file is not None:
        _fail(document, ("query_file",), "give either 'query' or 'query_file', not both")
    if model.query is None and model.query_file is None:
        _fail(document, (), "a spec needs 'query' (the SQL text) or 'query_file'")


def _check_sources(document: YamlDocument, model: SpecFile) -> None:
    if not model.sources:
        _fail(document, ("sources",), "a spec needs at least one source")
    seen: dict[str, str] = {}
    for name, source in model.sources.items():
        if name.lower() in seen:
            _fail(document, ("sources", name), f"source '{seen[name.lower()]}' is already declared")
        seen[name.lower()] = name
        _check_columns_declared(document, name, source)
    _check_keys(document, model)


def _check_keys(document: YamlDocument, model: SpecFile) -> None:
    """``key`` and ``arrival.with``: a key of a source that only inserts, referenced by another
    such source; a range query's window lands old rows again as deletions, so it has none."""
    sources = {name.lower(): (name, source) for name, source in model.sources.items()}
    for name, source in model.sources.items():
        if source.key is not None and source.changes is not None:
            _fail(document, ("sources", name, "key"), "a change-data source can delete a key and land it again: keys are for sources that only insert")
        if source.history is not None and model.schedule.range is not None:
            _fail(document, ("sources", name, "history"), "a range query's window says which rows count: 'history' "
                  "is for queries without 'range'")
        if source.key is not None and model.schedule.range is not None:
            _fail(document, ("sources", name, "key"), "a range query's window drops old rows as it slides: keys are for queries without 'range'")
        for target, column in source.arrival.with_.items():
            at = ("sources", name, "arrival", "with", target)
            found = sources.get(target.lower())
            if found is None:
                _fail(document, at, f"no source '{target}' (sources: {', '.join(model.sources)})")
            if found[1] is source:
                _fail(document, at, "a source cannot land with itself")
            if found[1].key is None:
                _fail(document, at, f"source '{found[0]}' declares no 'key' for {column} to reference")
            if source.changes is not None:
                _fail(document, at, "change data can delete a row and land it again: 'with' is for sources that only insert")
        if source.arrival.within is not None and not source.arrival.with_:
            _fail(document, ("sources", name, "arrival", "within"), "says how long after the row it references a row lands: give 'with' too")
        if source.declared_schema is not None:
            declared = {c.lower() for c in source.declared_schema}
            for key, column in ([(("key",), source.key)] if source.key else []) + [
                    (("arrival", "with", t), c) for t, c in source.arrival.with_.items()]:
                if column.lower() not in declared:
                    _fail(document, ("sources", name) + key, f"column '{column}' is not in the source's schema")


def _check_columns_declared(document: YamlDocument, name: str, source: SourceSpec) -> None:
    if (source.arrival.column is None) == (source.arrival.by is None):
        _fail(document, ("sources", name, "arrival"), "give either 'column' (each row's arrival time) or 'by: file'")
    if source.arrival.by == "file" and source.changes is not None:
        _fail(document, ("sources", name, "changes"), "change data needs each change's time: give 'arrival: {column: …}'")
    if source.changes is not None:
        both = [v for v in source.changes.insert_values if v in source.changes.delete_values]
        if both:
            given = "insert_values" if "insert_values" in source.changes.model_fields_set else "delete_values"
            _fail(document, ("sources", name, "changes", given),
                  f"'{both[0]}' cannot mark both an insertion and a deletion (insert_values and delete_values share it)")
    if source.history == "fresh" and source.arrival.by == "file":
        _fail(document, ("sources", name, "history"), "a source arriving by file has no arrival values to tell rows "
              "from before a cycle's origin: it keeps every file it finds (history: keep)")
    if source.schema_policy == "add_columns" and source.format == "csv":
        _fail(document, ("sources", name, "schema"), "CSV files' columns are matched by position, not by name: "
              "add_columns is for parquet, orc and json (declare the columns instead)")
    if source.declared_schema is None:
        return
    declared = {column.lower() for column in source.declared_schema}
    used = [(("arrival", "column"), source.arrival.column)] if source.arrival.column is not None else []
    if source.changes is not None:
        used.append((("changes", "op_column"), source.changes.op_column))
    for key, column in used:
        if column.lower() not in declared:
            _fail(document, ("sources", name) + key, f"column '{column}' is not in the source's schema")


def _check_target_lag(document: YamlDocument, model: SpecFile) -> SpecFile:
    """``target_lag``: a duration after a timestamp ``start``, instead of ``at``, ``every``,
    ``points`` and ``range``; the ``deadline`` after ``start``; nothing that counts the time
    points (weights, expected shares per interval, delivered indices), which tempura chooses.
    Returns the model with the fewest time points meeting the target (:func:`lag_points`),
    until a job's choice replaces them (:mod:`tempura.scheduler.freshness`)."""
    schedule = model.schedule
    lag_keys = [k for k in ("deadline", "lag_weight") if k in schedule.model_fields_set]
    if schedule.target_lag is None:
        if lag_keys:
            _fail(document, ("schedule", lag_keys[0]), "belongs with 'target_lag'")
        return model
    at: KeyPath = ("schedule", "target_lag")
    for key in ("at", "every", "points", "range"):
        if getattr(schedule, key) is not None:
            _fail(document, ("schedule", key), f"with 'target_lag' tempura chooses the time points: give 'start' "
                  f"(and optionally 'deadline'), not '{key}'")
    if not isinstance(schedule.target_lag, dt.timedelta) or schedule.target_lag <= dt.timedelta(0):
        _fail(document, at, "must be a positive duration such as 15m")
    if not isinstance(schedule.start, dt.datetime):
        _fail(document, ("schedule", "start") if schedule.start is not None else ("schedule",),
              "'target_lag' needs 'start', a timestamp (\"2026-11-30T00:00:00\")")
    if schedule.deadline is not None:
        if not isinstance(schedule.deadline, dt.datetime) or (schedule.deadline.tzinfo is None) != (schedule.start.tzinfo is None):
            _fail(document, ("schedule", "deadline"), "must be a timestamp like 'start'")
        if schedule.deadline <= schedule.start:
            _fail(document, ("schedule", "deadline"), f"{schedule.deadline} is not after start ({schedule.start})")
    if schedule.deliver != "every":
        _fail(document, ("schedule", "deliver"), "with 'target_lag' every time point delivers")
    if model.objective.weights is not None:
        _fail(document, ("objective", "weights"), "with 'target_lag' the time points are chosen: give a 'preset'")
    for name, source in model.sources.items():
        if source.expected is not None:
            _fail(document, ("sources", name, "expected"), "with 'target_lag' the intervals are chosen: an "
                  "expected share per interval cannot be given")
    if schedule.endless and schedule.deadline is not None:
        _fail(document, ("schedule", "deadline"), "an endless schedule has no deadline: give one or the other "
              "(without a deadline a target_lag schedule is endless)")
    points = lag_points(schedule)
    if points > MAX_TIME_POINTS:
        _fail(document, at, f"{points:,} time points to meet it, more than {MAX_TIME_POINTS:,}")
    if schedule.deadline is None:  # cycles that continue one another, each LAGS_PER_CYCLE target lags long
        schedule = schedule.model_copy(update={"endless": True})
    return model.model_copy(update={"schedule": with_points(schedule, points)})


def _now_window_range(model: SpecFile, sql: str) -> SpecFile:
    """A query over one source whose rows are those that arrived within a fixed length of now
    (:func:`~tempura.sql.clock.now_window`), on a schedule stepping by ``every``, is a range
    query: the model with ``range: {length, slide: every}``, maintained as one (the planner
    reads the query without the condition: :attr:`Spec.planning_sql`). A window shorter than
    the step, or on an endless, explicit, ranged or ``target_lag`` schedule, stays as written
    (recomputed at every time point)."""
    from tempura.scheduler.spec.model import RangeSpec
    from tempura.sql.clock import now_window

    schedule = model.schedule
    if (schedule.every is None or schedule.range is not None or schedule.endless or schedule.at is not None
            or schedule.target_lag is not None or not isinstance(schedule.every, dt.timedelta)):
        return model
    arrival = {name.lower(): source.arrival.column for name, source in model.sources.items()
               if source.arrival.column is not None}
    window = now_window(sql, model.dialect, arrival)
    if window is None or window.length < schedule.every:
        return model
    ranged = RangeSpec.model_construct(length=window.length, slide=schedule.every)
    return model.model_copy(update={"schedule": schedule.model_copy(update={"range": ranged})})


def _check_lags(document: YamlDocument, model: SpecFile, points: TimePoints) -> None:
    """``arrival.within`` is a duration over timestamps or dates, a number over numbers."""
    timed = isinstance(points.values[0], (dt.date, dt.datetime))
    for name, source in model.sources.items():
        lag = source.arrival.within
        if lag is not None and timed != isinstance(lag, dt.timedelta):
            _fail(document, ("sources", name, "arrival", "within"),
                  "over time points that are timestamps or dates the lag is a duration (12h); over numbers, a number")


def _check_endless(document: YamlDocument, model: SpecFile) -> None:
    """``endless``: cycles that follow one another (``start``, with ``every`` or times of day),
    no window, no keys (they are checked within a cycle), and a delta output that delivers at
    each cycle's last time point (a carried cycle's first change is counted from there)."""
    schedule = model.schedule
    if not schedule.endless:
        return
    at = ("schedule", "endless")
    if schedule.at is not None and not all(isinstance(v, str) for v in schedule.at):
        _fail(document, at, "the time points listed in 'at' make one cycle: an endless schedule needs 'start' with "
              "'every' and 'points', or times of day")
    if schedule.range is not None:
        _fail(document, at, "a range query's window drops old rows as it slides: 'endless' keeps every row since 'start'")
    for name, source in model.sources.items():
        if source.key is not None or source.arrival.with_:
            key = ("sources", name, "key") if source.key is not None else ("sources", name, "arrival", "with")
            _fail(document, key, "keys are checked within a cycle, and an endless schedule's cycles carry their rows "
                  "on: declare no keys with 'endless'")
    output = model.output
    if output is not None and output.mode == "delta" and schedule.deliver not in ("last", "every") and (
            not isinstance(schedule.deliver, tuple) or max(schedule.deliver) != (schedule.points or len(schedule.at or ()))):
        _fail(document, ("schedule", "deliver"), "an endless schedule's delta output counts each cycle's first change "
              "from the last time point of the cycle before: deliver at the last time point")


def _check_schedule(document: YamlDocument, schedule: ScheduleSpec) -> TimePoints:
    origin, values = _first_cycle(document, schedule)
    key: KeyPath = ("schedule", "at") if schedule.at is not None else ("schedule", "start")
    kinds = {time_kind(v) for v in values}
    if len(kinds) > 1:
        _fail(document, key, f"time points mix {' and '.join(sorted(kinds))} values")
    for i in range(1, len(values)):
        if not values[i - 1] < values[i]:  # type: ignore[operator]
            at = key + (i,) if schedule.at is not None else key
            _fail(document, at, f"time points must increase: {values[i]} is not after {values[i - 1]}")
    deliver = deliver_indices(schedule.deliver, len(values))
    for i in deliver:
        if not 1 <= i <= len(values):
            message = f"index {i} is not a time point (the schedule has 1..{len(values)})"
            _fail(document, ("schedule", "deliver"), message)
    if len(set(deliver)) != len(deliver):
        _fail(document, ("schedule", "deliver"), "lists an index twice")
    _check_range(document, schedule, values)
    return TimePoints(values, deliver)


def _first_cycle(document: YamlDocument, schedule: ScheduleSpec) -> tuple[TimeValue | None, tuple[TimeValue, ...]]:
    """The first cycle's origin and time points, each rule of the schedule's shape checked."""
    if schedule.at is not None:
        if not schedule.at:
            _fail(document, ("schedule", "at"), "needs at least one time point")
        clock = [isinstance(v, str) for v in schedule.at]
        if any(clock) and not all(clock):
            _fail(document, ("schedule", "at"), "give all time points as times of day (\"06:00\") or none")
        if schedule.every is not None:
            _fail(document, ("schedule", "every"), "give either 'at' or 'every', not both")
        if all(clock):
            if schedule.start is None:
                _fail(document, ("schedule",), "times of day need 'start': the first day of the daily cycle")
            if schedule.points is not None and schedule.points != len(schedule.at):
                _fail(document, ("schedule", "points"), f"{schedule.points} points, but 'at' lists {len(schedule.at)}")
            for i, text in enumerate(schedule.at):
                try:
                    time_of_day(str(text))
                except ValueError as exc:
                    _fail(document, ("schedule", "at", i), str(exc))
        elif schedule.start is not None or schedule.points is not None:
            _fail(document, ("schedule", "at"), "give either 'at' or 'start', 'every' and 'points', not both")
    elif schedule.start is None or schedule.points is None or (schedule.every is None and schedule.range is None):
        generated = {"start": schedule.start, "every": schedule.every or (schedule.range and schedule.range.slide),
                     "points": schedule.points}
        missing = [k for k, v in generated.items() if v is None]
        _fail(document, ("schedule",), f"give 'at', or 'start', 'every' and 'points' (missing: {', '.join(missing)})")
    count = len(schedule.at) if schedule.at is not None else schedule.points
    if count is not None and count > MAX_TIME_POINTS and not schedule.allow_many_points:
        listed = "at" if schedule.at is not None else "points"
        _fail(document, ("schedule", listed), f"{count:,} time points in a cycle, more than {MAX_TIME_POINTS:,}: "
              "give 'allow_many_points: true' in 'schedule' if that many are meant")
    try:
        found = cycle_values(schedule, 0)
    except ValueError as exc:
        key: KeyPath = ("schedule", "start") if schedule.at is not None else (
            ("schedule", "every") if schedule.every is not None else ("schedule", "range", "slide"))
        _fail(document, key, str(exc))
    assert found is not None
    return found


def _check_range(document: YamlDocument, schedule: ScheduleSpec, values: tuple[TimeValue, ...]) -> None:
    window = schedule.range
    if window is None:
        return
    if schedule.at is not None:
        _fail(document, ("schedule", "range"), "a range query's time points are 'start' plus multiples of its slide: give 'start' and 'points', not 'at'")
    if schedule.every is not None and schedule.every != window.slide:
        _fail(document, ("schedule", "range", "slide"), f"the window slides by 'every' ({schedule.every}); give one of them, or the same value")
    if isinstance(values[0], (dt.date, dt.datetime)) != isinstance(window.length, dt.timedelta):
        _fail(document, ("schedule", "range", "length"), "a window over timestamps or dates is a duration; over numbers, a number")
    if window.length < window.slide:  # type: ignore[operator]
        _fail(document, ("schedule", "range", "length"), f"the window ({window.length}) is shorter than its slide ({window.slide})")


def _check_objective(document: YamlDocument, objective: ObjectiveSpec, k: int) -> None:
    if (objective.preset is None) == (objective.weights is None):
        _fail(document, ("objective",), "give either 'preset' or 'weights'")
    if objective.weights is None:
        return
    if len(objective.weights) != k:
        _fail(document, ("objective", "weights"), f"{len(objective.weights)} weights for {k} time points")
    if not any(w > 0 for w in objective.weights):
        _fail(document, ("objective", "weights"), "at least one weight must be positive")


def _check_expected(document: YamlDocument, model: SpecFile, k: int) -> None:
    for name, source in model.sources.items():
        if source.expected is not None and len(source.expected.values) != k:
            _fail(
                document,
                ("sources", name, "expected"),
                f"{len(source.expected.values)} values for {k} time points (one per time point)",
            )


def _check_paths(document: YamlDocument, model: SpecFile) -> None:
    """The rule for paths in a spec:

    - a relative path is resolved from the spec's folder and stays inside it: a ``..`` that
      climbs out is an error (``file:data/x`` is relative too);
    - an absolute path, or a URI with a scheme (``file:///…``, ``hdfs://…``, ``s3a://…``), is
      taken as it is: a spec may name data anywhere, as it may name a hook whose code runs — a
      spec is as trusted as code;
    - the output is not the spec's folder and does not contain it, and it is not a source's
      folder, inside one, or around one: a delivery replaces its folder. Local paths and
      ``file:`` URIs (``file:/x``, ``file:///x`` are the local ``/x``) are compared resolved;
      other URIs as text; a local path and another scheme's URI never overlap;
    - ``query_file`` is read by tempura itself: a local path or a ``file:`` URI.
    """
    folder = document.path.resolve().parent
    paths: list[tuple[KeyPath, str]] = [(("sources", name, "path"), source.path)
                                        for name, source in model.sources.items() if source.path is not None]
    if model.query_file is not None:
        paths.append((("query_file",), model.query_file))
    if model.output is not None and model.output.path is not None:
        paths.append((("output", "path"), model.output.path))
    for key, path in paths:
        relative = relative_part(path)
        if relative is not None and climbs_out(relative):
            _fail(document, key, f"'{path}' is outside the spec's folder {folder}: a relative path stays inside it "
                  "(give an absolute path or a URI for data elsewhere)")
    if model.query_file is not None and local_path(model.query_file, folder) is None:
        _fail(document, ("query_file",), f"'{model.query_file}' is not a local file: tempura reads the query itself")
    if model.output is not None and model.output.path is not None:
        _check_output_path(document, model, folder)


def _check_output_path(document: YamlDocument, model: SpecFile, folder: Path) -> None:
    assert model.output is not None
    key: KeyPath = ("output", "path")
    output = model.output.path
    assert output is not None
    local = local_path(output, folder)
    if local == folder:
        _fail(document, key, "the output folder cannot be the spec's own folder")
    if local is not None and local in folder.parents:
        _fail(document, key, f"'{output}' contains the spec's folder {folder}: a delivery replaces the output folder")
    for name, source in model.sources.items():
        if source.path is None:
            continue  # a catalog table: its location is the catalog's
        overlap = path_overlap(output, local, source.path, local_path(source.path, folder))
        if overlap == "same":
            _fail(document, key, f"'{output}' is the folder of source '{name}': a delivery would replace its data")
        if overlap == "inside":
            _fail(document, key, f"'{output}' is inside the folder of source '{name}' ('{source.path}'): "
                  "deliveries would be read as its data")
        if overlap == "contains":
            _fail(document, key, f"'{output}' contains the folder of source '{name}' ('{source.path}'): "
                  "a delivery would replace its data")


def _query_text(document: YamlDocument, model: SpecFile) -> str:
    if model.query is not None:
        return model.query
    assert model.query_file is not None
    file = local_path(model.query_file, document.path.resolve().parent)
    assert file is not None  # _check_paths: a local file
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        _fail(document, ("query_file",), f"file not found: {file}")
    except OSError as exc:
        _fail(document, ("query_file",), f"cannot read {file}: {exc.strerror}")
    if not text.strip():
        _fail(document, ("query_file",), f"{file} is empty")
    return text
