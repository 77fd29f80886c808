"""Running bound queries on Spark: the plan goes to Spark as the SQL the back end prints."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tempura.algebra import Query
from tempura.errors import ExecutionError
from tempura.sql import to_spark_sql

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def spark_error_message(error: Exception) -> str:
    """The first line of a Spark error, without the JVM stack trace."""
    text = str(error).strip()
    first = text.splitlines()[0] if text else type(error).__name__
    return first.split("; line ")[0]


def execute(query: Query, spark: SparkSession) -> DataFrame:
    """A DataFrame that computes ``query`` with tempura's plan (its inputs must be registered)."""
    from pyspark.errors import PySparkException

    sql = to_spark_sql(query)
    try:
        return spark.sql(sql)
    except PySparkException as error:
        raise ExecutionError(f"Spark rejected the plan: {spark_error_message(error)}") from None
