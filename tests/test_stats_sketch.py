"""Statistics kept from the delta alone (tempura.stats.sketch): a sketch of two parts merged
equals, within the sketches' error, the statistics of the whole computed exactly by Spark;
deletions adjust counts exactly; a sketch observed while a frame is written is the sketch of
the rows written; the sketches survive a round trip through JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tempura.stats.model import TableStats
from tempura.stats.sketch import ObservedSketch, TableSketch, collect_sketch

pytestmark = pytest.mark.spark

COLUMNS = {"id": "bigint", "cat": "string", "price": "double", "day": "date", "at": "timestamp", "q": "int"}


def frame(spark: Any, start: int, end: int) -> Any:
    return spark.range(start, end).selectExpr(
        "id", "IF(id % 11 = 0, NULL, concat('c', CAST(pmod(hash(id), 37) AS STRING))) AS cat",
        "CAST(pmod(hash(id, 2), 1000) AS DOUBLE) / 4 AS price",
        "date_add(DATE '2026-01-01', CAST(id % 300 AS INT)) AS day",
        "TIMESTAMP '2026-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, CAST(id * 7 AS INT)) AS at",
        "CAST(id % 5 AS INT) AS q")


def exact(spark: Any, data: Any) -> dict[str, Any]:
    data.createOrReplaceTempView("sketch_exact")
    return spark.sql("""SELECT COUNT(*) AS rows, COUNT(DISTINCT id) AS d_id, COUNT(DISTINCT cat) AS d_cat,
        COUNT(DISTINCT price) AS d_price, COUNT(DISTINCT day) AS d_day, COUNT(DISTINCT q) AS d_q,
        COUNT(*) - COUNT(cat) AS z_cat, MIN(price) AS lo_price, MAX(price) AS hi_price,
        percentile(price, 0.5) AS median_price FROM sketch_exact""").collect()[0].asDict()


def test_merged_sketch_matches_spark_over_the_whole(spark: Any) -> None:
    first, second = frame(spark, 0, 6000), frame(spark, 6000, 10000)
    merged = collect_sketch(first, COLUMNS, ["a"])[0].merged(collect_sketch(second, COLUMNS, ["b"])[0], spark)
    stats = merged.to_stats(spark)
    truth = exact(spark, first.unionByName(second))
    assert stats.rows == truth["rows"] == 10000
    assert merged.files == frozenset({"a", "b"})
    for name in ("id", "cat", "price", "day", "q"):
        assert stats.columns[name].ndv == pytest.approx(truth[f"d_{name}"], rel=0.05), name
    assert stats.columns["cat"].nulls == truth["z_cat"]
    assert stats.columns["price"].min == truth["lo_price"] and stats.columns["price"].max == truth["hi_price"]
    histogram = stats.columns["price"].histogram
    assert histogram is not None and histogram.rows == pytest.approx(10000)
    middle = histogram.bins[len(histogram.bins) // 2].lo
    assert middle == pytest.approx(truth["median_price"], rel=0.05)
    assert stats.columns["at"].min == pytest.approx(1767225600.0)  # 2026-01-01 in seconds


def test_deletions_adjust_counts_exactly(spark: Any) -> None:
    from pyspark.sql import functions as F

    rows = frame(spark, 0, 1000).withColumn("__op", F.when(F.col("id") < 200, "D").otherwise("I"))
    sketch, counts = collect_sketch(rows, COLUMNS, deleted=F.col("__op") == "D", intervals=[F.col("id") < 500, F.col("id") >= 500])
    assert counts == [(500, 200), (500, 0)]
    assert (sketch.inserted, sketch.deleted, sketch.rows) == (800, 200, 600)
    stats = sketch.to_stats(spark)
    deleted_nulls = sum(1 for i in range(200) if i % 11 == 0)
    inserted_nulls = sum(1 for i in range(200, 1000) if i % 11 == 0)
    assert stats.columns["cat"].nulls == inserted_nulls - deleted_nulls
    assert stats.columns["id"].ndv is not None and stats.columns["id"].ndv <= 600  # capped by the rows


def test_observed_while_writing_is_the_written_rows(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    data = frame(spark, 0, 3000).withColumn("__file", F.when(F.col("id") < 1000, "old").otherwise("new"))
    observed = ObservedSketch(COLUMNS, ["new"], keep=F.col("__file") == "new")
    observed.attach(data).drop("__file").write.parquet(str(tmp_path / "out"))
    sketch = observed.result()
    assert sketch.inserted == 2000 and sketch.files == frozenset({"new"})
    truth = exact(spark, frame(spark, 1000, 3000))
    assert sketch.columns["price"].min == truth["lo_price"]
    stats = sketch.to_stats(spark)
    assert stats.columns["id"].ndv == pytest.approx(2000, rel=0.05)
    assert spark.read.parquet(str(tmp_path / "out")).count() == 3000


def test_round_trip_through_json(spark: Any) -> None:
    sketch, _ = collect_sketch(frame(spark, 0, 500), COLUMNS, ["x"])
    again = TableSketch.from_json(sketch.to_json())
    assert again == sketch
    stats = sketch.to_stats(spark)
    stored = TableStats.from_json({**stats.to_json(), "sketch": sketch.to_json()})
    assert stored.sketch is not None and TableSketch.from_json(stored.sketch) == sketch


def test_columns_outside_the_distributions_keep_counts_and_range_only(spark: Any) -> None:
    """A column the query does not compare rows on gets no distinct count nor histogram, but its
    counts, nulls and range; merged with a sketch that has them, its distinct count is unknown
    (never the one part's), while merged with a sketch of no rows it keeps them."""
    part, _ = collect_sketch(frame(spark, 0, 1000), COLUMNS, ["a"], distributions={"cat", "day"})
    stats = part.to_stats(spark)
    truth = exact(spark, frame(spark, 0, 1000))
    assert stats.columns["cat"].ndv == pytest.approx(truth["d_cat"], rel=0.05)
    assert stats.columns["day"].histogram is not None
    for name in ("id", "price", "at", "q"):
        assert stats.columns[name].ndv is None and stats.columns[name].histogram is None, name
    assert stats.columns["price"].min == truth["lo_price"] and stats.columns["price"].max == truth["hi_price"]
    assert stats.columns["cat"].nulls == truth["z_cat"]
    whole, _ = collect_sketch(frame(spark, 1000, 2000), COLUMNS, ["b"])
    merged = part.merged(whole, spark).to_stats(spark)
    assert merged.columns["price"].ndv is None and merged.columns["cat"].ndv is not None
    assert merged.columns["price"].max == exact(spark, frame(spark, 0, 2000))["hi_price"]
    empty, _ = collect_sketch(frame(spark, 0, 0), COLUMNS, ["c"], distributions=set())
    kept = whole.merged(empty, spark).to_stats(spark)
    assert kept.columns["price"].ndv == whole.to_stats(spark).columns["price"].ndv


def test_a_sampled_sketch_keeps_counts_exact_and_estimates_within_their_error(spark: Any, tmp_path: Path) -> None:
    """Observed on a write of 200,000 rows with a sample of about 65,536 of them: the counts and
    ranges are exact, a column of few values (as the statistics so far say) has all its values,
    a key column sketched over every row keeps its distinct count, and the median is close."""
    from tempura.stats.model import ColumnStats
    from tempura.stats.sketch import SAMPLE_ROWS, Sample

    so_far = TableStats(rows=100_000.0, bytes=1.0, columns={"cat": ColumnStats(kind="string", ndv=37.0),
                                                           "id": ColumnStats(kind="number", ndv=100_000.0)})
    sample = Sample.for_rows(200_000, so_far)
    assert sample is not None and sample.few == frozenset({"cat"})
    assert sample.fraction == pytest.approx(SAMPLE_ROWS / 200_000)
    assert Sample.for_rows(50_000, so_far) is None and Sample.for_rows(200_000, None) is None
    data = frame(spark, 0, 200_000)
    observed = ObservedSketch(COLUMNS, ["f"], sample=sample)
    observed.attach(data).write.parquet(str(tmp_path / "sampled"))
    stats = observed.result().to_stats(spark)
    truth = exact(spark, data)
    assert stats.rows == 200_000 and stats.columns["cat"].nulls == truth["z_cat"]
    assert stats.columns["price"].min == truth["lo_price"] and stats.columns["price"].max == truth["hi_price"]
    assert stats.columns["cat"].ndv == pytest.approx(truth["d_cat"], rel=0.05)
    assert stats.columns["id"].ndv == pytest.approx(200_000, rel=0.05)
    histogram = stats.columns["price"].histogram
    assert histogram is not None and histogram.rows == pytest.approx(200_000)
    assert histogram.bins[len(histogram.bins) // 2].lo == pytest.approx(truth["median_price"], rel=0.05)
