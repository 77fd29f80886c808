"""Running planned queries on Spark: the plan goes to Spark as the SQL the back end prints, with
tempura's join order and a join-strategy hint on every join.

A pinned broadcast rests on tempura's bound of the build side's size, but a bound read from file
sizes can still be wrong (a column that compresses a hundredfold). :func:`run_with_fallback`
runs an action on the plan and, when Spark fails to build or send a broadcast (out of memory,
over its size limit, over ``spark.sql.broadcastTimeout``) or a pinned hash table does not fit
in a task's memory, runs it once more without tempura's broadcast hints, and if that fails the
same way, without any hash join hint — Spark then picks those joins' algorithms by its own
sizes, as ``spark.sql`` would, and its sort-merge joins spill rather than fail — and returns a
:class:`BroadcastFallback` saying so.

Spark would otherwise re-plan what tempura costed: its cost-based join reordering and a few
rule-based rewrites (``ReorderJoin``, the semi/anti join pushdowns) move joins, and adaptive
execution can switch join algorithms and coalesce partitions at run time.
:class:`SparkPlanning` says whether each is on; while tempura's plans run both are off by default,
so that what runs is what was costed. Spark reads these settings when a query executes, so they
are set on the session for as long as it runs tempura's plans. Whatever the session held before
tempura set them is remembered: :func:`spark_own_planning` puts it back while the user's own query
runs through ``spark.sql`` (a reference result, or Spark's side of a benchmark), since
``ReorderJoin`` turned off leaves a query's comma joins in their written order, cross products
and all.
"""

from __future__ import annotations

import re
import weakref
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, TypeVar

from tempura.algebra import LogicalPlan, Query
from tempura.errors import ExecutionError, PlanRejected
from tempura.sql import to_spark_sql

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


# Spark's rule-based optimizer moves joins too: it flattens inner joins and reorders them to avoid
# cross products, and pushes semi and anti joins below inner joins. With tempura's plan these
# would undo the costed order.
REORDERING_RULES = (
    "org.apache.spark.sql.catalyst.optimizer.ReorderJoin",
    "org.apache.spark.sql.catalyst.optimizer.PushLeftSemiLeftAntiThroughJoin",
    "org.apache.spark.sql.catalyst.optimizer.PushDownLeftSemiAntiJoin",
)

# Rules whose output Spark's own plan validation rejects on plans tempura writes: over a union of
# reads that are empty at a time point (a dimension's delta after it landed), Spark folds the
# branches away and ``RemoveRedundantAliases`` leaves attributes unresolved
# (``PLAN_VALIDATION_FAILED_RULE_IN_BATCH``; TPC-DS q84's incremental plans). The rule only drops
# aliases, which cost nothing at run time.
FRAGILE_RULES = ("org.apache.spark.sql.catalyst.optimizer.RemoveRedundantAliases",)


@dataclass(frozen=True)
class SparkPlanning:
    """Which of Spark's own plan changes stay on under tempura's plans."""

    join_reorder: bool = False
    adaptive: bool = False

    def conf(self) -> dict[str, str]:
        return {
            "spark.sql.cbo.joinReorder.enabled": str(self.join_reorder).lower(),
            "spark.sql.adaptive.enabled": str(self.adaptive).lower(),
            "spark.sql.optimizer.excludedRules": ",".join(FRAGILE_RULES + (() if self.join_reorder else REORDERING_RULES)),
        }

    def apply(self, spark: SparkSession) -> None:
        record = _TOUCHED.setdefault(spark, {})
        for key, value in self.conf().items():
            current = spark.conf.get(key, None)
            ours = key in record and current == record[key][1]  # else first set, or changed since by the user
            record[key] = (record[key][0] if ours else current, value)
            spark.conf.set(key, value)


# Per session, each planning setting tempura changed: (the value before, the value tempura set).
_TOUCHED: weakref.WeakKeyDictionary[Any, dict[str, tuple[str | None, str]]] = weakref.WeakKeyDictionary()


def _put(spark: SparkSession, key: str, value: str | None) -> None:
    if value is None:
        spark.conf.unset(key)
    else:
        spark.conf.set(key, value)


@contextmanager
def spark_own_planning(spark: SparkSession) -> Iterator[None]:
    """Within the block, Spark plans as it did before tempura's plans ran on ``spark`` (each
    setting :class:`SparkPlanning` changed and nobody changed since is put back); after it, the
    settings are as they were at its start."""
    record = _TOUCHED.get(spark, {})
    saved = {key: spark.conf.get(key, None) for key in record}
    for key, (before, applied) in record.items():
        if saved[key] == applied:
            _put(spark, key, before)
    try:
        yield
    finally:
        for key, value in saved.items():
            _put(spark, key, value)


def spark_rows(frame: DataFrame) -> list[tuple[Any, ...]]:
    """The rows of ``frame`` (a user's own query through ``spark.sql``), computed as Spark plans it
    by its own settings (:func:`spark_own_planning`)."""
    with spark_own_planning(frame.sparkSession):
        return [tuple(r) for r in frame.collect()]


RAISED_BY_PLAN = re.compile(r"\[USER_RAISED_EXCEPTION\] (.*?) SQLSTATE: P0001")
"""Spark's error for ``raise_error``: a plan's own check failed (a scalar subquery returned more
than one row), and its message is the whole story. It reaches Python as a converted error, or
(raised while a broadcast is built) inside the JVM's wrapping exception."""


def raised_by_plan(error: Exception) -> str | None:
    """The message of the plan's own check that failed in ``error``, if that is what it is."""
    found = RAISED_BY_PLAN.search(str(error))
    return found.group(1) if found else None


MALFORMED = re.compile(r"\[MALFORMED_RECORD_IN_PARSING[^\]]*\] Malformed records are detected in record parsing: "
                       r"(.*?)\.?\s+Parse Mode: (\w+)", re.DOTALL)
READING = re.compile(r"Encountered error while reading file (\S+?)\.?\s")
JAVA_CALL = "An error occurred while calling "
UNPARSED = re.compile(r'(?:NumberFormatException|DateTimeParseException|IllegalArgumentException)[^\n]*?'
                      r'(?:For input string|Text|Illegal pattern character|Cannot parse)?:?\s*"([^"\n]*)"')


def spark_error_message(error: Exception) -> str:
    """The first line of a Spark error, without the JVM stack trace; for a check of the plan's own
    (``raise_error``), its message alone; for a malformed row a reader stopped at (``mode:
    FAILFAST``), the file and the row; for the JVM's own exception, its message, not py4j's."""
    raised = raised_by_plan(error)
    if raised is not None:
        return raised
    text = str(error).strip()
    malformed = MALFORMED.search(text)
    if malformed is not None:
        read = READING.search(text)
        where = f" in {read.group(1)}" if read else ""
        value = UNPARSED.search(text)
        what = f"{value.group(1)!r} does not parse" if value else f"read as {malformed.group(1).strip()}"
        return f"a malformed row{where}: {what} (parse mode {malformed.group(2)})"
    lines = text.splitlines()
    first = lines[0] if lines else type(error).__name__
    if first.startswith(JAVA_CALL):  # py4j's line names only the call: the exception's is below it
        thrown = next((line[2:] for line in lines[1:] if line.startswith(": ")), None)
        if thrown:
            first = thrown.split(": ", 1)[1] if re.match(r"[\w.$]+(Exception|Error): ", thrown) else thrown
    return first.split("; line ")[0]


def execute(
    query: Query,
    spark: SparkSession,
    hints: Mapping[LogicalPlan, tuple[str, str]] | None = None,
    planning: SparkPlanning | None = None,
) -> DataFrame:
    """A DataFrame that computes ``query`` with tempura's plan (its inputs must be registered),
    under Spark's names and types of the query where Spark analyzed it (:func:`conform`)."""
    from pyspark.errors import PySparkException

    if hints is not None or planning is not None:
        (planning or SparkPlanning()).apply(spark)
    sql = to_spark_sql(query, hints=hints)
    try:
        frame = spark.sql(sql)
    except PySparkException as error:
        raise PlanRejected(f"Spark rejected the plan: {spark_error_message(error)}") from None
    return conform(frame, query.result)


def analyzed_types(spark: SparkSession) -> Callable[[str], list[str] | None]:
    """Spark's analyzer as :func:`tempura.sql.parse_query` asks it: the types of a query's output
    columns (Spark's type strings), or ``None`` when Spark rejects the query. Analysis runs no
    job."""
    from pyspark.errors import PySparkException

    def describe(sql: str) -> list[str] | None:
        try:
            return [f.dataType.simpleString() for f in spark.sql(sql).schema.fields]
        except PySparkException:
            return None

    return describe


def analyze_query(spark: SparkSession, sql: str, tables: Mapping[str, Mapping[str, str]]) -> StructType:
    """Spark's analysis of ``sql`` (its output columns' names and types) over empty tables of the
    columns ``tables`` gives, in a session of its own: its views leave the caller's untouched, and
    it runs no job. Raises what Spark raises when it rejects the query."""
    from pyspark.sql import SparkSession as Session

    from tempura.sql.names import quote_identifier

    session = spark.newSession()
    try:
        for key, value in spark.conf.getAll.items():
            if key.startswith("spark.sql.") and session.conf.isModifiable(key):
                session.conf.set(key, value)  # the same SQL settings (ANSI mode, the time zone) as the caller's
        for name, columns in tables.items():
            nulls = ", ".join(f"CAST(NULL AS {t}) AS {quote_identifier(c)}" for c, t in columns.items())
            session.sql(f"SELECT {nulls} WHERE FALSE").createOrReplaceTempView(quote_identifier(name))
        return session.sql(sql).schema
    finally:  # pyspark makes a session active as it builds frames: the caller's stays the active one
        Session._activeSession = spark
        jvm = spark.sparkContext._jvm
        assert jvm is not None
        jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)


def spark_result(spark: SparkSession, sql: str, dialect: str = "spark",
                 tables: Mapping[str, Mapping[str, str]] | None = None) -> str:
    """Spark's analysis of the query ``sql`` as written: its result ``StructType`` as JSON (the
    names, types and nullability of its columns), over the session's catalog or, with ``tables``,
    over empty views of those columns (:func:`analyze_query`). Runs no job. A query in another
    dialect is transpiled to Spark's first. Where Spark rejects the query, that is the user's
    error: :class:`~tempura.errors.SparkRejects`, with Spark's error class, at its line and column
    in the text (a transpiled query's at none)."""
    import sqlglot
    from pyspark.errors import PySparkException

    from tempura.errors import SparkRejects
    from tempura.sql.parse import offset_to_line_col

    text = sql if dialect == "spark" else sqlglot.transpile(sql, read=dialect, write="spark")[0]
    try:
        schema = analyze_query(spark, text, tables) if tables is not None else spark.sql(text).schema
    except PySparkException as error:
        contexts = error.getQueryContext() if dialect == "spark" else []
        line = column = None
        if contexts and contexts[0].startIndex() >= 0:
            line, column = offset_to_line_col(text, contexts[0].startIndex())
        raise SparkRejects(f"Spark rejects the query: {spark_error_message(error)}", line, column) from None
    return schema.json()


def conform(frame: DataFrame, result: str | None, extra: bool = False) -> DataFrame:
    """``frame`` under the names and types of Spark's analysis ``result`` (:attr:`Query.result`):
    each column renamed to Spark's name and, where its type differs, cast to Spark's type. With
    ``extra``, columns past the result's (a delivery's change column) stay as they are. A column
    count other than Spark's is tempura's bug, raised as :class:`~tempura.errors.InternalError`."""
    import json

    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    from tempura.errors import InternalError

    if result is None:
        return frame
    fields = StructType.fromJson(json.loads(result)).fields
    have = frame.schema.fields
    if len(have) < len(fields) or (len(have) > len(fields) and not extra):
        raise InternalError(f"tempura's plan has {len(have)} result columns where Spark's analysis of the query has "
                            f"{len(fields)}: {', '.join(f.name for f in fields)}")
    if all(h.name == f.name and h.dataType == f.dataType for h, f in zip(have, fields)):
        return frame
    positional = frame.toDF(*[f"_{i}" for i in range(len(have))])
    columns = [F.col(f"_{i}") if h.dataType == f.dataType else F.col(f"_{i}").cast(f.dataType)
               for i, (h, f) in enumerate(zip(have, fields))]
    named = [c.alias(f.name) for c, f in zip(columns, fields)]
    named += [F.col(f"_{i}").alias(have[i].name) for i in range(len(fields), len(have))]
    return positional.select(*named)


def spark_errors() -> tuple[type[Exception], ...]:
    """What Spark raises while it computes a plan: converted errors, and the JVM's own (a failure
    while a broadcast is built arrives wrapped so)."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    return PySparkException, Py4JJavaError


def collect_rows(frame: DataFrame, limit: int | None = None) -> list[Any]:
    """The rows of ``frame`` (its first ``limit``); a failure while Spark computes them is an
    :class:`ExecutionError` of one line, the plan's own checks' message as it is."""
    try:
        return (frame if limit is None else frame.limit(limit)).collect()
    except spark_errors() as error:
        raise plan_failure(error) from None


def plan_failure(error: Exception) -> ExecutionError:
    """A failure of Spark computing a plan as one line: the plan's own checks' message as it is
    (a scalar subquery of several rows), else Spark's first line."""
    raised = raised_by_plan(error)
    return ExecutionError(raised or f"Spark failed running the plan: {spark_error_message(error)}")


T = TypeVar("T")

Hints = Mapping[LogicalPlan, tuple[str, str]]

# What Spark says when a broadcast cannot be built or sent (BroadcastExchangeExec's errors), or a
# hash table does not fit in a task's memory (a pinned shuffled hash join's build side).
BROADCAST_FAILURES = (
    "Not enough memory to build and broadcast",
    "Cannot broadcast the table",
    "Could not execute broadcast in",
    "spark.sql.broadcastTimeout",
    "SparkOutOfMemoryError",
    "UNABLE_TO_ACQUIRE_MEMORY",
)

HASH_JOIN_HINTS = ("BROADCAST", "SHUFFLE_HASH")


def _chain(error: BaseException) -> Iterator[BaseException]:
    """``error`` and the errors it was raised from or while handling (a Spark error that
    tempura's own one-line error replaced)."""
    seen: set[int] = set()
    found: BaseException | None = error
    while found is not None and id(found) not in seen:
        seen.add(id(found))
        yield found
        found = found.__cause__ or found.__context__


def is_broadcast_failure(error: Exception) -> bool:
    """Whether ``error`` (a Spark error, with its JVM trace, or an error raised while handling
    one) is a broadcast or a hash table that did not fit, at run time."""
    return any(marker in f"{type(e).__name__}: {e}" for e in _chain(error) for marker in BROADCAST_FAILURES)


def broadcast_failure_line(error: Exception) -> str:
    """The line of ``error`` (or of the error it was raised from) that names the failure (else
    ``error``'s first line)."""
    for found in _chain(error):
        for line in str(found).splitlines():
            if any(marker in line for marker in BROADCAST_FAILURES):
                return line.strip().removeprefix(": ")
    return spark_error_message(error)


def without_broadcasts(hints: Hints | None) -> dict[LogicalPlan, tuple[str, str]]:
    """``hints`` without the broadcast ones (the joins they pinned are left to Spark)."""
    return {plan: hint for plan, hint in (hints or {}).items() if hint[0] != "BROADCAST"}


def without_hash_joins(hints: Hints | None) -> dict[LogicalPlan, tuple[str, str]]:
    """``hints`` without any hash join strategy (broadcast or shuffled): every join left to
    Spark, whose sort-merge joins spill rather than fail."""
    return {plan: hint for plan, hint in (hints or {}).items() if hint[0] not in HASH_JOIN_HINTS}


@dataclass(frozen=True)
class BroadcastFallback:
    """A run whose pinned hash joins failed in Spark and that ran again without (some of) them."""

    dropped: int
    error: str

    @property
    def message(self) -> str:
        return (f"a hash join tempura pinned failed in Spark ({self.error}); ran the query again without "
                f"{self.dropped} of its join hint{'s' if self.dropped != 1 else ''}")

    def to_json(self) -> dict[str, object]:
        return {"dropped_join_hints": self.dropped, "error": self.error}


def run_with_fallback(
    query: Query,
    spark: SparkSession,
    hints: Hints | None,
    action: Callable[[DataFrame], T],
    planning: SparkPlanning | None = None,
) -> tuple[T, BroadcastFallback | None]:
    """``action`` on the DataFrame of ``query`` under tempura's plan. If a pinned broadcast or
    hash table does not fit at run time, ``action`` again without the broadcast hints, then, if
    that fails the same way, without any hash join hint; the fallback is returned for the caller
    to show and record. Any other error, or one of a plan without such hints, propagates."""
    try:
        return action(execute(query, spark, hints, planning)), None
    except Exception as error:
        if not is_broadcast_failure(error) or without_hash_joins(hints) == dict(hints or {}):
            raise
        failure = broadcast_failure_line(error)
    attempts: list[dict[LogicalPlan, tuple[str, str]]] = []
    for kept in (without_broadcasts(hints), without_hash_joins(hints)):
        if kept != dict(hints or {}) and kept not in attempts:
            attempts.append(kept)
    for i, kept in enumerate(attempts):
        try:
            return action(execute(query, spark, kept, planning)), BroadcastFallback(len(hints or {}) - len(kept), failure)
        except Exception as error:
            if i == len(attempts) - 1 or not is_broadcast_failure(error):
                raise
            failure = broadcast_failure_line(error)
    raise AssertionError("no fallback to try")  # the first failure re-raises when there is none
