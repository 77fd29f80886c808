"""tempura on a real Spark standalone cluster: a master and a worker with 2 cores, started from
pyspark's own ``bin/spark-class`` and bound to 127.0.0.1 (:mod:`benchmarks.standalone`), stopped by
their process ids when the module ends.

Marked ``cluster`` and left out of the default run: ``./bin/test -m cluster`` runs it (CI does).
Each driver is a subprocess whose SparkSession connects to the cluster through
``TEMPURA_SPARK_MASTER``; this process's own local session computes what every result must equal.

- One-off TPC-H queries, planned by tempura and computed by the cluster's executors, equal
  ``spark.sql`` run locally.
- A standing scenario run on the cluster (``tempura run``, every time point delivered) equals the
  local reference at every time point.
- A workdir the executors do not share with the driver (the worker sees an empty file system of
  its own over that folder) stops the first commit with one line saying so, committing nothing.
- ``tempura bench cluster``'s harness, one round: both contenders checked and measured.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from benchmarks import faults, standalone
from benchmarks.cluster import drive
from tempura.runtime.durable import SHARED_STORAGE

pytestmark = [pytest.mark.cluster, pytest.mark.spark]

QUERIES = ("q01", "q03", "q05", "q13", "q18")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cluster")


PRIVATE = standalone.can_mount_privately()


@pytest.fixture(scope="module")
def cluster(root: Path) -> Iterator[standalone.Standalone]:
    with standalone.start(root / "cluster", private=root / "private" if PRIVATE else None) as running:
        yield running
    assert all(not _alive(pid) for pid in running.pids), "the cluster's processes outlived their stop"


def _alive(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def applications(cluster: standalone.Standalone) -> list[str]:
    state = cluster.state()
    return [str(app.get("name")) for app in state.get("activeapps", []) + state.get("completedapps", [])]


def test_one_off_queries_on_the_cluster_equal_spark_locally(cluster: standalone.Standalone, spark: Any,
                                                            tpch_catalog: Path, root: Path) -> None:
    import tempura
    from tempura import tpch
    from tempura.runtime import compare_results, spark_rows

    out = root / "queries"
    driven = drive(["queries", str(tpch_catalog), str(out), *QUERIES], cluster.url)
    assert driven.exit.code == 0, driven.exit.last_lines(12)
    assert driven.master == cluster.url and driven.application.startswith("app-"), (driven.master, driven.application)
    local = tempura.Session(tpch_catalog, spark=spark)
    for name in QUERIES:
        text = tpch.query_text(name)
        query = local.plan(text)
        found = [tuple(r) for r in spark.read.parquet(str(out / name)).collect()]  # one file, in the result's order
        outcome = compare_results(spark_rows(local.spark.sql(text)), found, query.ordered, query.order_keys)
        assert outcome.equal, f"{name}: {outcome.reason}"


def test_a_standing_scenario_on_the_cluster_equals_the_local_reference_at_every_time_point(
        cluster: standalone.Standalone, spark: Any, root: Path) -> None:
    scenario = faults.prepare(spark, "sales_returns", root / "scenarios")
    trial = faults.new_trial(scenario, "cluster")
    driven = drive(trial.run_args("auto"), cluster.url, code=faults.ENTRY)
    assert driven.exit.code == 0, driven.exit.last_lines(12)
    assert f"tempura:{trial.spec().name}" in applications(cluster), applications(cluster)
    verdict = faults.check(spark, trial, expected={})
    assert verdict.ok and verdict.checked == list(range(1, trial.cycle().time_points.k + 1)), verdict.describe()


def test_a_workdir_the_executors_do_not_share_stops_the_first_commit_with_one_line(
        cluster: standalone.Standalone, spark: Any, root: Path) -> None:
    if not PRIVATE:
        pytest.skip("this process may not give the worker a mount namespace of its own (unshare --mount needs root)")
    scenario = faults.prepare(spark, "sales_returns", root / "scenarios")
    trial = faults.new_trial(scenario, "unshared")
    workdir = root / "private" / "work"  # the worker and its executors see an empty folder of their own here
    args = ["run", str(trial.spec_path), "--method", "ivm", "--now", trial.now(), "--workdir", str(workdir)]
    driven = drive(args, cluster.url, code=faults.ENTRY)
    assert not driven.exit.one_line_error(), driven.exit.one_line_error()
    line = driven.exit.errors[0]
    assert SHARED_STORAGE in line and str(workdir) in line, line
    assert not list(workdir.rglob("t0*.json")), "a manifest was committed"


def test_the_cluster_benchmark_runs_both_contenders_checks_and_measures_them(
        cluster: standalone.Standalone, spark: Any, root: Path) -> None:
    import json

    from benchmarks.cluster import bench

    lines: list[str] = []
    report = bench(spark, root / "bench", root / "bench-work", repeat=1, log=lines.append, running=cluster)
    assert [line.split(" round ")[0] for line in lines] == ["local", "cluster"], lines
    for name in ("local", "cluster"):
        row = report["summary"][name]
        assert row["correct"] and row["executor_cpu"] > 0 and row["seconds"] >= row["time_point_wall"] > 0, row
    assert report["cluster_over_local"]["executor_cpu"] > 0
    assert json.loads((root / "bench" / "cluster.json").read_text())["summary"] == report["summary"]
