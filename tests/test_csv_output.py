"""A CSV output is one file with one header line: ``tempura query --out`` and a standing query's
delivery alike leave the folder holding ``part-00000.csv`` alone (written by one Spark task to a
hidden temporary folder and renamed into place), and Spark reading that file back with
``header=true`` and the delivered schema gives what ``spark.sql`` of the query gives."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tempura import tpch
from tempura.catalog import Catalog
from tempura.cli import main
from tempura.runtime import compare_results
from tempura.runtime.outputs import CSV_FILE, read_output, write_output
from tempura.scheduler import load_spec
from tempura.scheduler.runner import Runner

pytestmark = pytest.mark.spark

START = dt.datetime(2026, 11, 20)
SPEC = ("name: sales\nquery: SELECT category, day, SUM(price) AS revenue FROM sales GROUP BY category, day\n"
        "sources:\n  sales:\n    path: data/sales\n    arrival: {column: sold_at}\n"
        f"schedule:\n  start: '{START.isoformat()}'\n  every: 12h\n  points: 2\n"
        "output: {path: out/sales, format: csv}\n")


def visible(folder: Path) -> list[str]:
    """The files of a folder a reader of data sees (Spark's readers leave out ``.`` and ``_``)."""
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith((".", "_")))


def assert_one_csv(folder: Path, columns: list[str], rows: int) -> Path:
    assert visible(folder) == [CSV_FILE]
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(f".{folder.name}.")]  # no temporary left
    lines = (folder / CSV_FILE).read_text(encoding="utf-8").splitlines()
    header = ",".join(columns)
    assert lines[0] == header and lines.count(header) == 1
    assert len(lines) == 1 + rows
    return folder / CSV_FILE


def read_back(spark: Any, file: Path, schema: Any) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in spark.read.option("header", "true").schema(schema).csv(str(file)).collect()]


def test_query_out_writes_one_csv_file_with_one_header(spark: Any, tpch_catalog: Path, tmp_path: Path) -> None:
    sql = tpch.query_text("q03")
    out = tmp_path / "out"
    for _ in range(2):  # the second write replaces the first
        result = CliRunner().invoke(main, ["query", "--catalog", str(tpch_catalog), sql, "--out", str(out),
                                           "--format", "csv"])
        assert result.exit_code == 0, result.output
    Catalog.load(tpch_catalog).register(spark)
    expected = spark.sql(sql)
    rows = [tuple(r) for r in expected.collect()]
    assert len(rows) > 1
    file = assert_one_csv(out, expected.columns, len(rows))
    outcome = compare_results(rows, read_back(spark, file, expected.schema))
    assert outcome.equal, outcome.reason
    assert sorted(map(repr, rows)) == sorted(repr(tuple(r)) for r in read_output(spark, out, "csv", expected.schema).collect())


def test_an_empty_result_is_the_header_alone(spark: Any, tmp_path: Path) -> None:
    frame = spark.createDataFrame([], "id int, name string")
    write_output(frame, tmp_path / "out", "csv")
    assert_one_csv(tmp_path / "out", ["id", "name"], 0)
    assert read_output(spark, tmp_path / "out", "csv", frame.schema).count() == 0


def test_a_delivery_is_one_csv_file_with_one_header(spark: Any, tmp_path: Path) -> None:
    rows = [(f"c{i % 3}", dt.date(2026, 11, 1 + i % 2), i, START + dt.timedelta(minutes=7 * i + 1)) for i in range(120)]
    frame = spark.createDataFrame(rows, "category STRING, day DATE, price INT, sold_at TIMESTAMP").repartition(4)
    frame.write.parquet(str(tmp_path / "data" / "sales"))
    (tmp_path / "spec.yaml").write_text(SPEC)
    spec = load_spec(tmp_path / "spec.yaml")
    done = Runner(spec, spark, tmp_path / "work").run_due(now=START + dt.timedelta(hours=24))
    assert [r.index for r in done] == [1, 2]  # t2 delivers (deliver: last)
    spark.read.parquet(str(tmp_path / "data" / "sales")).createOrReplaceTempView("sales")
    expected = spark.sql(spec.sql)
    wanted = [tuple(r) for r in expected.collect()]
    file = assert_one_csv(tmp_path / "out" / "sales", expected.columns, len(wanted))
    outcome = compare_results(wanted, read_back(spark, file, expected.schema))
    assert outcome.equal, outcome.reason
