"""What ``tempura validate`` finds beyond keys and paths: a corrupt parquet file among readable
ones (every footer read with pyarrow), a schedule of one cycle lying wholly before a source's
earliest arrival (the footers' statistics), and a function neither sqlglot nor Spark knows (Spark
asked only then)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from tempura.cli import main
from tempura.standing import StandingQuery

SPEC = """\
name: totals
query: |
  SELECT category,
    SUM(price) AS revenue
  FROM sales GROUP BY category
sources:
  sales:
    path: data/sales
    arrival: {column: arrives}
schedule:
  at: [1, 2]
  deliver: every
"""


def write_sales(folder: Path, arrives: list[list[int]]) -> list[Path]:
    """One parquet file per list of arrival values (statistics written, as pyarrow writes them)."""
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for n, values in enumerate(arrives):
        table = pa.table({"category": ["a"] * len(values), "price": list(range(len(values))), "arrives": values})
        path = folder / f"part-{n:05d}.parquet"
        pq.write_table(table, path)
        files.append(path)
    return files


def spec_at(tmp_path: Path, text: str = SPEC) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_readable_spec_is_valid(tmp_path: Path) -> None:
    write_sales(tmp_path / "data" / "sales", [[1, 2], [2]])
    found = StandingQuery(spec_at(tmp_path)).validate()
    assert found.ok, found.problems


def test_a_corrupt_file_among_readable_ones_is_named(tmp_path: Path) -> None:
    files = write_sales(tmp_path / "data" / "sales", [[1], [2], [1, 2]])
    files[1].write_bytes(files[1].read_bytes()[:40])  # truncated: its footer is gone
    spec = spec_at(tmp_path)
    found = StandingQuery(spec).validate()
    assert len(found.problems) == 1, found.problems
    problem = found.problems[0]
    assert problem.startswith(f"{spec}, line 8: sources.sales.path: {files[1]}: cannot read the parquet footer")
    assert "\n" not in problem and str(files[0]) not in problem and str(files[2]) not in problem
    result = CliRunner().invoke(main, ["validate", str(spec)])
    assert result.exit_code == 2 and result.output.startswith(f"error: {problem}")


def test_a_schedule_wholly_before_the_data_is_a_problem(tmp_path: Path) -> None:
    write_sales(tmp_path / "data" / "sales", [[5, 7], [6]])
    spec = spec_at(tmp_path)
    found = StandingQuery(spec).validate()
    assert found.problems == [f"{spec}, line 10: schedule: every time point (1 … 2) is before the earliest arrival "
                              "of sources.sales (5, from its files' statistics): no row of it arrives within the schedule"]


def test_a_schedule_reaching_the_data_is_not(tmp_path: Path) -> None:
    write_sales(tmp_path / "data" / "sales", [[2, 7], [6]])  # the earliest row arrives at t2
    assert StandingQuery(spec_at(tmp_path)).validate().ok


def test_timestamps_before_the_data_name_the_dates(tmp_path: Path) -> None:
    folder = tmp_path / "data" / "sales"
    folder.mkdir(parents=True)
    arrives = [dt.datetime(2026, 3, 1, 8), dt.datetime(2026, 3, 2)]
    pq.write_table(pa.table({"category": ["a", "b"], "price": [1, 2],
                             "arrives": pa.array(arrives, pa.timestamp("us", tz="UTC"))}), folder / "part-0.parquet")
    text = SPEC.replace("  at: [1, 2]", "  at: ['2026-02-01T00:00:00', '2026-02-02T00:00:00']")
    found = StandingQuery(spec_at(tmp_path, text)).validate()
    assert len(found.problems) == 1 and ": schedule: every time point (2026-02-01 00:00:00 … 2026-02-02 00:00:00) " \
        "is before the earliest arrival of sources.sales (2026-03-01 08:00:00" in found.problems[0]


def test_no_statistics_say_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "data" / "sales"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"category": ["a"], "price": [1], "arrives": [5]}), folder / "part-0.parquet",
                   write_statistics=False)
    assert StandingQuery(spec_at(tmp_path)).validate().ok


def test_a_repeating_schedule_is_never_wholly_before(tmp_path: Path) -> None:
    folder = tmp_path / "data" / "sales"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"category": ["a"], "price": [1],
                             "arrives": [dt.datetime(2026, 3, 1, 8)]}), folder / "part-0.parquet")
    text = SPEC.replace("  at: [1, 2]\n", "  start: '2020-01-01T00:00:00'\n  every: 12h\n  points: 2\n")
    assert StandingQuery(spec_at(tmp_path, text)).validate().ok  # a later cycle reaches the data


def test_known_functions_leave_spark_alone(tmp_path: Path) -> None:
    write_sales(tmp_path / "data" / "sales", [[1, 2]])
    text = SPEC.replace("SUM(price) AS revenue", "SUM(price) AS revenue, MIN(nvl2(price, 1, 0)) AS n, MAX(greatest(price, 2)) AS g")

    class NoSpark(StandingQuery):
        @property
        def spark(self) -> Any:
            raise AssertionError("validate started Spark")

    found = NoSpark(spec_at(tmp_path, text)).validate()
    assert found.ok, found.problems


@pytest.mark.spark
def test_an_unknown_function_is_named_at_its_position(spark: Any, tmp_path: Path) -> None:
    write_sales(tmp_path / "data" / "sales", [[1, 2]])
    text = SPEC.replace("    SUM(price) AS revenue\n", "    SUM(foo_bar(price)) AS revenue, MAX(array_max(array(price))) AS m\n")
    spec = spec_at(tmp_path, text)
    found = StandingQuery(spec, spark=spark).validate()
    assert found.problems == [f"{spec}, line 4, column 9: query: unknown function foo_bar (neither sqlglot nor "
                              "Spark knows it)"]
    qualified = spec_at(tmp_path, text.replace("foo_bar(price)", "nodb.nofn(price)"))
    assert StandingQuery(qualified, spark=spark).validate().problems == [
        f"{qualified}, line 4, column 9: query: unknown function nodb.nofn (neither sqlglot nor Spark knows it)"]
    spec = spec_at(tmp_path, text)
    spark.udf.register("foo_bar", lambda x: x, "bigint")  # a function registered in the session is known
    try:
        assert StandingQuery(spec, spark=spark).validate().ok
    finally:
        spark.sql("DROP TEMPORARY FUNCTION IF EXISTS foo_bar")
