"""The shape of a spec file: the pydantic models of its keys, and the parsers of its values
(time values, durations, sizes, times of day). pydantic checks each key's shape here; the rules
that tie keys together are :mod:`checks`'."""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)
from sqlglot.dialects.dialect import Dialects

from tempura.catalog import Format, check_location, format_name, table_name
from tempura.errors import TempuraError
from tempura.tvr.arrival import SourceArrival
from tempura.tvr.time import TimeValue

# Under the ``deadline`` preset, work before the last time point costs this much per unit: idle
# hours are nearly free, yet among plans equal at the deadline the one doing less work wins.
DEADLINE_EPSILON = 1e-3


_DURATION = re.compile(r"(\d+)\s*([wdhms])")


_SIZE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)")


_SIZE_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
               "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


_DURATION_UNITS = {"w": "weeks", "d": "days", "h": "hours", "m": "minutes", "s": "seconds"}


_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


_JOB_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


class SpecError(TempuraError):
    """The spec file of a standing query is missing, malformed or inconsistent."""


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


SCHEMA_POLICIES = ("strict", "add_columns")
"""The words ``schema`` takes instead of a mapping of column types."""


def _schema(raw: object) -> object:
    # Checked whole here, so that a mistake reads as one line rather than one per alternative.
    if raw is None or (isinstance(raw, str) and raw in SCHEMA_POLICIES):
        return raw
    if isinstance(raw, str):
        raise ValueError(f"'{raw}' is not strict, add_columns or a mapping of columns to Spark types")
    if not isinstance(raw, dict):
        raise ValueError("must be strict, add_columns or a mapping of columns to Spark types")
    for column, kind in raw.items():
        if not isinstance(column, str) or not column.strip():
            raise ValueError(f"column {column!r} is not a column's name")
        if not isinstance(kind, str) or not kind.strip():
            raise ValueError(f"column '{column}': the type must be a Spark type's name, not {kind!r}")
    return raw


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


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class ArrivalColumn(_Strict):
    """``arrival``: the column holding each row's arrival time (``column``), or ``by: file``: a
    file's rows arrive at the first time point at which tempura finds the file. ``with`` maps
    sources declaring a ``key`` to a column of this one: each row lands in the interval in which
    the row whose key it holds lands (a line item with its order); with ``within``, it lands
    with that row or at most ``within`` after it (a return within 12 hours of its sale)."""

    column: Text | None = None
    """The column holding each row's arrival time (a timestamp, a date or a number, as the
    schedule's time points are)."""
    by: Literal["file"] | None = None
    """``file``: a file's rows arrive at the first time point at which tempura finds the file."""
    with_: dict[str, Text] = Field(default={}, alias="with")
    """Source → this source's column holding that source's ``key``: each row lands in the
    interval the row it refers to lands in (``{orders: l_orderkey}``)."""
    within: Duration | None = None
    """With ``with``: a row lands with the row it refers to or at most this long after it
    (``12h``)."""


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
    """One entry of ``sources``: where a source's data lives (a folder's ``path``, or a ``table``
    of Spark's catalog), how its rows arrive."""

    path: Text | None = None
    """The source's folder: relative to the spec file (and inside its folder), an absolute path,
    or any URI Spark reads."""
    table: Annotated[str, AfterValidator(table_name)] | None = None
    """Instead of ``path``: a table of Spark's catalog (``db.name``)."""
    format: Annotated[str, AfterValidator(format_name)] = "parquet"
    """``parquet``, ``csv``, ``json``, ``orc``, or a format a jar on Spark's classpath provides."""
    options: Annotated[dict[str, str], BeforeValidator(_reader_options)] = {}
    """Options passed to Spark's reader (``{header: true}``)."""
    schema_: Annotated[dict[str, Text] | Literal["strict", "add_columns"], BeforeValidator(_schema)] | None = Field(
        default=None, alias="schema")
    """Column → Spark type (read so, and held to those names), or how a new file's columns may
    differ from the committed ones (read from the files): ``strict`` (the default) stops the time
    point at any difference; ``add_columns`` takes a file with columns the query does not read
    (added, or dropped), and one whose column's type Spark widens the committed type to or from
    (``int`` and ``bigint``: read as ``bigint``), and stops at a column the query reads that the
    file lacks or holds as a type Spark widens neither way (for ``parquet``, ``orc`` and ``json``)."""
    arrival: ArrivalColumn
    """How the source's rows arrive (below)."""
    changes: ChangeColumns | None = None
    """The source delivers change data: insertions and deletions (below)."""
    expected: Annotated[ExpectedArrival | None, BeforeValidator(_expected_arrival)] = None
    """The share of the rows arriving per interval (``[0.5, 0.3, 0.2]``, summing to at most 1), or
    the rows per interval (``{rows: [1000, 1200]}``); measured from the data when absent."""
    key: Text | None = None
    """A column whose every value lands once in a cycle."""
    history: Literal["keep", "fresh"] | None = None
    """Whether the rows that arrived before a cycle's origin count in the cycle: ``keep`` (a
    dimension keeps its history) or ``fresh`` (a fact table starts afresh with each cycle). By
    default a source arriving by a column starts afresh, and one arriving by file keeps every
    file it finds: its rows have no arrival values to tell old from new."""

    @property
    def declared_schema(self) -> dict[str, str] | None:
        """The declared columns' types (``schema`` as a mapping), if any."""
        return self.schema_ if isinstance(self.schema_, dict) else None

    @property
    def schema_policy(self) -> Literal["strict", "add_columns"]:
        """How a new file's columns may differ from the committed ones: ``strict`` unless
        ``schema: add_columns`` (declared columns are held strictly)."""
        return "add_columns" if self.schema_ == "add_columns" else "strict"

    @property
    def keeps_history(self) -> bool:
        """Whether rows from before a cycle's origin count in the cycle."""
        return self.history == "keep" or (self.history is None and self.arrival.by == "file")

    @model_validator(mode="after")
    def _path_or_table(self) -> SourceSpec:
        check_location(self.path, self.table, self.format, "format" in self.model_fields_set)
        return self


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
    """How far back each result reaches (``7d``)."""
    slide: Duration
    """How far the window moves from one time point to the next (``1d``)."""


def _at_value(raw: object) -> object:
    if isinstance(raw, str) and _TIME_OF_DAY.fullmatch(raw.strip()):
        return raw.strip()
    return parse_time_value(raw)


class ScheduleSpec(_Strict):
    """``schedule``: explicit time points (``at``: values, or times of day repeated daily from
    ``start``'s date) or ``start`` + ``i`` × ``every`` for ``points`` time points per cycle, which
    time points deliver a result, and an optional periodic ``range``."""

    at: tuple[Annotated[TimeValue | str, BeforeValidator(_at_value)], ...] | None = None
    """The time points (ISO timestamps, dates or numbers), or times of day (``"06:00"``,
    ``"24:00"``) repeated daily from ``start``'s date."""
    start: TimePointValue | None = None
    """The first cycle's origin, ``t_0``."""
    every: Duration | None = None
    """With ``start`` and ``points``: the step between time points (``6h``; a number between
    numeric time points)."""
    points: Annotated[int, Field(ge=1)] | None = None
    """With ``start`` and ``every``: the time points per cycle."""
    deliver: Annotated[Literal["last", "every"] | tuple[int, ...], BeforeValidator(_deliver)] = "last"
    """Which time points deliver a result: ``last``, ``every``, or a list of 1-based indices (on
    an ``endless`` schedule, ``every`` by default: each refresh of a view kept forever delivers)."""
    range: RangeSpec | None = None
    """A periodic range query: each result covers the rows of the last ``length`` (below)."""
    endless: Annotated[bool, Field(strict=True)] = False
    """Whether the cycles continue one another: every row since ``start`` counts (a source that
    keeps its history counts the rows before it too), each cycle starts from the history and
    the states the one before left, and ``points`` is how far ahead each planning looks."""
    allow_many_points: Annotated[bool, Field(strict=True)] = False
    """A cycle of more than 10,000 time points (:data:`MAX_TIME_POINTS`) is taken as a mistake
    (every plan and manifest lists them all) unless this says it is meant."""
    target_lag: Duration | None = None
    """Instead of ``every`` and ``points``: how old a delivered result may grow (``15m``) before
    the next one replaces it; tempura chooses the time points between ``start`` and
    ``deadline`` (:mod:`tempura.scheduler.freshness`), every one delivering."""
    deadline: TimePointValue | None = None
    """With ``target_lag``: the one cycle's last time point; without it the schedule is endless,
    in cycles of 8 target lags."""
    lag_weight: NonNegative = 1.0
    """With ``target_lag``: how many seconds of work one second of a result's age beyond the
    target is worth, when more time points cost more work and fewer leave results older."""

    @model_validator(mode="before")
    @classmethod
    def _endless_delivers_every(cls, raw: object) -> object:
        if isinstance(raw, dict) and (raw.get("endless") is True or "target_lag" in raw) and "deliver" not in raw:
            return {**raw, "deliver": "every"}
        return raw


class ObjectiveSpec(_Strict):
    """``objective``: a preset, or one weight per time point (the objective is Σ w_i · c_i)."""

    preset: Literal["deadline", "total"] | None = None
    """``deadline``: the last time point's cost weighs 1 and the others almost nothing; ``total``:
    every time point's cost weighs alike."""
    weights: tuple[NonNegative, ...] | None = None
    """Instead of ``preset``: one weight per time point."""
    margin: Annotated[float, Field(ge=0, lt=1)] | None = None
    """The share of recomputation's objective an incremental plan must save for ``auto`` to take
    it (the planner's default when absent)."""


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
    """``output``: where delivered results go, a folder (``path``, in ``format``) or a ``table``
    of Spark's catalog. ``snapshot`` replaces the folder's (or table's) contents with each
    delivery; ``delta`` appends each delivery's change (with the multiplicity column ``__m``) as
    one ``cycle=…/time_point=…`` partition."""

    path: Text | None = None
    """The folder deliveries go to (not the spec's folder, nor a source's, nor around either)."""
    table: Annotated[str, AfterValidator(table_name)] | None = None
    """Instead of ``path``: a table of Spark's catalog."""
    format: Format = "parquet"
    """``parquet``, ``csv``, ``json`` or ``orc``; a CSV delivery is one file with one header line,
    ``part-00000.csv`` in the folder (in the partition's, for ``delta``)."""
    mode: Literal["snapshot", "delta"] = "snapshot"
    """``snapshot``: each delivery replaces the contents; ``delta``: each delivery's change is
    appended as a partition."""

    @model_validator(mode="after")
    def _path_or_table(self) -> OutputSpec:
        check_location(self.path, self.table, self.format, "format" in self.model_fields_set)
        return self


class SparkSpec(_Strict):
    """``spark``: the master URL (default ``local[*]``) and any Spark settings; settings given at
    launch (``spark-submit``, ``spark-defaults.conf``) and ``TEMPURA_SPARK_MASTER`` win over
    these (:mod:`tempura.runtime.spark`)."""

    master: Text | None = None
    """Spark's master URL (``local[*]`` when absent)."""
    conf: Annotated[dict[str, str], BeforeValidator(_reader_options)] = {}
    """Spark settings (``spark.sql.shuffle.partitions: 8``)."""


def _hook_target(text: str) -> str:
    module, _, function = text.partition(":")
    if not module or not function or not all(part.isidentifier() for part in [*module.split("."), function]):
        raise ValueError(f"'{text}' is not 'package.module:function'")
    return text


class HooksSpec(_Strict):
    """``hooks``: ``on_run`` names a function (``package.module:function``) called with each
    committed time point's run summary; ``on_failure`` one called with the event log's record of
    each failed attempt (:mod:`tempura.scheduler.events`)."""

    on_run: Annotated[str, AfterValidator(_hook_target)] | None = None
    """A function (``package.module:function``) called with each committed time point's run
    summary."""
    on_failure: Annotated[str, AfterValidator(_hook_target)] | None = None
    """A function called with the event log's record of each failed attempt."""


class SpecFile(_Strict):
    """The whole spec file, as validated."""

    name: Annotated[str, AfterValidator(_job_name)]
    """The job's name: letters, digits, ``_``, ``-`` and ``.`` (it names the job's folder)."""
    query: Text | None = None
    """The standing query's SQL."""
    query_file: Text | None = None
    """Instead of ``query``: a file holding it, relative to the spec file."""
    dialect: Annotated[str, AfterValidator(_dialect)] = "spark"
    """The query's SQL dialect (any of sqlglot's); it runs as Spark SQL."""
    sources: dict[str, SourceSpec]
    """Source name (as the query names the table) → where its data lives and how it arrives."""
    schedule: ScheduleSpec
    """The time points at which work may run and results are due."""
    objective: ObjectiveSpec = ObjectiveSpec(preset="deadline")
    """What the planner minimizes: Σ w_i · c_i over the time points."""
    state_budget: Size | None = None
    """The most bytes of kept states alive at once (``10GB``; B, kB, MB, GB, TB are powers of
    1000, KiB, MiB, GiB, TiB of 1024)."""
    late: Literal["reject", "next"] = "reject"
    """A late row (in a file first found at ``t_i``, arriving at or before ``t_{i-1}``): ``reject``
    sets it aside under ``rejected/`` and counts it; ``next`` takes it into the interval it is
    found in."""
    integrity: Literal["enforced", "trusted"] = "enforced"
    """``enforced``: declared keys and ``with`` are checked as rows land; ``trusted``: taken as
    declared."""
    output: OutputSpec | None = None
    """Where deliveries go besides the job's folder (below)."""
    spark: SparkSpec = SparkSpec()
    """Spark's master and settings for this job's runs."""
    hooks: HooksSpec = HooksSpec()
    """Functions called as the job runs."""
    cost: dict[str, Annotated[float, BeforeValidator(_scientific), Field(ge=0)]] = {}
    """The cost model's constants for this query (``{stage: 1e9, executors: 8}``); ``stage`` is
    fitted to the job's run history unless set here."""
    max_catch_up: Annotated[int, Field(ge=1, strict=True)] = 1
    """How many cycles a normal run may catch up on: when the wall clock finds more cycles due,
    the older ones are left to an explicit catch-up."""
    nondeterministic: Literal["refuse", "recompute"] = "refuse"
    """What a query that reads chance (``rand()``, ``uuid()``) gets: refused in one line naming the
    call, or recomputed at every time point (its results then cannot be checked)."""
    allow_empty: Annotated[bool, Field(strict=True)] = False
    """Whether a delivery with no rows may replace one that has rows (``false``: it is an error,
    taken as a sign of missing input)."""


# The most time points a cycle may have unless ``schedule.allow_many_points`` says more are meant:
# every plan, manifest and weight list holds one entry per time point.
MAX_TIME_POINTS = 10_000


_TIME_OF_DAY = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?")


def time_of_day(text: str) -> dt.timedelta:
    """``"06:00"`` as the time since midnight; ``"24:00"`` is the next midnight."""
    match = _TIME_OF_DAY.fullmatch(text)
    if match is None:
        raise ValueError(f"'{text}' is not a time of day such as 06:00")
    hours, minutes, seconds = int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)
    offset = dt.timedelta(hours=hours, minutes=minutes, seconds=seconds)
    if minutes > 59 or seconds > 59 or offset > dt.timedelta(hours=24) or hours > 24:
        raise ValueError(f"'{text}' is not a time of day between 00:00 and 24:00")
    return offset
