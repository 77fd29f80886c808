"""Whose fault it is. A standing query is put to Spark's analyzer when it is planned: a query
Spark rejects is the user's error, one line at its position in the spec file; a plan of an accepted
query that Spark then rejects is tempura's, said so in one line with the time point and fragment,
and the command exits with status 70 instead of a user error's 2."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from tempura.cli import INTERNAL, user_errors
from tempura.errors import InternalError, SqlError
from tempura.scheduler import load_spec
from tempura.scheduler.planning import prepare


def spec(folder: Path, query: str) -> Path:
    (folder / "spec.yaml").write_text(
        f"name: checked\nquery: |\n  {query}\nsources:\n  sales:\n    path: data/sales\n"
        "    arrival: {column: sold_at}\nschedule:\n  start: '2026-11-20T00:00:00'\n  every: 6h\n  points: 2\n")
    return folder / "spec.yaml"


@pytest.mark.spark
def test_a_query_spark_rejects_is_the_users_error_at_its_position(spark: Any, tmp_path: Path) -> None:
    spark.createDataFrame([("a", 3, None)], "category STRING, price INT, sold_at TIMESTAMP") \
        .write.parquet(str(tmp_path / "data" / "sales"))
    path = spec(tmp_path, "SELECT category, array_contains(category, price) AS hit FROM sales")
    with pytest.raises(SqlError) as raised:
        prepare(load_spec(path), spark, tmp_path / "work")
    message = str(raised.value)
    # the query's column 18, in the spec file: a literal block from line 3, indented by two
    assert message.startswith(f"{path}, line 3, column 20: query: Spark rejects the query: [DATATYPE_MISMATCH"), message
    assert (raised.value.line, raised.value.column) == (3, 20)
    assert "\n" not in message
    accepted = prepare(load_spec(spec(tmp_path, "SELECT category, date_trunc('HOUR', sold_at) AS h FROM sales")),
                       spark, tmp_path / "work")
    assert [f.type for f in accepted.query.plan.schema.fields] == ["string", "timestamp"]
    # the analysis ran in a session of its own, and the caller's is still the active one: Spark
    # reads settings such as spark.sql.cbo.enabled from the active session as it plans
    from pyspark.sql import SparkSession

    assert SparkSession.getActiveSession() is spark
    active = spark.sparkContext._jvm.org.apache.spark.sql.SparkSession.getActiveSession().get()
    assert active.equals(spark._jsparkSession)


def test_tempuras_own_fault_is_one_line_and_status_70() -> None:
    @click.command()
    @user_errors
    def broken() -> None:
        raise InternalError("t3 of cycle 20261120T000000, fragment f2: Spark rejected the plan: [UNSUPPORTED_DATATYPE]")

    result = CliRunner().invoke(broken, [])
    assert result.exit_code == INTERNAL == 70
    lines = [line for line in result.output.splitlines() if line]
    assert len(lines) == 1 and lines[0].startswith("internal error: t3 of cycle"), result.output
    assert "Traceback" not in result.output and sys.exc_info() == (None, None, None)
