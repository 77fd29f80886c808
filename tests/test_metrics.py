"""Measuring Spark work by job group: a block's jobs, executor CPU, rows written, and nesting
(an inner block's jobs count for the blocks around it; work after an inner block still counts
for the outer one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tempura.runtime.metrics import Meter

pytestmark = pytest.mark.spark


def test_a_block_counts_its_jobs_and_rows_written(spark: Any, tmp_path: Path) -> None:
    meter = Meter(spark)
    with meter.measure("write") as measured:
        spark.range(5000).selectExpr("id", "id % 7 AS k").write.parquet(str(tmp_path / "out"))
    assert measured.jobs >= 1
    assert measured.rows_written == 5000
    assert measured.cpu_seconds > 0 and measured.wall_seconds > 0
    with meter.measure("nothing") as idle:
        pass
    assert idle.jobs == 0 and idle.cpu_seconds == 0


def test_nested_blocks_count_for_the_outer_block(spark: Any, tmp_path: Path) -> None:
    meter = Meter(spark)
    with meter.measure("outer") as outer:
        spark.range(3000).write.parquet(str(tmp_path / "before"))
        with meter.measure("inner") as inner:
            spark.range(2000).write.parquet(str(tmp_path / "inner"))
        spark.range(1000).write.parquet(str(tmp_path / "after"))
    assert inner.rows_written == 2000
    assert outer.rows_written == 6000  # before, inner and after
    assert outer.jobs >= inner.jobs + 2
    with meter.measure("next") as following:
        spark.range(10).write.parquet(str(tmp_path / "next"))
    assert following.rows_written == 10  # the outer block's group did not leak into later work


def test_a_streaming_query_run_inside_a_block_counts_for_it_once_included(spark: Any, tmp_path: Path) -> None:
    """A stream's batches run on the stream's own thread, under its run id: the block counts
    them only when told that group (as a streaming fragment does), and the block around it too."""
    spark.range(4000).selectExpr("id", "id % 5 AS k").write.parquet(str(tmp_path / "source"))
    meter = Meter(spark)

    def stream(name: str) -> Any:
        query = (spark.readStream.schema("id BIGINT, k BIGINT").parquet(str(tmp_path / "source"))
                 .writeStream.trigger(availableNow=True).option("checkpointLocation", str(tmp_path / name / "checkpoint"))
                 .format("parquet").start(str(tmp_path / name / "out")))
        query.awaitTermination()
        return query

    with meter.measure("uncounted") as uncounted:
        stream("first")
    assert uncounted.rows_in == 0 and uncounted.rows_written == 0  # the stream's jobs are not the block's
    with meter.measure("outer") as outer:
        with meter.measure("fragment") as fragment:
            meter.include(str(stream("second").runId))
    assert fragment.rows_in == 4000 and fragment.rows_written == 4000
    assert fragment.jobs >= 1 and fragment.cpu_seconds > 0
    assert outer.rows_in == 4000
