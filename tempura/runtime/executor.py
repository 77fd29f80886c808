"""Running planned queries on Spark: the plan goes to Spark as the SQL the back end prints, with
tempura's join order and a join-strategy hint on every join.

Spark would otherwise re-plan what tempura costed: its cost-based join reordering and a few
rule-based rewrites (``ReorderJoin``, the semi/anti join pushdowns) move joins, and adaptive
execution can switch join algorithms and coalesce partitions at run time.
:class:`SparkPlanning` says whether each is on; while tempura's plans run both are off by default,
so that what runs is what was costed. Spark reads these settings when a query executes, so they
are set on the session for as long as it runs tempura's plans.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from tempura.algebra import LogicalPlan, Query
from tempura.errors import ExecutionError
from tempura.sql import to_spark_sql

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


# Spark's rule-based optimizer moves joins too: it flattens inner joins and reorders them to avoid
# cross products, and pushes semi and anti joins below inner joins. With tempura's plan these
# would undo the costed order.
REORDERING_RULES = (
    "org.apache.spark.sql.catalyst.optimizer.ReorderJoin",
    "org.apache.spark.sql.catalyst.optimizer.PushLeftSemiLeftAntiThroughJoin",
    "org.apache.spark.sql.catalyst.optimizer.PushDownLeftSemiAntiJoin",
)


@dataclass(frozen=True)
class SparkPlanning:
    """Which of Spark's own plan changes stay on under tempura's plans."""

    join_reorder: bool = False
    adaptive: bool = False

    def conf(self) -> dict[str, str]:
        return {
            "spark.sql.cbo.joinReorder.enabled": str(self.join_reorder).lower(),
            "spark.sql.adaptive.enabled": str(self.adaptive).lower(),
            "spark.sql.optimizer.excludedRules": "" if self.join_reorder else ",".join(REORDERING_RULES),
        }

    def apply(self, spark: SparkSession) -> None:
        for key, value in self.conf().items():
            spark.conf.set(key, value)


RAISED_BY_PLAN = re.compile(r"\[USER_RAISED_EXCEPTION\] (.*?) SQLSTATE: P0001")
"""Spark's error for ``raise_error``: a plan's own check failed (a scalar subquery returned more
than one row), and its message is the whole story. It reaches Python as a converted error, or
(raised while a broadcast is built) inside the JVM's wrapping exception."""


def raised_by_plan(error: Exception) -> str | None:
    """The message of the plan's own check that failed in ``error``, if that is what it is."""
    found = RAISED_BY_PLAN.search(str(error))
    return found.group(1) if found else None


def spark_error_message(error: Exception) -> str:
    """The first line of a Spark error, without the JVM stack trace; for a check of the plan's own
    (``raise_error``), its message alone."""
    raised = raised_by_plan(error)
    if raised is not None:
        return raised
    text = str(error).strip()
    first = text.splitlines()[0] if text else type(error).__name__
    return first.split("; line ")[0]


def execute(
    query: Query,
    spark: SparkSession,
    hints: Mapping[LogicalPlan, tuple[str, str]] | None = None,
    planning: SparkPlanning | None = None,
) -> DataFrame:
    """A DataFrame that computes ``query`` with tempura's plan (its inputs must be registered)."""
    from pyspark.errors import PySparkException

    if hints is not None or planning is not None:
        (planning or SparkPlanning()).apply(spark)
    sql = to_spark_sql(query, hints=hints)
    try:
        return spark.sql(sql)
    except PySparkException as error:
        raise ExecutionError(f"Spark rejected the plan: {spark_error_message(error)}") from None


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
        raised = raised_by_plan(error)
        raise ExecutionError(raised or f"Spark failed running the plan: {spark_error_message(error)}") from None
