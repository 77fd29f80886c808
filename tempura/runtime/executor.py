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

from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

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


def spark_error_message(error: Exception) -> str:
    """The first line of a Spark error, without the JVM stack trace."""
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
