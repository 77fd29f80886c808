"""Every output format gives back exactly the rows written: the tricky values one by one, and
``tempura query --out`` on TPC-H results that Spark's default CSV writer changes."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tempura import tpch
from tempura.catalog import Catalog
from tempura.cli import main
from tempura.errors import ExecutionError
from tempura.runtime import compare_results
from tempura.runtime.durable import write_frame
from tempura.runtime.outputs import FORMATS, MARKER_FILE, read_output, write_output

pytestmark = pytest.mark.spark

TRICKY_STRINGS = [
    " lead", "trail ", "  both  ", " ", "\t", "", None, "a,b", ",", 'q"uote', '"', '""', "new\nline",
    "cr\rlf\r\n", "\n", "back\\slash", "x\\", '\\"', "\\", "NULL", "\\N", "null", "#hash", "'single'",
    "ünï©ødé ✓", "\x00NULL",  # the CSV reader's first choice of a text no field holds
]
DOUBLES = [0.1, -0.0, 1e-300, 1.7976931348623157e308, 5e-324, float("nan"), float("inf"), float("-inf"),
           123456789.12345679, None]
DECIMALS = [Decimal("12345678901234567890.123456789012345678"), Decimal("0.000000000000000001"),
            Decimal("-1.500000000000000000"), Decimal("0E-18"), None]
MONEY = [Decimal("1234567890123.45"), Decimal("-0.01"), Decimal("0.00"), None]
DATES = [dt.date(2024, 2, 29), dt.date(1970, 1, 1), dt.date(9999, 12, 31), dt.date(1900, 1, 1), None]
TIMESTAMPS = [dt.datetime(2024, 2, 29, 23, 59, 59, 123456), dt.datetime(1970, 1, 1), dt.datetime(1999, 12, 31, 0, 0, 0, 1),
              dt.datetime(1900, 3, 1, 12, 30), None]
BOOLEANS = [True, False, None]

SCHEMA = ("id int, s string, dec decimal(38,18), money decimal(15,2), day date, ts timestamp, "
          "ntz timestamp_ntz, flag boolean, x double, f float, n bigint")


def _tricky_rows() -> list[tuple[Any, ...]]:
    count = max(len(TRICKY_STRINGS), len(DOUBLES))
    rows: list[tuple[Any, ...]] = []
    for i in range(count):
        def pick(values: list[Any]) -> Any:
            return values[i % len(values)]
        rows.append((i, TRICKY_STRINGS[i % len(TRICKY_STRINGS)], pick(DECIMALS), pick(MONEY), pick(DATES),
                     pick(TIMESTAMPS), pick(TIMESTAMPS), pick(BOOLEANS), pick(DOUBLES),
                     None if i % 4 == 3 else 1.5 * i, None if i % 5 == 4 else -(2**62) + i))
    rows.append((None,) * 11)  # a row of NULLs
    rows.append((count, "", None, None, None, None, None, None, None, None, None))  # '' beside NULLs
    return rows


def _typed(value: Any) -> tuple[str, str]:
    """A value with its type, exactly: repr keeps a decimal's scale, -0.0 and NaN."""
    return type(value).__name__, repr(value)


def _exact(rows: list[Any]) -> list[tuple[tuple[str, str], ...]]:
    return sorted(tuple(_typed(v) for v in row) for row in rows)


def _round_trip(spark: Any, frame: Any, folder: Path, fmt: str) -> list[Any]:
    write_output(frame, folder, fmt)
    back = read_output(spark, folder, fmt, frame.schema)
    assert back.schema == frame.schema
    return [tuple(r) for r in back.collect()]


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_tricky_value_round_trips(spark: Any, tmp_path: Path, fmt: str) -> None:
    rows = _tricky_rows()
    frame = spark.createDataFrame(rows, SCHEMA)
    written = [tuple(r) for r in frame.collect()]  # as Spark holds them (float columns rounded to float)
    assert _exact(_round_trip(spark, frame, tmp_path / "out", fmt)) == _exact(written)


@pytest.mark.parametrize("fmt", FORMATS)
def test_deliveries_keep_every_tricky_value(spark: Any, tmp_path: Path, fmt: str) -> None:
    """A standing query's delivery (``output.format``) is written by ``write_frame``."""
    frame = spark.createDataFrame(_tricky_rows(), SCHEMA)
    write_frame(frame, tmp_path / "delivery", fmt)
    back = read_output(spark, tmp_path / "delivery", fmt, frame.schema)
    assert _exact([tuple(r) for r in back.collect()]) == _exact([tuple(r) for r in frame.collect()])


@pytest.mark.parametrize("fmt", FORMATS)
def test_one_column_rows_holding_null_round_trip(spark: Any, tmp_path: Path, fmt: str) -> None:
    only_null = spark.createDataFrame([(None,)], "avg_yearly double")
    assert _round_trip(spark, only_null, tmp_path / "double", fmt) == [(None,)]
    strings = [(None,), ("",), (" x ",), ("\\N",), ("NULL_1",)]
    frame = spark.createDataFrame(strings, "s string")
    assert sorted(_round_trip(spark, frame, tmp_path / "strings", fmt), key=repr) == sorted(strings, key=repr)


def test_a_one_column_string_result_holding_the_marker_keeps_null_apart(spark: Any, tmp_path: Path) -> None:
    rows = [(None,), ("NULL",), ("\\N",), ("",), ("NULL_2",)]
    frame = spark.createDataFrame(rows, "s string").coalesce(1)
    folder = tmp_path / "out"
    assert sorted(_round_trip(spark, frame, folder, "csv"), key=repr) == sorted(rows, key=repr)
    assert (folder / MARKER_FILE).read_text() == "NULL_1"
    lines = "".join(p.read_text() for p in sorted(folder.glob("part-*"))).splitlines()
    assert sorted(lines) == sorted(["s", "NULL_1", "NULL", "\\N", '""', "NULL_2"])


def test_csv_keeps_white_space_and_tells_null_from_empty_in_the_file(spark: Any, tmp_path: Path) -> None:
    frame = spark.createDataFrame([(1, " lead", "trail "), (2, "", None)], "id int, a string, b string").coalesce(1)
    write_output(frame, tmp_path / "out", "csv")
    text = "".join(p.read_text() for p in sorted((tmp_path / "out").glob("part-*")))
    assert text.splitlines() == ["id,a,b", "1, lead,trail ", '2,"",']


def test_unknown_format_and_unwritable_types_are_one_line_errors(spark: Any, tmp_path: Path) -> None:
    frame = spark.createDataFrame([(1, [1, 2])], "id int, xs array<int>")
    with pytest.raises(ExecutionError, match="unknown output format 'xlsx'"):
        write_output(frame, tmp_path / "x", "xlsx")
    with pytest.raises(ExecutionError) as error:
        write_output(frame, tmp_path / "arrays", "csv")
    assert str(error.value).startswith(f"writing {tmp_path / 'arrays'} failed: ") and "\n" not in str(error.value)


@pytest.mark.parametrize("name", ["q10", "q17"])
@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_query_out_gives_back_what_spark_computes(spark: Any, tpch_catalog: Path, tmp_path: Path, name: str,
                                                  fmt: str) -> None:
    sql = tpch.query_text(name)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["query", "--catalog", str(tpch_catalog), sql, "--out", str(out), "--format", fmt])
    assert result.exit_code == 0, result.output
    Catalog.load(tpch_catalog).register(spark)
    expected = spark.sql(sql)
    actual = [tuple(r) for r in read_output(spark, out, fmt, expected.schema).collect()]
    rows = [tuple(r) for r in expected.collect()]
    if name == "q10":  # the result holds comments with leading white space
        assert any(r[-1].startswith(" ") for r in rows)
    else:  # a single row holding NULL
        assert rows == [(None,)]
    outcome = compare_results(rows, actual)
    assert outcome.equal, outcome.reason
    assert not any(isinstance(v, float) and math.isnan(v) for r in actual for v in r)
