"""Statistics collected through Spark (TPC-H scale 0.01): what ANALYZE gives, persistence and
staleness, the aggregate-query fallback, and the per-node SQL of EXPLAIN STATS running on Spark."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from tempura import tpch
from tempura.api import Session
from tempura.stats.collect import aggregate_stats, qualified
from tempura.stats.model import TableStats
from tempura.stats.values import encode_date

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def session(spark: object, tpch_catalog: Path, tmp_path_factory: pytest.TempPathFactory) -> Session:
    workdir = tmp_path_factory.mktemp("stats-work")
    return Session(tpch_catalog, spark=spark, workdir=workdir)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def analyzed(session: Session) -> dict[str, TableStats]:
    seen: list[tuple[str, int, int]] = []
    result = session.analyze(progress=lambda table, done, total: seen.append((table, done, total)))
    assert seen[-1] == ("", len(tpch.TABLES), len(tpch.TABLES))
    return result


def test_row_counts_are_exact(session: Session, analyzed: dict[str, TableStats]) -> None:
    for name in tpch.TABLES:
        expected = session.spark.sql(f"SELECT COUNT(*) FROM {name}").collect()[0][0]
        assert analyzed[name].rows == expected, name
        assert analyzed[name].bytes > 0
        assert analyzed[name].source == "analyze"
        assert set(analyzed[name].columns) == set(tpch.SCHEMA[name])


def test_keys_are_found_unique_and_foreign_keys_are_not(analyzed: dict[str, TableStats]) -> None:
    unique = {(t, c) for t, s in analyzed.items() for c, cs in s.columns.items() if cs.unique}
    for key in [("customer", "c_custkey"), ("orders", "o_orderkey"), ("part", "p_partkey"), ("supplier", "s_suppkey")]:
        assert key in unique
    for not_key in [("orders", "o_custkey"), ("lineitem", "l_orderkey"), ("partsupp", "ps_partkey")]:
        assert not_key not in unique
    # Unique columns carry their exact distinct count.
    assert analyzed["orders"].columns["o_orderkey"].ndv == analyzed["orders"].rows


def test_column_statistics_match_spark(session: Session, analyzed: dict[str, TableStats]) -> None:
    row = session.spark.sql(
        "SELECT MIN(l_shipdate), MAX(l_shipdate), COUNT(DISTINCT l_returnflag), MAX(LENGTH(l_comment)) FROM lineitem"
    ).collect()[0]
    shipdate = analyzed["lineitem"].columns["l_shipdate"]
    assert shipdate.min == encode_date(row[0]) and shipdate.max == encode_date(row[1])
    assert shipdate.histogram is not None and len(shipdate.histogram.bins) > 1
    assert shipdate.histogram.rows == pytest.approx(analyzed["lineitem"].rows, rel=0.01)
    assert analyzed["lineitem"].columns["l_returnflag"].ndv == row[2]
    assert analyzed["lineitem"].columns["l_comment"].max_len == row[3]


def test_aggregate_fallback_agrees_with_analyze(session: Session, analyzed: dict[str, TableStats]) -> None:
    rows, columns = aggregate_stats(session.spark, qualified("nation"), tpch.SCHEMA["nation"])
    assert rows == analyzed["nation"].rows
    for name, stats in columns.items():
        # Both count distinct values with HyperLogLog++ (2% relative error).
        assert stats.ndv == pytest.approx(analyzed["nation"].columns[name].ndv, rel=0.05), name
        assert stats.nulls == analyzed["nation"].columns[name].nulls


def test_spark_cbo_estimates_are_read_from_the_optimized_plan(session: Session, analyzed: dict[str, TableStats]) -> None:
    from benchmarks.cardinality import spark_estimate

    spark = session.spark
    spark.conf.set("spark.sql.cbo.enabled", "true")
    try:
        assert spark_estimate(spark, f"SELECT * FROM {qualified('nation')}") == 25
        # Spark estimates an equality from its histogram: near the true 5.
        assert spark_estimate(spark, f"SELECT * FROM {qualified('nation')} WHERE n_regionkey = 1") == pytest.approx(5, abs=2)
    finally:
        spark.conf.set("spark.sql.cbo.enabled", "false")


def test_stored_statistics_serve_a_later_session(session: Session, analyzed: dict[str, TableStats]) -> None:
    later = Session(session.catalog, spark=session.spark, workdir=session.workdir)
    stats = later.stats.lookup("orders")
    assert stats.source == "analyze" and not stats.stale
    assert stats.rows == analyzed["orders"].rows
    text = later.explain_stats("SELECT COUNT(*) FROM orders WHERE o_orderdate < DATE '1995-01-01'")
    assert "no statistics" not in text


def test_changed_files_make_statistics_stale(session: Session, tmp_path: Path) -> None:
    source = Path(session.catalog.table("nation").path)
    folder = tmp_path / "nation"
    folder.mkdir()
    shutil.copy(source, folder / "part-0.parquet")
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(yaml.safe_dump({"tables": {"nation": {"path": "nation", "format": "parquet"}}}))
    own = Session(catalog, spark=session.spark, workdir=tmp_path / "work")
    assert own.stats.lookup("nation").is_default
    own.analyze(["nation"])
    assert own.stats.lookup("nation").rows == 25
    shutil.copy(source, folder / "part-1.parquet")  # the data doubles
    again = Session(catalog, spark=session.spark, workdir=tmp_path / "work")
    stats = again.stats.lookup("nation")
    assert stats.stale and stats.rows == pytest.approx(50)
    assert "stale" in again.explain_stats("SELECT n_name FROM nation")


def test_missing_statistics_fall_back_to_file_sizes(session: Session, tmp_path: Path) -> None:
    fresh = Session(session.catalog, spark=session.spark, workdir=tmp_path / "empty")
    stats = fresh.stats.lookup("lineitem")
    assert stats.is_default and stats.rows > 0
    text = fresh.explain_stats("SELECT l_orderkey FROM lineitem WHERE l_quantity < 10")
    assert "no statistics for table lineitem" in text and "guessed from file size" in text


@pytest.mark.parametrize("name", tpch.query_names())
def test_every_node_sql_runs_on_spark(session: Session, analyzed: dict[str, TableStats], name: str) -> None:
    query = session.plan(tpch.query_text(name))
    report = session.explainer().json(query)
    ids = [node["id"] for node in report["nodes"]]
    assert ids == list(range(len(ids)))
    for node in report["nodes"]:
        frame = session.spark.sql(node["sql"])
        assert len(frame.columns) == len(query.plan.schema) or node["id"] != 0
        frame.limit(1).collect()
        assert node["rows"] >= 0 and node["bytes"] >= 0 and node["cost_ns"] >= node["own_cost_ns"] - 1e-6
