"""``tempura bench sdp``'s contender: a standing query as a Spark Declarative Pipelines project,
refreshed by ``spark-pipelines run`` in processes of its own, as the clock runs it; its results
equal ``spark.sql`` over the same snapshot, and each refresh is measured whole."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from benchmarks.clock import ClockJob, split_by_interval
from benchmarks.sdp import DESIGNS, SdpProject, flows_source
from scenarios import copy_scenario
from tempura.runtime import compare_results
from tempura.scheduler import load_spec
from tempura.scheduler.reference import reference

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("fast_spark")]


@pytest.fixture(scope="module")
def staged(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("sdp")
    spec_path = copy_scenario("daily_revenue", root / "data")
    importlib.import_module("scenarios.daily_revenue.generate").generate(spark, spec_path.parent, 0.001)
    split_by_interval(spark, load_spec(spec_path), root / "staged")
    return spec_path, root


def expected(spark: Any, spec_path: Path, index: int) -> list[tuple[Any, ...]]:
    spec = load_spec(spec_path)
    cycle = spec.cycle(0)
    assert cycle is not None
    return [tuple(r) for r in reference(spark, spec, cycle, index).collect()]


def test_the_designs_read_the_sources_as_a_competent_sdp_user_writes_them(spark: Any, staged: tuple[Path, Path],
                                                                         tmp_path: Path) -> None:
    spec_path, root = staged
    job = ClockJob.create(spec_path, root / "staged", tmp_path / "job")
    schemas = {"orders": "order_id BIGINT"}
    streaming = flows_source(job, "sdp-streaming", schemas)
    assert "@dp.table(name='orders'" in streaming and "spark.readStream" in streaming
    files = flows_source(job, "sdp-mv", schemas)
    assert "@dp.temporary_view(name='orders')" in files and "spark.read." in files
    project = SdpProject.create(spark, job, "sdp-mv", tmp_path / "mv")
    assert [i for i in range(1, 5) if project.runs_at(i)] == [4]  # nothing to do until the result is due
    assert "CREATE MATERIALIZED VIEW" in (tmp_path / "mv" / "transformations" / "result.sql").read_text()
    with pytest.raises(ValueError, match="unknown SDP design"):
        SdpProject.create(spark, job, "sdp-other", tmp_path / "other")
    assert set(DESIGNS) == {"sdp-streaming", "sdp-mv"}


def test_streaming_tables_then_the_view_deliver_spark_sql_over_the_snapshot(spark: Any, staged: tuple[Path, Path],
                                                                           tmp_path: Path) -> None:
    spec_path, root = staged
    job = ClockJob.create(spec_path, root / "staged", tmp_path / "job")
    project = SdpProject.create(spark, job, "sdp-streaming", tmp_path / "sdp")
    job.arrive(1)
    first = project.refresh(1, tmp_path / "events" / "t001")  # the streaming tables alone: t1 delivers nothing
    assert first.returncode == 0, first.output
    assert first.records_read == spark.read.parquet(job.spec.location("orders")).count()
    for index in (2, 3, 4):
        job.arrive(index)
    last = project.refresh(4, tmp_path / "events" / "t004")
    assert last.returncode == 0, last.output
    got = [tuple(r) for r in spark.read.parquet(str(project.result_path())).collect()]
    outcome = compare_results(expected(spark, spec_path, 4), got)
    assert outcome.equal, outcome.reason
    for figures in (first, last):  # measured whole: the server's jobs and every process it started
        assert figures.cpu_seconds > 0 and figures.jobs >= 1
        assert figures.process_cpu_seconds > figures.cpu_seconds
        assert figures.wall_seconds >= figures.app_wall_seconds > 0
