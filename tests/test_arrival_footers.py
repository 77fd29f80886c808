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


def test_footer_counts_sum_the_row_groups_and_leave_out_what_a_footer_cannot_say(tmp_path: Path) -> None:
    from decimal import Decimal

    from tempura.stats.footers import footer_counts

    first = pa.table({"Id": pa.array([3, None, 7, 1], pa.int64()),
                      "amount": pa.array([Decimal("1.50"), Decimal("-2.25"), None, None], pa.decimal128(9, 2)),
                      "day": pa.array([dt.date(2026, 1, 2), None, dt.date(2025, 12, 30), dt.date(2026, 1, 1)]),
                      "ratio": pa.array([0.5, 1.5, None, 2.0]),
                      "name": pa.array(["a", None, "bb", None])})
    pq.write_table(first, tmp_path / "a.parquet", row_group_size=2)  # two row groups
    second = pa.table({"id": pa.array([None, None], pa.int64()), "day": pa.array([None, None], pa.date32()),
                       "amount": pa.array([Decimal("9.00"), None], pa.decimal128(9, 2)),
                       "ratio": pa.array([3.0, None]), "name": pa.array(["c", "d"])})
    pq.write_table(second, tmp_path / "b.parquet")
    third = pa.table({"id": pa.array([10], pa.int64())})  # no column `name`, `amount`, ...
    pq.write_table(third, tmp_path / "c.parquet")
    columns = {"id": "bigint", "amount": "decimal(9,2)", "day": "date", "ratio": "double", "name": "string"}
    two = footer_counts([str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")], columns)
    assert two["id"].count == 3 and two["id"].nulls == 3 and (two["id"].min, two["id"].max) == (1.0, 7.0)
    assert (two["amount"].count, two["amount"].nulls, two["amount"].min, two["amount"].max) == (3, 3, -2.25, 9.0)
    epoch = dt.date(1970, 1, 1)
    assert two["day"].count == 3 and two["day"].nulls == 3
    assert (two["day"].min, two["day"].max) == ((dt.date(2025, 12, 30) - epoch).days, (dt.date(2026, 1, 2) - epoch).days)
    assert (two["name"].count, two["name"].nulls, two["name"].min) == (4, 2, None)
    assert "ratio" not in two  # floating point: Spark orders NaN last, a footer leaves it out
    three = footer_counts([str(tmp_path / p) for p in ("a.parquet", "b.parquet", "c.parquet")], columns)
    assert set(three) == {"id"} and three["id"].count == 4 and three["id"].max == 10.0  # the others: a file lacks them
    (tmp_path / "d.parquet").write_bytes(b"not parquet")
    assert footer_counts([str(tmp_path / "a.parquet"), str(tmp_path / "d.parquet")], columns) == {}
