"""What landing reads of a source, on Spark: an interval's arrival bounds reach the parquet reader,
which skips the files and row groups outside them, and a source arriving by file reads only its
new files. Landing the interval then reads what arrived, not the source's history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tempura.runtime.files import uri
from tempura.runtime.ingest import FILE, Feed, interval_rows, read_source
from tempura.runtime.metrics import Meter

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("fast_spark")]

ROWS = 4000


def source(spark: Any, folder: Path) -> dict[str, tuple[int, int, int]]:
    """Four parquet files of ``ROWS / 4`` rows each, holding consecutive ranges of the arrival
    column ``a`` (as data written while it arrives): each file's path as the file system lists
    it, with its least and greatest ``a`` and its rows."""
    import pyarrow.parquet as pq

    quarter = ROWS // 4
    for i in range(4):
        spark.range(i * quarter, (i + 1) * quarter).selectExpr("id AS a", "id % 7 AS k", "CAST(id AS STRING) AS v") \
            .coalesce(1).write.mode("append").parquet(str(folder))
    out = {}
    for path in folder.glob("*.parquet"):
        column = pq.read_table(path, columns=["a"]).column("a").to_pylist()
        out[uri(str(path))] = (min(column), max(column), len(column))
    assert sorted(out.values()) == [(i * quarter, (i + 1) * quarter - 1, quarter) for i in range(4)]
    return out


def measured(spark: Any, rows: Any) -> tuple[int, list[Any], int]:
    """The rows and bytes the scan read to collect ``rows`` (each with its file, as the checks
    naming files take them), and the rows."""
    with Meter(spark).measure("land") as metrics:
        out = rows.collect()
    return metrics.rows_in, out, metrics.bytes_in


def test_an_interval_reads_only_the_row_groups_its_arrival_bounds_reach(spark: Any, tmp_path: Path) -> None:
    """Interval 3 of four, ``(1999, 2999]``, reads the third file: the bounds are pushed into the
    reader though each row carries its file (the checks name files), where
    ``input_file_name()`` kept them out and every row of the history was read."""
    files = source(spark, tmp_path / "s")
    feed = Feed("s", str(tmp_path / "s"), arrival_column="a")
    raw = read_source(spark, feed)
    rows, late = interval_rows(feed, raw, set(), -1, [999, 1999, 2999, 3999], 3, "reject", None, keep_file=True)
    read, out, size = measured(spark, rows)
    assert late is None
    assert sorted(r["a"] for r in out) == list(range(2000, 3000))
    assert read == ROWS // 4, read
    third = {f for f, (low, _, _) in files.items() if low == 2000}
    assert {r[FILE] for r in out} == third
    # the bytes Spark counts are the bytes read: the third file's, and the others' footers
    file_bytes = Path(third.pop().removeprefix("file://")).stat().st_size
    assert 0.8 * file_bytes <= size <= 2 * file_bytes, (size, file_bytes)


def test_a_source_arriving_by_file_reads_only_its_new_files(spark: Any, tmp_path: Path) -> None:
    """The rows of the files first found now: the filter on each row's file prunes the others
    before any is opened."""
    files = source(spark, tmp_path / "s")
    new = sorted(files, key=lambda f: files[f][0])[1:3]
    feed = Feed("s", str(tmp_path / "s"))
    raw = read_source(spark, feed)
    rows, _ = interval_rows(feed, raw, set(new), None, [1, 2], 2, "reject", None, keep_file=True)
    read, out, _ = measured(spark, rows)
    assert sorted(r["a"] for r in out) == list(range(files[new[0]][0], files[new[1]][1] + 1))
    assert read == ROWS // 2, read
    assert {r[FILE] for r in out} == set(new)


WIDE = "category string, price int, note string, arrived_at timestamp"
WIDE_ROWS = [("a", 1, "x", "2026-01-01 06:00:00"), ("b", 2, "yy", "2026-01-01 12:00:00"),
             ("a", 4, "zzz", "2026-01-02 06:00:00"), ("c", 8, "w", "2026-01-03 06:00:00")]
SUMS = "SELECT category, SUM(price) AS total FROM sales GROUP BY category"
NOTES = "SELECT category, SUM(price) AS total, SUM(length(note)) AS notes FROM sales GROUP BY category"


def wide_job(spark: Any, folder: Path, query: str) -> Path:
    from pyspark.sql import functions as F

    spark.createDataFrame([r[:3] + (r[3],) for r in WIDE_ROWS], WIDE.replace("timestamp", "string")) \
        .withColumn("arrived_at", F.col("arrived_at").cast("timestamp")).coalesce(1) \
        .write.mode("overwrite").parquet(str(folder / "data" / "sales"))
    spec = folder / "spec.yaml"
    spec.write_text(f"name: wide\nquery: |\n  {query}\nsources:\n  sales:\n    path: data/sales\n"
                    f"    arrival: {{column: arrived_at}}\nschedule:\n  start: \"2026-01-01T00:00:00\"\n"
                    f"  every: 1d\n  points: 3\n  deliver: every\n")
    return spec


def expected(spark: Any, spec: Any, index: int) -> list[tuple[Any, ...]]:
    """``spark.sql`` of the spec's query over the source's rows as of ``t_index``, read from the
    source's own files."""
    from tempura.scheduler.reference import reference

    return [tuple(r) for r in reference(spark, spec, spec.cycle(0), index).collect()]


def test_a_landing_keeps_the_columns_the_query_reads(spark: Any, tmp_path: Path) -> None:
    """The landing holds the query's columns and the arrival column, not the note it never
    reads, and every time point delivers ``spark.sql``. When the query changes to read the note,
    the next time point stops in one line, committing nothing, until ``repair --from t1`` lands
    the cycle again with it; then it runs and delivers ``spark.sql`` of the new query."""
    from pyspark.sql import functions as F

    from tempura.errors import TempuraError
    from tempura.runtime import compare_results
    from tempura.scheduler import load_spec
    from tempura.scheduler.runner import RunError, Runner

    spec_path = wide_job(spark, tmp_path, SUMS)
    spec = load_spec(spec_path)
    runner = Runner(spec, spark, tmp_path / "work", "ivm")
    cycle = spec.cycle(0)
    assert cycle is not None
    for index in (1, 2):
        result = runner.run_point(cycle, index)
        assert result.delivered is not None
        got = [tuple(r) for r in spark.read.parquet(result.delivered).collect()]
        assert compare_results(expected(spark, spec, index), got).equal, (index, got)
        landed = runner.store.landing_interval(cycle.label, "sales", index)
        assert spark.read.parquet(uri(landed)).columns == ["category", "price", "arrived_at", "__tp"]
    assert result.manifest["source_schemas"]["sales"].count('"name"') == 4  # the source's own columns, for drift

    spec_path.write_text(spec_path.read_text().replace(SUMS, NOTES))
    changed = load_spec(spec_path)
    with pytest.raises(RunError) as error:
        Runner(changed, spark, tmp_path / "work", "ivm").run_point(cycle, 3)
    text = str(error.value)
    assert isinstance(error.value, TempuraError) and "\n" not in text
    assert "sources.sales" in text and "note" in text and "repair --from t1" in text, text
    assert not list((tmp_path / "work").rglob("t003.json"))

    again = Runner(changed, spark, tmp_path / "work", "ivm")
    assert [r.index for r in again.repair(first=1)] == [1, 2]
    result = again.run_point(cycle, 3)
    assert result.delivered is not None
    got = [tuple(r) for r in spark.read.parquet(result.delivered).collect()]
    assert compare_results(expected(spark, changed, 3), got).equal, got
    assert spark.read.parquet(uri(again.store.landing_interval(cycle.label, "sales", 1))).where(F.col("note").isNull()).count() == 0
