"""What a linked landing tells from a parquet file without Spark: its rows and the range of its
arrival column, read on the driver with pyarrow (:func:`tempura.runtime.ingest.local_arrivals`),
and a time point's value as the instant Spark reads it in the session's time zone
(:func:`tempura.runtime.ingest.instant`). Where either cannot be told as Spark would read it, the
answer is ``None`` (and Spark's own pass lands the interval)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.types import DateType, StringType, TimestampType

from tempura.runtime.ingest import Feed, instant, local_arrivals

UTC = dt.timezone.utc


def micros(value: dt.datetime) -> int:
    return int((value - dt.datetime(1970, 1, 1, tzinfo=UTC)) / dt.timedelta(microseconds=1))


def test_a_wall_time_is_the_instant_of_the_session_zone() -> None:
    noon = dt.datetime(2026, 7, 1, 12)
    assert instant(noon, "UTC") == micros(noon.replace(tzinfo=UTC))
    assert instant(noon, "America/New_York") == micros(dt.datetime(2026, 7, 1, 16, tzinfo=UTC))  # EDT, -4h
    assert instant(dt.date(2026, 1, 2), "Asia/Tokyo") == micros(dt.datetime(2026, 1, 1, 15, tzinfo=UTC))
    assert instant(dt.datetime(2026, 7, 1, 12, tzinfo=UTC), "Asia/Tokyo") == micros(noon.replace(tzinfo=UTC))


def test_a_wall_time_the_zone_skips_or_repeats_or_a_number_is_not_told() -> None:
    assert instant(dt.datetime(2026, 3, 8, 2, 30), "America/New_York") is None  # skipped
    assert instant(dt.datetime(2026, 11, 1, 1, 30), "America/New_York") is None  # repeated
    assert instant(17, "UTC") is None
    assert instant(dt.datetime(2026, 7, 1), "+02:00") is None


def write(path: Path, arrivals: pa.Array, **options: object) -> str:
    pq.write_table(pa.table({"id": pa.array(range(len(arrivals))), "Arrived": arrivals}), path, **options)
    return path.as_uri()


def test_instants_in_the_footer_and_column(tmp_path: Path) -> None:
    feed = Feed("s", str(tmp_path))
    first, last = dt.datetime(2026, 1, 1, 1, tzinfo=UTC), dt.datetime(2026, 1, 1, 5, tzinfo=UTC)
    values = pa.array([last, None, first, None], pa.timestamp("us", tz="UTC"))
    found = local_arrivals(feed, write(tmp_path / "a.parquet", values), "arrived", TimestampType(), "UTC")
    assert found is not None
    assert (found.rows, found.nulls, found.earliest, found.latest) == (4, 2, micros(first), micros(last))
    # Spark's own timestamps (INT96) are instants too
    int96 = write(tmp_path / "b.parquet", values, use_deprecated_int96_timestamps=True)
    assert local_arrivals(feed, int96, "ARRIVED", TimestampType(), "UTC") == found
    # by file: the footer's row count alone
    by_file = local_arrivals(feed, int96, None, None, "UTC")
    assert by_file is not None and by_file.rows == 4


def test_dates_begin_at_midnight_in_the_session_zone(tmp_path: Path) -> None:
    feed = Feed("s", str(tmp_path))
    days = pa.array([dt.date(2026, 1, 3), dt.date(2026, 1, 1)], pa.date32())
    found = local_arrivals(feed, write(tmp_path / "d.parquet", days), "arrived", DateType(), "Asia/Tokyo")
    assert found is not None
    assert found.earliest == micros(dt.datetime(2025, 12, 31, 15, tzinfo=UTC))
    assert found.latest == micros(dt.datetime(2026, 1, 2, 15, tzinfo=UTC))


def test_what_cannot_be_told_as_spark_reads_it(tmp_path: Path) -> None:
    feed = Feed("s", str(tmp_path))
    local = write(tmp_path / "l.parquet", pa.array([dt.datetime(2026, 1, 1)], pa.timestamp("us")))
    assert local_arrivals(feed, local, "arrived", TimestampType(), "UTC") is None  # no zone: Spark's NTZ
    nanos = write(tmp_path / "n.parquet", pa.array([dt.datetime(2026, 1, 1)], pa.timestamp("ns", tz="UTC")))
    assert local_arrivals(feed, nanos, "arrived", TimestampType(), "UTC") is None
    text = write(tmp_path / "s.parquet", pa.array(["2026-01-01"]))
    assert local_arrivals(feed, text, "arrived", StringType(), "UTC") is None
    good = write(tmp_path / "g.parquet", pa.array([dt.datetime(2026, 1, 1, tzinfo=UTC)], pa.timestamp("us", tz="UTC")))
    assert local_arrivals(feed, good, "missing", TimestampType(), "UTC") is None
    assert local_arrivals(Feed("s", str(tmp_path), options={"mergeSchema": "true"}), good, "arrived", TimestampType(),
                          "UTC") is None
    assert local_arrivals(feed, "hdfs://nn/x.parquet", "arrived", TimestampType(), "UTC") is None
    damaged = tmp_path / "x.parquet"
    damaged.write_bytes((tmp_path / "g.parquet").read_bytes()[:-20])
    assert local_arrivals(feed, damaged.as_uri(), "arrived", TimestampType(), "UTC") is None
