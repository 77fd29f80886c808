"""The YAML spec of a standing query: its file format, validation, and the values read from it.

A spec names the query, its sources, the schedule and the objective::

    name: gross_by_category
    query: |                          # or query_file: query.sql (relative to this file)
      SELECT category, SUM(price) AS gross FROM sales GROUP BY category
    dialect: spark                    # optional; any sqlglot dialect
    sources:
      sales:
        path: data/sales              # relative: from this file's folder, and inside it; or an
                                      # absolute path, or any URI Spark reads (_check_paths)
        format: parquet               # parquet | csv | json | orc
        options: {}                   # optional, passed to Spark's reader
        schema: {o_id: string}        # optional
        arrival: {column: arrived_at} # the column holding each row's arrival time
                                      # (with: {orders: o_id}: each row lands with the row of
                                      # orders whose key it holds in o_id; within: 12h:
                                      # with it or at most 12 hours after it)
        key: s_id                     # optional: each value of s_id lands once in a cycle
        changes:                      # optional: change data
          op_column: _op
          insert_values: ["I"]        # the default; no value both inserts and deletes
          delete_values: ["D"]        # the default
          deletes: strict             # strict: deleting a row that is not there is an error;
                                      # lenient: such deletions are counted and dropped
        expected: [0.5, 0.5]          # optional: share of the rows per interval (sum <= 1),
                                      # or {rows: [1000, 1200]}
    schedule:
      at: ["2026-11-22T06:00:00", "2026-11-22T12:00:00"]
      # or: start: "2026-11-22T00:00:00", every: 6h, points: 4  (t_i = start + i*every)
      # or: start: "2026-11-22", at: ["06:00", "24:00"]          (daily, at those times of day)
      deliver: last                   # last | every | [1-based indices]
      allow_many_points: false        # more than 10,000 time points in a cycle are an error
                                      # unless this is true
    objective:
      preset: deadline                # deadline | total; or weights: [0.1, 0.1, 1]
      margin: 0.1                     # optional: the share of recomputation's objective an
                                      # incremental plan must save for auto to take it
    state_budget: 10GB                # optional: the most bytes of kept states alive at once
                                      # (B, kB, MB, GB, TB: powers of 1000; KiB, MiB, GiB, TiB: of 1024)
    integrity: enforced               # enforced: keys and arrival 'with' are checked as rows land;
                                      # trusted: taken as declared, unchecked
    cost: {stage: 1e9, executors: 8}  # optional: cost model constants for this query's planning
                                      # (a stage cost set here is not fitted to the run history)
    output: {path: out, format: parquet, mode: snapshot}  # optional: where deliveries go (not
                                      # the spec's folder, nor a source's, nor around either)
    max_catch_up: 1                   # how many cycles a normal run may catch up on (>= 1)
    allow_empty: false                # whether an empty delivery may replace a non-empty one

pydantic checks each key's shape (unknown keys are errors, with the closest known key
suggested; a key given twice is an error); the rules that tie keys together (one query,
increasing time points, one weight per time point, …) are checked after it. Every error is a
:class:`SpecError` whose one-line message names the file, the line and the key path.
:meth:`Spec.missing_paths` lists the local paths that do not exist, for ``validate``.
"""

from __future__ import annotations

import datetime as dt
import difflib
import math
import os
import re
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal, Mapping, NoReturn, Sequence

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import ErrorDetails
from sqlglot.dialects.dialect import Dialects

from tempura.catalog import Catalog, Format, TableSource
from tempura.cost.model import CostConstants
from tempura.errors import TempuraError
from tempura.tvr.arrival import ArrivalModel, SourceArrival
from tempura.tvr.bounds import KeyRule, reach
from tempura.tvr.time import TimePoints, TimeValue
from tempura.yamlfile import KeyPath, YamlDocument, key_text, load_yaml

# Under the ``deadline`` preset, work before the last time point costs this much per unit: idle
# hours are nearly free, yet among plans equal at the deadline the one doing less work wins.
DEADLINE_EPSILON = 1e-3

# The most time points a cycle may have unless ``schedule.allow_many_points`` says more are meant:
# every plan, manifest and weight list holds one entry per time point.
MAX_TIME_POINTS = 10_000

_DURATION = re.compile(r"(\d+)\s*([wdhms])")
_SIZE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)")
_SIZE_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
               "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_DURATION_UNITS = {"w": "weeks", "d": "days", "h": "hours", "m": "minutes", "s": "seconds"}
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_JOB_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_TIME_OF_DAY = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?")


class SpecError(TempuraError):
    """The spec file of a standing query is missing, malformed or inconsistent."""


# ---------------------------------------------------------------------------------------------
# Values that YAML does not type for us: time points, durations, numbers, reader options.


def parse_time_value(raw: object) -> TimeValue:
    """A time point from YAML: an integer, a date or a timestamp (also as ISO text)."""
    if isinstance(raw, bool):
        raise ValueError(f"{raw!r} is not a time point (an integer, an ISO date or an ISO timestamp)")
    if isinstance(raw, (int, dt.date)):  # dt.datetime is a dt.date
        return raw
    if isinstance(raw, str):
        text = raw.strip()
        try:
            if _ISO_DATE.fullmatch(text):
                return dt.date.fromisoformat(text)
            return dt.datetime.fromisoformat(text)
        except ValueError:
            pass
    raise ValueError(f"{raw!r} is not a time point (an integer, an ISO date or an ISO timestamp)")


def parse_duration(raw: object) -> dt.timedelta | int:
    """``every``: a duration such as ``6h``, ``30m``, ``1d``, ``90s``, ``1h30m`` (units w, d, h,
    m, s), or a positive integer step between integer time points."""
    if isinstance(raw, int) and not isinstance(raw, bool):
        if raw <= 0:
            raise ValueError(f"must be positive, not {raw}")
        return raw
    text = raw.strip().lower() if isinstance(raw, str) else ""
    parts = _DURATION.findall(text)
    if not text or _DURATION.sub("", text).strip():
        raise ValueError(f"{raw!r} is not a duration such as 6h, 30m, 1d or 90s")
    duration = sum((dt.timedelta(**{_DURATION_UNITS[unit]: int(n)}) for n, unit in parts), dt.timedelta())
    if duration <= dt.timedelta():
        raise ValueError(f"the duration must be positive, not {raw!r}")
    return duration


def parse_size(raw: object) -> float:
    """``state_budget``: a size such as ``10GB``, ``512 MB``, ``1.5TB`` or ``2GiB`` (B, kB, MB,
    GB, TB are powers of 1000; KiB, MiB, GiB, TiB of 1024), or a number of bytes."""
    if isinstance(raw, int) and not isinstance(raw, bool):
        if raw < 0:
            raise ValueError(f"a size must not be negative, not {raw}")
        return float(raw)
    match = _SIZE.fullmatch(raw.strip().lower()) if isinstance(raw, str) else None
    if match is None or match.group(2) not in _SIZE_UNITS:
        raise ValueError(f"{raw!r} is not a size such as 10GB, 512MB or 2GiB")
    return float(match.group(1)) * _SIZE_UNITS[match.group(2)]


def _number(raw: object) -> float:
    # pydantic's lax floats take True and "0.5"; in a spec those are mistakes.
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise ValueError(f"{raw!r} is not a number")
    if not math.isfinite(raw):
        raise ValueError(f"{raw!r} is not a finite number")
    return float(raw)


def _scientific(raw: object) -> float:
    # YAML 1.1 reads 1e9 (no dot) as text; a cost constant may be written either way.
    if isinstance(raw, str):
        try:
            raw = float(raw)
        except ValueError:
            raise ValueError(f"{raw!r} is not a number") from None
    return _number(raw)


def _non_empty(text: str) -> str:
    if not text.strip():
        raise ValueError("must not be empty")
    return text


def _reader_options(raw: object) -> object:
    if not isinstance(raw, dict):
        return raw  # pydantic reports the wrong type
    options = {}
    for key, value in raw.items():
        if isinstance(value, bool):
            options[key] = "true" if value else "false"
        elif isinstance(value, (str, int, float)):
            options[key] = str(value)
        else:
            raise ValueError(f"option '{key}' must be a string, a number or a boolean")
    return options


NonNegative = Annotated[float, BeforeValidator(_number), Field(ge=0)]
Text = Annotated[str, AfterValidator(_non_empty)]
TimePointValue = Annotated[TimeValue, BeforeValidator(parse_time_value)]
Duration = Annotated[dt.timedelta | int, BeforeValidator(parse_duration)]
Size = Annotated[float, BeforeValidator(parse_size)]


# ---------------------------------------------------------------------------------------------
# The file format, one pydantic model per mapping.


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ArrivalColumn(_Strict):
    """``arrival``: the column holding each row's arrival time (``column``), or ``by: file``: a
    file's rows arrive at the first time point at which tempura finds the file. ``with`` maps
    sources declaring a ``key`` to a column of this one: each row lands in the interval in which
    the row whose key it holds lands (a line item with its order); with ``within``, it lands
    with that row or at most ``within`` after it (a return within 12 hours of its sale)."""

    column: Text | None = None
    by: Literal["file"] | None = None
    with_: dict[str, Text] = Field(default={}, alias="with")
    within: Duration | None = None


class ChangeColumns(_Strict):
    """``changes``: the source delivers change data; rows whose op column holds one of
    ``insert_values`` are insertions, one of ``delete_values`` deletions (no value is both)."""

    op_column: Text
    """The column saying what each row is: an insertion or a deletion."""
    insert_values: tuple[Text, ...] = ("I",)
    """The op column's values marking an insertion."""
    delete_values: tuple[Text, ...] = ("D",)
    """The op column's values marking a deletion."""
    deletes: Literal["strict", "lenient"] = "strict"
    """``strict``: the deletion of a row that is not there is an error; ``lenient``: such a
    deletion is counted and dropped."""

    @field_validator("insert_values", "delete_values")
    @classmethod
    def _some_values(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        if not values:
            raise ValueError("needs at least one value")
        return values


@dataclass(frozen=True)
class ExpectedArrival:
    """``expected``: the share of the source's rows arriving per interval (``fractions``,
    summing to at most 1), or the number of rows per interval (``rows``)."""

    kind: Literal["fractions", "rows"]
    values: tuple[float, ...]

    def arrival(self, deletes: bool) -> SourceArrival:
        """The arrival model it states; ``deletes``: the source may delete (share unknown)."""
        if self.kind == "rows":
            counted = SourceArrival.from_counts([int(v) for v in self.values])
            return SourceArrival(counted.fractions, None if deletes else counted.deletions, counted.rows)
        return SourceArrival.from_fractions(self.values, deletes)


def _expected_arrival(raw: object) -> object:
    if raw is None or isinstance(raw, ExpectedArrival):
        return raw
    if isinstance(raw, dict):
        if set(raw) != {"rows"}:
            raise ValueError("is a list of fractions or a mapping {rows: [...]}")
        counts = raw["rows"]
        if not isinstance(counts, list) or not all(isinstance(c, int) and not isinstance(c, bool) for c in counts):
            raise ValueError("rows must be a list of integers, one per time point")
        if any(c < 0 for c in counts):
            raise ValueError(f"rows must not be negative: {counts}")
        if counts and sum(counts) == 0:
            raise ValueError("rows must not all be 0")
        return ExpectedArrival("rows", tuple(float(c) for c in counts))
    if isinstance(raw, list):
        fractions = tuple(_number(f) for f in raw)
        if any(f < 0 for f in fractions):
            raise ValueError(f"fractions must not be negative: {raw}")
        if math.fsum(fractions) > 1 + 1e-9:
            raise ValueError(f"fractions sum to {math.fsum(fractions):g}, more than 1: {raw}")
        if fractions and math.fsum(fractions) == 0:
            raise ValueError("fractions must not all be 0")
        return ExpectedArrival("fractions", fractions)
    raise ValueError("is a list of fractions or a mapping {rows: [...]}")


class SourceSpec(_Strict):
    """One entry of ``sources``: where a source's data lives, how its rows arrive."""

    path: Text
    format: Format = "parquet"
    options: Annotated[dict[str, str], BeforeValidator(_reader_options)] = {}
    schema_: dict[str, Text] | None = Field(default=None, alias="schema")
    arrival: ArrivalColumn
    changes: ChangeColumns | None = None
    expected: Annotated[ExpectedArrival | None, BeforeValidator(_expected_arrival)] = None
    key: Text | None = None  # a column whose every value lands once in a cycle


def _deliver(raw: object) -> object:
    if raw in ("last", "every"):
        return raw
    if isinstance(raw, list) and raw and all(isinstance(i, int) and not isinstance(i, bool) for i in raw):
        return tuple(raw)
    raise ValueError("must be last, every, or a list of 1-based time point indices")


class RangeSpec(_Strict):
    """``range``: a periodic range query; each time point's result covers the rows that arrived
    in the last ``length`` (``(t - length, t]``), and the window moves by ``slide``."""

    length: Duration
    slide: Duration


def _at_value(raw: object) -> object:
    if isinstance(raw, str) and _TIME_OF_DAY.fullmatch(raw.strip()):
        return raw.strip()
    return parse_time_value(raw)


class ScheduleSpec(_Strict):
    """``schedule``: explicit time points (``at``: values, or times of day repeated daily from
    ``start``'s date) or ``start`` + ``i`` × ``every`` for ``points`` time points per cycle, which
    time points deliver a result, and an optional periodic ``range``."""

    at: tuple[Annotated[TimeValue | str, BeforeValidator(_at_value)], ...] | None = None
    start: TimePointValue | None = None
    every: Duration | None = None
    points: Annotated[int, Field(ge=1)] | None = None
    deliver: Annotated[Literal["last", "every"] | tuple[int, ...], BeforeValidator(_deliver)] = "last"
    range: RangeSpec | None = None
    allow_many_points: Annotated[bool, Field(strict=True)] = False
    """A cycle of more than :data:`MAX_TIME_POINTS` time points is taken as a mistake (every
    plan and manifest lists them all) unless this says it is meant."""


class ObjectiveSpec(_Strict):
    """``objective``: a preset, or one weight per time point (the objective is Σ w_i · c_i)."""

    preset: Literal["deadline", "total"] | None = None
    weights: tuple[NonNegative, ...] | None = None
    margin: Annotated[float, Field(ge=0, lt=1)] | None = None  # None: the planner's default


def _job_name(name: str) -> str:
    _non_empty(name)
    if not _JOB_NAME.fullmatch(name):
        raise ValueError(f"'{name}' is not a name of letters, digits, '_', '-' and '.' (it names the job's folder)")
    return name


def _dialect(name: str) -> str:
    known = sorted(d.value for d in Dialects if d.value)
    if name.lower() not in known:
        raise ValueError(f"unknown SQL dialect '{name}' (one of {', '.join(known)})")
    return name.lower()


class OutputSpec(_Strict):
    """``output``: where delivered results go. ``snapshot`` replaces the folder with each
    delivery; ``delta`` appends each delivery's change (with the multiplicity column ``__m``) as
    one ``cycle=…/time_point=…`` partition."""

    path: Text
    format: Format = "parquet"
    mode: Literal["snapshot", "delta"] = "snapshot"


class SparkSpec(_Strict):
    """``spark``: the master URL (default ``local[*]``, or ``TEMPURA_SPARK_MASTER``) and any
    Spark settings."""

    master: Text | None = None
    conf: Annotated[dict[str, str], BeforeValidator(_reader_options)] = {}


def _hook_target(text: str) -> str:
    module, _, function = text.partition(":")
    if not module or not function or not all(part.isidentifier() for part in [*module.split("."), function]):
        raise ValueError(f"'{text}' is not 'package.module:function'")
    return text


class HooksSpec(_Strict):
    """``hooks``: ``on_run`` names a function (``package.module:function``) called with each
    committed time point's run summary."""

    on_run: Annotated[str, AfterValidator(_hook_target)] | None = None


class SpecFile(_Strict):
    """The whole spec file, as validated."""

    name: Annotated[str, AfterValidator(_job_name)]
    query: Text | None = None
    query_file: Text | None = None
    dialect: Annotated[str, AfterValidator(_dialect)] = "spark"
    sources: dict[str, SourceSpec]
    schedule: ScheduleSpec
    objective: ObjectiveSpec = ObjectiveSpec(preset="deadline")
    state_budget: Size | None = None
    late: Literal["reject", "next"] = "reject"
    integrity: Literal["enforced", "trusted"] = "enforced"
    output: OutputSpec | None = None
    spark: SparkSpec = SparkSpec()
    hooks: HooksSpec = HooksSpec()
    cost: dict[str, Annotated[float, BeforeValidator(_scientific), Field(ge=0)]] = {}
    max_catch_up: Annotated[int, Field(ge=1, strict=True)] = 1
    """How many cycles a normal run may catch up on: when the wall clock finds more cycles due,
    the older ones are left to an explicit catch-up."""
    allow_empty: Annotated[bool, Field(strict=True)] = False
    """Whether a delivery with no rows may replace one that has rows (``false``: it is an error,
    taken as a sign of missing input)."""


# ---------------------------------------------------------------------------------------------
# Loading: pydantic for each key's shape, then the rules across keys, each with its key path.


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
    points = _check_schedule(document, model.schedule)
    _check_lags(document, model, points)
    _check_objective(document, model.objective, points.k)
    _check_expected(document, model, points.k)
    _check_paths(document, model)
    _check_cost(document, model)
    budget_key = _located(document, ("state_budget",), "").removesuffix(": ") if model.state_budget is not None else None
    path_keys: list[KeyPath] = [("sources", name, "path") for name in model.sources] + [("query_file",)]
    where = tuple((key_text(key), _located(document, key, "").removesuffix(": ")) for key in path_keys)
    return Spec(model, document.path, _query_text(document, model), budget_key, where, document.path.resolve().parent)


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
        if source.schema_ is not None:
            declared = {c.lower() for c in source.schema_}
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
    if source.schema_ is None:
        return
    declared = {column.lower() for column in source.schema_}
    used = [(("arrival", "column"), source.arrival.column)] if source.arrival.column is not None else []
    if source.changes is not None:
        used.append((("changes", "op_column"), source.changes.op_column))
    for key, column in used:
        if column.lower() not in declared:
            _fail(document, ("sources", name) + key, f"column '{column}' is not in the source's schema")


def _check_lags(document: YamlDocument, model: SpecFile, points: TimePoints) -> None:
    """``arrival.within`` is a duration over timestamps or dates, a number over numbers."""
    timed = isinstance(points.values[0], (dt.date, dt.datetime))
    for name, source in model.sources.items():
        lag = source.arrival.within
        if lag is not None and timed != isinstance(lag, dt.timedelta):
            _fail(document, ("sources", name, "arrival", "within"),
                  "over time points that are timestamps or dates the lag is a duration (12h); over numbers, a number")


def _check_schedule(document: YamlDocument, schedule: ScheduleSpec) -> TimePoints:
    origin, values = _first_cycle(document, schedule)
    key: KeyPath = ("schedule", "at") if schedule.at is not None else ("schedule", "start")
    kinds = {_time_kind(v) for v in values}
    if len(kinds) > 1:
        _fail(document, key, f"time points mix {' and '.join(sorted(kinds))} values")
    for i in range(1, len(values)):
        if not values[i - 1] < values[i]:  # type: ignore[operator]
            at = key + (i,) if schedule.at is not None else key
            _fail(document, at, f"time points must increase: {values[i]} is not after {values[i - 1]}")
    deliver = _deliver_indices(schedule.deliver, len(values))
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
                    _time_of_day(str(text))
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


def _time_of_day(text: str) -> dt.timedelta:
    """``"06:00"`` as the time since midnight; ``"24:00"`` is the next midnight."""
    match = _TIME_OF_DAY.fullmatch(text)
    if match is None:
        raise ValueError(f"'{text}' is not a time of day such as 06:00")
    hours, minutes, seconds = int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)
    offset = dt.timedelta(hours=hours, minutes=minutes, seconds=seconds)
    if minutes > 59 or seconds > 59 or offset > dt.timedelta(hours=24) or hours > 24:
        raise ValueError(f"'{text}' is not a time of day between 00:00 and 24:00")
    return offset


def cycle_values(schedule: ScheduleSpec, n: int) -> tuple[TimeValue | None, tuple[TimeValue, ...]] | None:
    """Cycle ``n``'s origin ``t_0`` (rows arriving at or before it belong to earlier cycles;
    ``None``: no earlier cycle) and its time points; ``None`` when the schedule has no cycle
    ``n`` (explicit ``at`` values make one cycle; a cycle past the year 9999 does not exist).
    Only cycle ``n``'s values are computed: a schedule that started years ago is not replayed."""
    if schedule.at is not None and not all(isinstance(v, str) for v in schedule.at):
        return (None, tuple(schedule.at)) if n == 0 else None  # type: ignore[arg-type]
    try:
        if schedule.at is not None:
            assert schedule.start is not None
            day = schedule.start.date() if isinstance(schedule.start, dt.datetime) else schedule.start
            if not isinstance(day, dt.date):
                raise ValueError("times of day need a date or timestamp 'start'")
            midnight = dt.datetime.combine(day + dt.timedelta(days=n), dt.time())
            return midnight, tuple(midnight + _time_of_day(str(v)) for v in schedule.at)
        start, step, points = _generated(schedule)
        origin = start if n == 0 else generate_time_points(start, step, 1, after=n * points - 1)[0]
        return origin, generate_time_points(start, step, points, after=n * points)
    except OverflowError:
        if n == 0:
            raise ValueError("the time points run past the largest date (9999-12-31)") from None
        return None


def cycle_index_at(schedule: ScheduleSpec, moment: TimeValue) -> int | None:
    """The index of the last cycle whose first time point is at or before ``moment`` (the cycle
    whose time points span it, or the one just before it when it falls between two cycles);
    ``None`` if ``moment`` is before the schedule's first time point. Computed from ``start`` and
    the step, not by listing cycles: a schedule starting in 1991 finds today's cycle at once. A
    date ``moment`` is taken as its midnight on a timestamp schedule; a timestamp as its date on
    a date schedule."""
    if schedule.at is not None and not all(isinstance(v, str) for v in schedule.at):
        first: TimeValue = schedule.at[0]  # type: ignore[assignment]
        return 0 if _not_after(first, _like(moment, first)) else None
    if schedule.at is not None:
        assert schedule.start is not None
        day = schedule.start.date() if isinstance(schedule.start, dt.datetime) else schedule.start
        if not isinstance(day, dt.date):
            raise ValueError("times of day need a date or timestamp 'start'")
        first_point = dt.datetime.combine(day, dt.time()) + _time_of_day(str(schedule.at[0]))
        at = _like(moment, first_point)
        assert isinstance(at, dt.datetime)
        days = (at - first_point) // dt.timedelta(days=1)
        return days if days >= 0 else None
    start, step, points = _generated(schedule)
    at = _like(moment, start)
    if isinstance(start, dt.datetime):
        assert isinstance(at, dt.datetime) and isinstance(step, dt.timedelta)
        steps = (at - start) // step  # the last time point at or before the moment: t_steps
    elif isinstance(start, dt.date):
        assert isinstance(at, dt.date) and isinstance(step, dt.timedelta)
        steps = (at - start).days // step.days
    else:
        assert isinstance(at, (int, float)) and isinstance(start, (int, float)) and isinstance(step, int)
        steps = int((at - start) // step)
    # Cycle n's first time point is t_{n·points + 1}.
    return (steps - 1) // points if steps >= 1 else None


def _generated(schedule: ScheduleSpec) -> tuple[TimeValue, dt.timedelta | int, int]:
    """A generated schedule's ``start``, step (``every``, or a range's slide) and points per cycle."""
    step = schedule.every if schedule.every is not None else (schedule.range.slide if schedule.range else None)
    assert schedule.start is not None and schedule.points is not None and step is not None
    return schedule.start, step, schedule.points


def _like(moment: TimeValue, reference: TimeValue) -> TimeValue:
    """``moment`` as a value of ``reference``'s kind, to compare or subtract the two."""
    if isinstance(reference, dt.datetime):
        if isinstance(moment, dt.datetime):
            if (moment.tzinfo is None) != (reference.tzinfo is None):
                raise ValueError(f"{moment} and the schedule's {reference} differ in having a time zone")
            return moment
        if isinstance(moment, dt.date):
            return dt.datetime.combine(moment, dt.time(), tzinfo=reference.tzinfo)
    elif isinstance(reference, dt.date):
        if isinstance(moment, dt.datetime):
            return moment.date()
        if isinstance(moment, dt.date):
            return moment
    elif isinstance(moment, (int, float)) and not isinstance(moment, bool):
        return moment
    raise ValueError(f"{moment!r} is not a time point of this schedule ({_time_kind(reference)} values)")


def _not_after(first: TimeValue, moment: TimeValue) -> bool:
    return bool(first <= moment)  # type: ignore[operator]


def generate_time_points(start: TimeValue, every: dt.timedelta | int, points: int, after: int = 0) -> tuple[TimeValue, ...]:
    """``start + (after + i) * every`` for ``i = 1..points``; dates step by whole days, integers
    by integers."""
    steps = range(after + 1, after + points + 1)
    if isinstance(start, dt.datetime):
        if not isinstance(every, dt.timedelta):
            raise ValueError(f"timestamps step by a duration such as 6h, not by {every}")
        return tuple(start + i * every for i in steps)
    if isinstance(start, dt.date):
        if not isinstance(every, dt.timedelta) or every % dt.timedelta(days=1):
            raise ValueError(f"dates step by whole days such as 1d, not by {every}")
        return tuple(start + i * every for i in steps)
    if not isinstance(every, int):
        raise ValueError(f"integer time points step by an integer, not by a duration ({every})")
    return tuple(start + i * every for i in steps)


def _time_kind(value: TimeValue) -> str:
    if isinstance(value, dt.datetime):
        return "timestamp" if value.tzinfo is None else "time-zoned timestamp"
    if isinstance(value, dt.date):
        return "date"
    return "number"


def _deliver_indices(deliver: Literal["last", "every"] | tuple[int, ...], k: int) -> tuple[int, ...]:
    if deliver == "last":
        return (k,)
    if deliver == "every":
        return tuple(range(1, k + 1))
    return tuple(sorted(deliver))


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
    paths: list[tuple[KeyPath, str]] = [(("sources", name, "path"), source.path) for name, source in model.sources.items()]
    if model.query_file is not None:
        paths.append((("query_file",), model.query_file))
    if model.output is not None:
        paths.append((("output", "path"), model.output.path))
    for key, path in paths:
        relative = _relative_part(path)
        if relative is not None and _climbs_out(relative):
            _fail(document, key, f"'{path}' is outside the spec's folder {folder}: a relative path stays inside it "
                  "(give an absolute path or a URI for data elsewhere)")
    if model.query_file is not None and _local_path(model.query_file, folder) is None:
        _fail(document, ("query_file",), f"'{model.query_file}' is not a local file: tempura reads the query itself")
    if model.output is not None:
        _check_output_path(document, model, folder)


def _check_output_path(document: YamlDocument, model: SpecFile, folder: Path) -> None:
    assert model.output is not None
    key: KeyPath = ("output", "path")
    output = model.output.path
    local = _local_path(output, folder)
    if local == folder:
        _fail(document, key, "the output folder cannot be the spec's own folder")
    if local is not None and local in folder.parents:
        _fail(document, key, f"'{output}' contains the spec's folder {folder}: a delivery replaces the output folder")
    for name, source in model.sources.items():
        overlap = _overlap(output, local, source.path, _local_path(source.path, folder))
        if overlap == "same":
            _fail(document, key, f"'{output}' is the folder of source '{name}': a delivery would replace its data")
        if overlap == "inside":
            _fail(document, key, f"'{output}' is inside the folder of source '{name}' ('{source.path}'): "
                  "deliveries would be read as its data")
        if overlap == "contains":
            _fail(document, key, f"'{output}' contains the folder of source '{name}' ('{source.path}'): "
                  "a delivery would replace its data")


def _overlap(a: str, a_local: Path | None, b: str, b_local: Path | None) -> Literal["same", "inside", "contains"] | None:
    """How the folder ``a`` lies against ``b``: the same, inside it, containing it, or apart."""
    if a_local is not None and b_local is not None:
        if a_local == b_local:
            return "same"
        return "inside" if b_local in a_local.parents else ("contains" if a_local in b_local.parents else None)
    if a_local is not None or b_local is not None:
        return None
    a_text, b_text = a.rstrip("/"), b.rstrip("/")
    if a_text == b_text:
        return "same"
    return "inside" if a_text.startswith(b_text + "/") else ("contains" if b_text.startswith(a_text + "/") else None)


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def _is_uri(path: str) -> bool:
    return bool(_SCHEME.match(path)) or path.startswith("file:")


def _relative_part(path: str) -> str | None:
    """A relative path's text (``file:`` dropped), or ``None`` for absolute paths and URIs."""
    text = path.removeprefix("file:")
    if text.startswith("/") or (text == path and _is_uri(path)):
        return None
    return text


def _climbs_out(relative: str) -> bool:
    normal = os.path.normpath(relative)
    return normal == os.pardir or normal.startswith(os.pardir + os.sep)


def _local_path(path: str, folder: Path) -> Path | None:
    """Where ``path`` is on this machine, resolved from ``folder``; ``None`` for a URI of another
    scheme, or a ``file:`` URI naming another host."""
    if path.startswith("file://"):
        host, _, rest = path.removeprefix("file://").partition("/")
        if host not in ("", "localhost"):
            return None
        return Path("/" + rest).resolve()
    if path.startswith("file:"):
        return (folder / path.removeprefix("file:")).resolve()
    if _is_uri(path):
        return None
    return (folder / path).resolve()  # an absolute path stays itself


def _location(path: str, folder: Path) -> str:
    """A URI as given (``file:`` ones too), any other path resolved from ``folder``."""
    if _is_uri(path) and _relative_part(path) is None:
        return path
    local = _local_path(path, folder)
    assert local is not None
    return str(local)


def _query_text(document: YamlDocument, model: SpecFile) -> str:
    if model.query is not None:
        return model.query
    assert model.query_file is not None
    file = _local_path(model.query_file, document.path.resolve().parent)
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


# ---------------------------------------------------------------------------------------------
# The validated spec.


@dataclass(frozen=True)
class Cycle:
    """One cycle of a schedule: its index (0-based), its origin ``t_0`` (``None``: the first and
    only cycle, with no earlier data excluded) and its time points."""

    index: int
    origin: TimeValue | None
    time_points: TimePoints

    @property
    def label(self) -> str:
        """A name for the cycle's folders: its origin, compact (``20261122T000000``), or its index."""
        if isinstance(self.origin, dt.datetime):
            return self.origin.strftime("%Y%m%dT%H%M%S")
        if isinstance(self.origin, dt.date):
            return self.origin.strftime("%Y%m%d")
        return f"{self.index:05d}"


@dataclass(frozen=True)
class Spec:
    """A validated spec: the model, the spec file's path and the query text."""

    model: SpecFile
    path: Path
    sql: str
    budget_key: str | None = None  # where state_budget is set ("file, line N: state_budget"), for errors
    where: tuple[tuple[str, str], ...] = ()  # key path -> "file, line N: key path", for the paths' errors
    home: Path | None = None  # the spec file's folder, absolute, as of loading (the working folder may change)

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

    def time_points(self) -> TimePoints:
        """The cycle's time points, with the indices whose results are delivered."""
        return self.cycle(0).time_points  # type: ignore[union-attr]

    def cycle(self, n: int) -> Cycle | None:
        """Cycle ``n`` (0-based) of the schedule, or ``None`` if the schedule has no such cycle."""
        found = cycle_values(self.model.schedule, n)
        if found is None:
            return None
        origin, values = found
        return Cycle(n, origin, TimePoints(values, _deliver_indices(self.model.schedule.deliver, len(values))))

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

    def location(self, source: str) -> str:
        """Where ``source``'s data lives: a URI as given, a path resolved from the spec's folder."""
        return _location(self.sources[source.lower()].path, self.folder)

    def output_location(self) -> str | None:
        """Where deliveries go (``output.path``): a URI as given, a path resolved from the spec's
        folder; ``None`` when the spec has no ``output``."""
        output = self.model.output
        return _location(output.path, self.folder) if output is not None else None

    def cycle_index_at(self, moment: TimeValue) -> int | None:
        """The cycle spanning ``moment`` (:func:`cycle_index_at`), computed, not searched for."""
        return cycle_index_at(self.model.schedule, moment)

    def missing_paths(self) -> list[str]:
        """One message per source path (local, or a ``file:`` URI) and ``query_file`` that does
        not exist now: ``file, line N: sources.x.path: /abs/x does not exist``. Other URIs are
        the cluster's to check."""
        keys = dict(self.where)
        paths: list[tuple[KeyPath, str]] = [(("sources", name, "path"), source.path)
                                            for name, source in self.model.sources.items()]
        if self.model.query_file is not None:
            paths.append((("query_file",), self.model.query_file))
        out = []
        for key_path, path in paths:
            local = _local_path(path, self.folder)
            if local is not None and not local.exists():
                key = key_text(key_path)
                out.append(f"{keys.get(key, f'{self.path}: {key}')}: {local} does not exist")
        return out

    def catalog(self) -> Catalog:
        """The sources as catalog tables, named in lower case."""
        tables = {}
        for name, source in self.sources.items():
            schema = {c.lower(): t.lower() for c, t in source.schema_.items()} if source.schema_ else None
            tables[name] = TableSource(name, self.location(name), source.format, dict(source.options), schema)
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
