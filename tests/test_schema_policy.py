"""A source's schema policy, on Spark, by the clock: under ``schema: strict`` (the default) a new
file whose columns differ from the committed ones stops its time point in one line; under
``schema: add_columns`` a file adding a column the query does not read, or lacking one, is
taken, a column Spark widens (``int`` to ``bigint``) is read as the wider type, committed so,
and the result is ``spark.sql`` over the same files (a file holding the narrower type is read
as the committed wider one), and a column the query reads that a file lacks, or holds
as a type Spark does not widen to, stops the time point in one line naming the source, the
file, the column and the types, with nothing committed. The spec refuses a word it does not
know, naming the key and its line."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tempura.errors import TempuraError
from tempura.runtime import compare_results
from tempura.scheduler import SpecError, load_spec
from tempura.scheduler.runner import PointResult, Runner

START = dt.datetime(2026, 11, 20)
T1, T2 = START + dt.timedelta(hours=12), START + dt.timedelta(hours=24)
SALES = "category STRING, price INT, note STRING, sold_at TIMESTAMP"
QUERY = "SELECT category, SUM(price) AS revenue, COUNT(*) AS n FROM sales GROUP BY category"

Rows = list[tuple[Any, ...]]


def put(spark: Any, folder: Path, name: str, schema: str, rows: Rows) -> Path:
    """``rows`` as the one parquet file ``data/sales/name``."""
    scratch = folder / f"scratch-{name}"
    spark.createDataFrame(rows, schema).coalesce(1).write.parquet(str(scratch))
    target = folder / "data" / "sales" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(next(scratch.glob("*.parquet"))), target)
    shutil.rmtree(scratch)
    return target


def at(hours: float) -> dt.datetime:
    return START + dt.timedelta(hours=hours)


def first_day(spark: Any, folder: Path) -> Path:
    return put(spark, folder, "part-1.parquet", SALES, [("a", 1, "x", at(1)), ("b", 2, None, at(2)), ("a", 3, "y", at(5))])


def spec(folder: Path, policy: str | None) -> Path:
    line = f"    schema: {policy}\n" if policy is not None else ""
    (folder / "spec.yaml").write_text(
        f"name: policy\nquery: {QUERY}\nsources:\n  sales:\n    path: data/sales\n{line}"
        "    arrival: {column: sold_at}\n"
        f"schedule:\n  start: '{START.isoformat()}'\n  every: 12h\n  points: 2\n")
    return folder / "spec.yaml"


def run(folder: Path, spark: Any, policy: str | None, now: dt.datetime) -> list[PointResult]:
    """The job's due time points at ``now``, run as a fresh process would run them."""
    return Runner(load_spec(spec(folder, policy)), spark, folder / "work").run_due(now=now)


def stopped(folder: Path, spark: Any, policy: str | None, now: dt.datetime) -> str:
    """The one-line error of a time point that stops."""
    with pytest.raises(TempuraError) as raised:
        run(folder, spark, policy, now)
    text = str(raised.value)
    assert "\n" not in text, text
    assert "nothing was committed" in text, text
    return text


def reference(spark: Any, files: list[Path], schema: str) -> Rows:
    """``spark.sql(QUERY)`` over ``files`` read with ``schema``."""
    spark.read.schema(schema).parquet(*[str(f) for f in files]).createOrReplaceTempView("sales")
    return [tuple(r) for r in spark.sql(QUERY).collect()]


def delivered(spark: Any, result: PointResult) -> Rows:
    assert result.delivered is not None, f"t{result.index} delivered nothing"
    return [tuple(r) for r in spark.read.parquet(result.delivered).collect()]


def assert_equal(expected: Rows, got: Rows) -> None:
    outcome = compare_results(expected, got)
    assert outcome.equal, f"{outcome.reason} (expected {sorted(expected)}, got {sorted(got)})"


@pytest.mark.spark
@pytest.mark.parametrize("policy", [None, "strict"])
def test_strict_stops_at_an_added_column(spark: Any, tmp_path: Path, policy: str | None) -> None:
    first_day(spark, tmp_path)
    assert [r.index for r in run(tmp_path, spark, policy, T1)] == [1]
    added = put(spark, tmp_path, "part-2.parquet", SALES + ", coupon STRING", [("a", 4, "z", at(13), "c")])
    text = stopped(tmp_path, spark, policy, T2)
    assert f"source 'sales': schema drift in {added.as_uri()}: adds coupon" in text, text
    added.unlink()
    assert [r.index for r in run(tmp_path, spark, policy, T2)] == [2]


@pytest.mark.spark
def test_add_columns_takes_added_and_dropped_columns_the_query_does_not_read(spark: Any, tmp_path: Path) -> None:
    good = first_day(spark, tmp_path)
    assert [r.index for r in run(tmp_path, spark, "add_columns", T1)] == [1]
    added = put(spark, tmp_path, "part-2.parquet", SALES + ", coupon STRING", [("a", 4, "z", at(13), "c")])
    dropped = put(spark, tmp_path, "part-3.parquet", "category STRING, price INT, sold_at TIMESTAMP",
                  [("c", 5, at(14)), ("b", 6, at(20))])
    done = run(tmp_path, spark, "add_columns", T2)
    assert [r.index for r in done] == [2]
    assert_equal(reference(spark, [good, added, dropped], SALES), delivered(spark, done[-1]))


@pytest.mark.spark
def test_add_columns_widens_int_to_bigint(spark: Any, tmp_path: Path) -> None:
    good = first_day(spark, tmp_path)
    assert [r.index for r in run(tmp_path, spark, "add_columns", T1)] == [1]
    wide = SALES.replace("price INT", "price BIGINT")
    widened = put(spark, tmp_path, "part-2.parquet", wide, [("a", 2**40, None, at(13)), ("c", 7, "w", at(15))])
    done = run(tmp_path, spark, "add_columns", T2)
    assert [r.index for r in done] == [2]
    expected = reference(spark, [good, widened], wide)
    assert ("a", 2**40 + 4, 3) in expected, expected
    assert_equal(expected, delivered(spark, done[-1]))
    # committed as the wider type: the reference the next files are held to
    recorded = json.loads(done[-1].manifest["source_schemas"]["sales"])
    assert {f["name"]: f["type"] for f in recorded["fields"]}["price"] == "long", recorded


@pytest.mark.spark
def test_add_columns_reads_a_narrower_type_as_the_committed_one(spark: Any, tmp_path: Path) -> None:
    """The committed ``bigint`` stands for a file holding ``int``; a column the query does not
    read retyped past widening (``note`` as ``int``) is left out of the reading."""
    wide = SALES.replace("price INT", "price BIGINT")
    good = put(spark, tmp_path, "part-1.parquet", wide, [("a", 2**40, "x", at(1)), ("b", 2, None, at(2))])
    assert [r.index for r in run(tmp_path, spark, "add_columns", T1)] == [1]
    narrow = put(spark, tmp_path, "part-2.parquet", "category STRING, price INT, note INT, sold_at TIMESTAMP",
                 [("a", 4, 9, at(13)), ("c", 5, None, at(16))])
    done = run(tmp_path, spark, "add_columns", T2)
    assert [r.index for r in done] == [2]
    spark.read.schema(wide).parquet(str(good)).unionByName(
        spark.read.parquet(str(narrow)).selectExpr("category", "CAST(price AS BIGINT) AS price", "CAST(note AS STRING) AS note",
                                                   "sold_at")).createOrReplaceTempView("sales")
    assert_equal([tuple(r) for r in spark.sql(QUERY).collect()], delivered(spark, done[-1]))


@pytest.mark.spark
def test_add_columns_stops_at_a_dropped_column_the_query_reads(spark: Any, tmp_path: Path) -> None:
    first_day(spark, tmp_path)
    assert [r.index for r in run(tmp_path, spark, "add_columns", T1)] == [1]
    lacking = put(spark, tmp_path, "part-2.parquet", "category STRING, note STRING, sold_at TIMESTAMP",
                  [("a", "z", at(13))])
    text = stopped(tmp_path, spark, "add_columns", T2)
    assert f"source 'sales': schema drift in {lacking.as_uri()}: lacks price (int), which the query reads" in text, text
    lacking.unlink()
    assert [r.index for r in run(tmp_path, spark, "add_columns", T2)] == [2]


@pytest.mark.spark
def test_add_columns_stops_at_a_retyped_column_the_query_reads(spark: Any, tmp_path: Path) -> None:
    first_day(spark, tmp_path)
    assert [r.index for r in run(tmp_path, spark, "add_columns", T1)] == [1]
    retyped = put(spark, tmp_path, "part-2.parquet", SALES.replace("price INT", "price STRING"),
                  [("a", "4", "z", at(13))])
    text = stopped(tmp_path, spark, "add_columns", T2)
    assert (f"source 'sales': schema drift in {retyped.as_uri()}: price is string, not int, which the query reads, "
            "and Spark widens neither to the other") in text, text
    retyped.unlink()
    assert [r.index for r in run(tmp_path, spark, "add_columns", T2)] == [2]


def test_a_word_the_spec_does_not_know_names_the_key_and_line(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as raised:
        load_spec(spec(tmp_path, "add_column"))
    assert str(raised.value) == (f"{tmp_path / 'spec.yaml'}, line 6: sources.sales.schema: 'add_column' is not strict, "
                                 "add_columns or a mapping of columns to Spark types")
    assert load_spec(spec(tmp_path, "add_columns")).model.sources["sales"].schema_policy == "add_columns"
    assert load_spec(spec(tmp_path, None)).model.sources["sales"].schema_policy == "strict"
    assert load_spec(spec(tmp_path, "{category: string, sold_at: timestamp}")).model.sources["sales"].declared_schema == \
        {"category": "string", "sold_at": "timestamp"}


def test_add_columns_is_refused_for_csv(tmp_path: Path) -> None:
    text = spec(tmp_path, "add_columns").read_text().replace("    schema:", "    format: csv\n    schema:")
    (tmp_path / "spec.yaml").write_text(text)
    with pytest.raises(SpecError) as raised:
        load_spec(tmp_path / "spec.yaml")
    assert "line 7: sources.sales.schema: CSV files' columns are matched by position" in str(raised.value), raised.value
