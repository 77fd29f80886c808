"""The ``sales_returns_seed`` scenario on Spark: its data has the golden example's proportions
(4/7 of the sales and 1/3 of the returns by t1, every return after its sale and at most 12 hours
later), and every method delivers what ``spark.sql`` gives at each of its two time points."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scenarios import prepared_scenario
from tempura.scheduler import load_spec
from tempura.scheduler.reference import References
from tempura.scheduler.simulation import simulate
from tempura.standing import METHODS

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("fast_spark")]

SCALE = 0.005  # 5,000 sales


@pytest.fixture(scope="module")
def spec_path(fast_spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = prepared_scenario(fast_spark, "sales_returns_seed", tmp_path_factory.mktemp("seed"), SCALE)
    path.write_text(path.read_text().replace("deliver: last", "deliver: every"))
    return path


@pytest.fixture(scope="module")
def references(fast_spark: Any, spec_path: Path) -> References:
    """The reference results, computed once for every method's run."""
    return References(fast_spark, load_spec(spec_path))


def test_the_data_has_the_seeds_proportions(fast_spark: Any, spec_path: Path) -> None:
    sales = fast_spark.read.parquet(str(spec_path.parent / "data" / "sales"))
    returns = fast_spark.read.parquet(str(spec_path.parent / "data" / "returns"))
    sales.createOrReplaceTempView("seed_sales")
    returns.createOrReplaceTempView("seed_returns")
    noon = "TIMESTAMP '2026-11-22 12:00:00'"
    (by_noon, total), = fast_spark.sql(f"SELECT SUM(CAST(arrived_at <= {noon} AS INT)), COUNT(*) FROM seed_sales").collect()
    assert abs(by_noon / total - 4 / 7) < 0.03, by_noon / total
    (by_noon, total), = fast_spark.sql(f"SELECT SUM(CAST(arrived_at <= {noon} AS INT)), COUNT(*) FROM seed_returns").collect()
    assert abs(by_noon / total - 1 / 3) < 0.05, by_noon / total
    (matched, before, after, reach_back), = fast_spark.sql(
        "SELECT COUNT(*), SUM(CAST(r.arrived_at < s.arrived_at AS INT)), "
        "SUM(CAST(r.arrived_at > s.arrived_at + INTERVAL 12 HOURS AS INT)), "
        f"SUM(CAST(r.arrived_at > {noon} AND s.arrived_at <= {noon} AS INT)) "
        "FROM seed_returns r JOIN seed_sales s ON r.o_id = s.o_id").collect()
    assert matched == returns.count() and before == 0 and after == 0
    assert reach_back > 0  # t2's returns of t1's sales: the probe of the old sales


@pytest.mark.parametrize("method", METHODS)
def test_every_method_delivers_the_reference_at_both_time_points(method: str, fast_spark: Any, spec_path: Path,
                                                                 references: References, tmp_path: Path) -> None:
    run = simulate(fast_spark, load_spec(spec_path), method, tmp_path, references=references)
    assert [p.index for p in run.points] == [1, 2] and all(p.delivered for p in run.points)
    assert run.correct, [(p.index, p.detail) for p in run.points if not p.correct]


def test_the_floor_benchmark_runs_the_query_over_the_last_interval_alone(fast_spark: Any, tmp_path: Path) -> None:
    """``tempura bench floor``: the query over the rows landed at the last time point alone reads
    those rows only — the afternoon's sales and returns, 3/7 and 2/3 of them — and the query over
    the snapshot every row; each is measured. tempura's batch plan over those rows gives what
    ``spark.sql`` gives over them, and reads as many. Both floors list the last interval's files
    alone, as the runtime's reads of an interval do; the snapshot lists every interval's."""
    from benchmarks import floor

    logged: list[str] = []
    report = floor.run(fast_spark, tmp_path / "out", tmp_path / "work", "sales_returns_seed", SCALE, 1, logged.append)
    medians = report["medians"]
    assert len(logged) == 3 and (tmp_path / "out" / "floor-sales_returns_seed.json").exists()
    snapshot, last = medians["snapshot"]["rows"], medians["floor"]["rows"]
    sales, returns = 5000, fast_spark.read.parquet(str(tmp_path / "work" / "scenarios" / "sales_returns_seed" / "data"
                                                        / "returns")).count()
    assert snapshot == sales + returns
    assert report["read_whole"] == []  # both sources land rows in the last interval
    assert 0.35 < last / snapshot < 0.55  # 3/7 of the sales, 2/3 of a tenth as many returns
    assert medians["snapshot"]["cpu"] > 0 and medians["floor"]["cpu"] > 0
    assert medians["floor-spark"]["rows"] == last
    assert report["spark_floor_over_snapshot_cpu"] > 0
    assert len(report["fragments"]) == 1 and " [batch] " in report["fragments"][0]
    assert report["floor_rows_as_spark"] is True
    assert report["intervals_read"] == {"snapshot": [1, 2], "floor": [2], "floor-spark": [2]}


def test_the_incremental_benchmark_measures_the_floor_in_the_same_rounds(fast_spark: Any, spec_path: Path,
                                                                        tmp_path: Path) -> None:
    """``tempura bench incremental --contender floor``: beside batch, the floor's query over the
    afternoon's rows alone at the last time point (nothing at noon), in the same round, from a
    landing of its own that the batch contender's cycle leaves alone; the batch cycle is still
    right."""
    from benchmarks.incremental import run_scenario

    spec = load_spec(spec_path)
    logged: list[str] = []
    found = run_scenario(fast_spark, spec, tmp_path, 1, ("batch", "floor"), logged.append, warmup=False)
    floor, batch = found["floor"], found["batch"]
    assert floor.bound and floor.unsupported is None and len(floor.attempts) == len(batch.attempts) == 1
    assert floor.attempts[0].cpu[0] == 0.0 and floor.attempts[0].cpu[1] > 0
    assert batch.correct, [a.detail for a in batch.attempts]
    assert [line.split(": ")[0] for line in logged] == ["sales_returns_seed run 1/1 batch", "sales_returns_seed run 1/1 floor"]
    assert "bound" in floor.summary(spec.weights()) and "bound" not in batch.summary(spec.weights())
