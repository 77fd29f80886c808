"""A declared source the query reads no row of is neither landed nor analysed, and ``validate``
says so; a source a read one lands with (``arrival.with``) still counts as read."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from tempura.scheduler import load_spec
from tempura.scheduler.runner import Runner
from tempura.standing import StandingQuery

START = dt.datetime(2026, 11, 20)
SPEC = ("name: sales\nquery: SELECT category, SUM(price) AS revenue FROM sales GROUP BY category\nsources:\n"
        "  sales:\n    path: data/sales\n    arrival: {column: sold_at}\n"
        "  refunds:\n    path: data/refunds\n    arrival: {column: refunded_at}\n"
        f"schedule:\n  start: '{START.isoformat()}'\n  every: 12h\n  points: 2\n")


def test_validate_names_a_source_the_query_does_not_read(tmp_path: Path) -> None:
    for name in ("sales", "refunds"):
        (tmp_path / "data" / name).mkdir(parents=True)
    (tmp_path / "spec.yaml").write_text(SPEC.replace("    path: data/sales\n", "    path: data/sales\n"
                                                     "    schema: {category: string, price: int, sold_at: timestamp}\n"))
    spec = load_spec(tmp_path / "spec.yaml")
    assert spec.unread_sources == ("refunds",) and set(spec.read_sources) == {"sales"}
    found = StandingQuery(tmp_path / "spec.yaml").validate()
    assert "sources.refunds: the query reads no row of it, so it is neither landed nor analysed" in found.notes


def test_a_source_a_read_one_lands_with_counts_as_read(tmp_path: Path) -> None:
    (tmp_path / "spec.yaml").write_text(
        "name: lines\nquery: SELECT SUM(qty) AS qty FROM lines\nsources:\n"
        "  orders:\n    path: data/orders\n    arrival: {column: at}\n    key: o_id\n"
        "  lines:\n    path: data/lines\n    arrival: {column: at, with: {orders: o_id}}\n"
        f"schedule:\n  start: '{START.isoformat()}'\n  every: 12h\n  points: 2\n")
    for name in ("orders", "lines"):
        (tmp_path / "data" / name).mkdir(parents=True)
    assert load_spec(tmp_path / "spec.yaml").unread_sources == ()


@pytest.mark.spark
def test_an_unread_source_is_not_landed(spark: Any, tmp_path: Path) -> None:
    spark.createDataFrame([("a", 3, START + dt.timedelta(hours=1))], "category STRING, price INT, sold_at TIMESTAMP") \
        .write.parquet(str(tmp_path / "data" / "sales"))
    spark.createDataFrame([(1, START + dt.timedelta(hours=2))], "amount INT, refunded_at TIMESTAMP") \
        .write.parquet(str(tmp_path / "data" / "refunds"))
    (tmp_path / "spec.yaml").write_text(SPEC)
    done = Runner(load_spec(tmp_path / "spec.yaml"), spark, tmp_path / "work").run_due(now=START + dt.timedelta(hours=12))
    assert [r.index for r in done] == [1]
    assert set(done[0].manifest["landed"]) == {"sales"}
    assert not list((tmp_path / "work").rglob("*refunds*"))
