"""The durable runtime on Spark: a standing query run on its schedule delivers, at every time
point and under every method, what ``spark.sql`` returns over that time point's snapshot; a
committed time point is not run again; an attempt that dies leaves nothing visible and is redone;
states are deleted after their last read."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest

from historyfile import SHAPES, write_history
from scenarios import copy_scenario
from scenarios.sales_returns.generate import generate
from tempura.runtime import compare_results
from tempura.scheduler import load_spec
from tempura.scheduler.history import ADDED_COLUMNS, FRAGMENT_COLUMNS, RUN_COLUMNS, History
from tempura.scheduler.runner import Runner

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("fast_spark")]

START = dt.datetime(2026, 11, 22)


@pytest.fixture(scope="module")
def scenario(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sales_returns scenario at a small scale, delivering at every time point."""
    folder = tmp_path_factory.mktemp("scenario")
    spec = copy_scenario("sales_returns", folder)
    spec.write_text(spec.read_text().replace("deliver: last", "deliver: every"))
    generate(spark, spec.parent, 0.002)
    return spec


def reference(spark: Any, spec: Any, index: int) -> list[tuple[Any, ...]]:
    """``spark.sql(query)`` over the raw sources as of ``t_index`` (independent of the runtime)."""
    cycle = spec.cycle(0)
    end = cycle.time_points.value(index)
    for name in spec.sources:
        frame = spark.read.parquet(spec.location(name))
        frame.where(f"arrived_at > TIMESTAMP '{cycle.origin}' AND arrived_at <= TIMESTAMP '{end}'").createOrReplaceTempView(name)
    return [tuple(r) for r in spark.sql(spec.sql).collect()]


def delivered(spark: Any, path: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in spark.read.parquet(path).collect()]


@pytest.fixture(scope="module")
def cycles(fast_spark: Any, scenario: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Runner, list[Any]]]:
    """One simulated cycle per method (each in its own job folder), shared by the tests below."""
    spec = load_spec(scenario)
    workdir = tmp_path_factory.mktemp("cycles")
    out = {}
    for method in ("auto", "batch", "ivm", "ojv", "streaming"):
        runner = Runner(spec, fast_spark, workdir, method, simulate=True)
        out[method] = (runner, runner.run_cycle())
    return out


@pytest.mark.parametrize("method", ["auto", "batch", "ivm", "ojv", "streaming"])
def test_every_method_delivers_the_reference_at_every_time_point(method: str, spark: Any, scenario: Path,
                                                                 cycles: dict[str, tuple[Runner, list[Any]]]) -> None:
    spec = load_spec(scenario)
    runner, results = cycles[method]
    assert [r.index for r in results] == [1, 2, 3, 4]
    for r in results:
        expected = reference(spark, spec, r.index)
        assert r.delivered is not None
        outcome = compare_results(expected, delivered(spark, r.delivered))
        assert outcome.equal, f"{method} t{r.index}: {outcome.reason}"
    assert sum(r.manifest["run"]["cpu_seconds"] for r in results) > 0
    for r in results:  # each fragment's work is measured, a state's save included
        assert all(f["cpu_seconds"] > 0 for f in r.manifest["fragments"]), r.manifest["fragments"]
    if method == "streaming":
        assert any(f["streaming"] for r in results for f in r.manifest["fragments"])
        assert any(r.manifest["streams"] for r in results)
    history = History(runner.store.history_path)
    assert [row["time_index"] for row in history.runs()] == [1, 2, 3, 4]
    assert all(row["replanned"] for row in history.runs()[:3])
    recorded = history.fragments()
    assert len(recorded) == sum(len(r.manifest["fragments"]) for r in results)
    assert all(f["jobs"] >= 1 and f["stages"] >= 1 for f in recorded), recorded  # every fragment runs Spark work
    # landing each interval is measured apart from the fragments: it read the sources' files
    for row, r in zip(history.runs(), results):
        landed = r.manifest["landed"]
        cpu = sum(e["cpu_seconds"] for e in landed.values())
        assert row["landing_cpu_seconds"] == pytest.approx(cpu) and cpu > 0
        assert row["landing_bytes_read"] == sum(e["bytes_read"] for e in landed.values()) > 0


def test_a_history_from_before_the_stage_columns_gains_them(tmp_path: Path) -> None:
    """A history whose tables have none of the columns added since (jobs and stages run, stages
    estimated, what landing cost: as written before they existed) keeps its rows and records new
    ones with them."""
    import sqlite3

    path = tmp_path / "history.sqlite"
    added = {name for name, _ in ADDED_COLUMNS["fragments"]}
    columns = ", ".join(c for c in FRAGMENT_COLUMNS if c not in added)
    with sqlite3.connect(path) as db:
        db.execute(f"CREATE TABLE fragments ({columns}, PRIMARY KEY (cycle, time_index, fragment))")
        db.execute(f"INSERT INTO fragments ({columns}) VALUES ({', '.join('?' * 16)})",
                   ("c0", 1, "f1", "batch", "SS[1]", "result", 0, 10.0, 0.5, 10, 10, 1.0, 0.2, 100, 100, 0))
        run_columns = ", ".join(c for c in RUN_COLUMNS if c not in {name for name, _ in ADDED_COLUMNS["runs"]})
        db.execute(f"CREATE TABLE runs ({run_columns}, PRIMARY KEY (cycle, time_index))")
    db.close()
    history = History(path)
    fragment = {"id": "f1", "method": "ivm", "form": "SD[1,2]", "output": "result", "streaming": False,
                "estimated_rows": 5.0, "estimated_seconds": 0.1, "rows_in": 5, "rows_out": 5, "wall_seconds": 0.5,
                "cpu_seconds": 0.1, "bytes_in": 50, "bytes_out": 50, "shuffle_bytes": 0, "jobs": 2, "stages": 3,
                "estimated_stages": 4, "estimated_fixed_seconds": 0.04}
    run = {"mode": "simulate", "method": "ivm", "plan_id": "p", "estimated_seconds": 0.1, "wall_seconds": 0.5,
           "cpu_seconds": 0.1, "rows_landed": 5, "late_rows": 0, "rejected_rows": 0}
    history.record_run({"cycle": "c0", "index": 2, "time": 2, "committed_at": "now", "run": run, "fragments": [fragment]})
    old, new = history.fragments("c0")
    assert (old["fragment"], old["method"], old["jobs"], old["stages"], old["estimated_stages"]) == ("f1", "batch", None, None, None)
    assert (new["time_index"], new["method"], new["jobs"], new["stages"]) == (2, "ivm", 2, 3)
    assert (new["estimated_stages"], new["estimated_fixed_seconds"]) == (4, 0.04)
    assert (old["estimated_row_seconds"], old["row_constant"]) == (None, None)
    (run_row,) = history.runs()
    assert run_row["rows_landed"] == 5 and run_row["landing_cpu_seconds"] is None  # a run recorded without it


STAGE_STARTS = re.compile(r"^\s*(SourceRead|LoadState|Exchange) ", re.MULTILINE)


@pytest.mark.parametrize("method", ["ivm", "ojv"])
def test_each_fragment_records_the_stages_its_estimate_charged(method: str, cycles: dict[str, tuple[Runner, list[Any]]]) -> None:
    """The history splits each fragment's estimate into the stages it charged (its reads,
    exchanges and state write: counted here from the printed plan) and their share, at the
    stage cost of the plan that ran it."""
    runner, results = cycles[method]
    recorded = {(row["time_index"], row["fragment"]): row for row in History(runner.store.history_path).fragments()}
    assert recorded
    for result in results:
        plan = runner._plans[(result.manifest["cycle"], result.index)]
        for fragment in plan.at(result.index):
            row = recorded[(result.index, fragment.id)]
            counted = len(STAGE_STARTS.findall(fragment.physical)) + (1 if fragment.keeps else 0)
            assert row["estimated_stages"] == counted, fragment.physical
            assert row["estimated_fixed_seconds"] == pytest.approx(counted * plan.constants.stage / 1e9)
            assert 0 < row["estimated_fixed_seconds"] <= row["estimated_seconds"]
            # and its per-row CPU work: the CPU part of the estimate without the stages, priced at the plan's constant
            assert row["row_constant"] == plan.constants.cpu
            assert row["estimated_row_seconds"] == pytest.approx((fragment.cost.cpu - fragment.cost.stages * plan.constants.stage) / 1e9)
            assert 0 <= row["estimated_row_seconds"] <= row["estimated_seconds"] - row["estimated_fixed_seconds"]
    # a fragment that joins, filters or aggregates does per-row work; a copying one may not, but
    # every cycle has one that does
    assert any(row["estimated_row_seconds"] > 0 for row in recorded.values())


def test_the_next_planning_uses_the_stage_cost_the_history_supports(fast_spark: Any, scenario: Path, tmp_path: Path) -> None:
    """A job whose history measured 1 ms of CPU per model second and 50 ms per stage plans with
    50 s per stage and gives it as a reason; a spec that sets the stage cost keeps it."""
    spec = load_spec(scenario)
    runner = Runner(spec, fast_spark, tmp_path, "auto", simulate=True)
    write_history(runner.store.history_path, alpha=1e-3, beta=0.05)
    plan, reasons = runner._planned(spec.cycle(0), 1, {}, None)
    assert plan.constants.stage == pytest.approx(50e9)
    assert [r for r in reasons if r.startswith(f"stage cost calibrated from {len(SHAPES)} fragments: 50 s per stage")]
    assert [n for n in plan.notes if n.startswith("stage cost calibrated")]
    # after a time point planned with it, it is no news
    again, reasons = runner._planned(spec.cycle(0), 2, {}, {"run": {"stage_cost": plan.constants.stage}})
    assert again.constants.stage == pytest.approx(50e9) and not [r for r in reasons if "stage cost" in r]

    pinned_spec = scenario.parent / "pinned.yaml"
    pinned_spec.write_text(scenario.read_text() + "cost: {stage: 2e9}\n")
    pinned = Runner(load_spec(pinned_spec), fast_spark, tmp_path, "auto", simulate=True)
    assert pinned.store.history_path == runner.store.history_path
    plan, reasons = pinned._planned(spec.cycle(0), 1, {}, None)
    assert plan.constants.stage == 2e9 and not [r for r in reasons if "stage cost" in r]


def test_a_committed_time_point_is_not_run_again(spark: Any, scenario: Path, tmp_path: Path) -> None:
    spec = load_spec(scenario)
    first = Runner(spec, spark, tmp_path, "ivm", simulate=True).run_cycle(until=2)
    again = Runner(spec, spark, tmp_path, "ivm", simulate=True)
    results = again.run_cycle(until=3)
    assert [r.skipped for r in results] == [True, True, False]
    assert results[0].manifest == first[0].manifest
    outcome = compare_results(reference(spark, spec, 3), delivered(spark, results[2].delivered))  # type: ignore[arg-type]
    assert outcome.equal, outcome.reason


def test_an_attempt_that_dies_is_redone_from_scratch(spark: Any, scenario: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = load_spec(scenario)
    runner = Runner(spec, spark, tmp_path, "ivm", simulate=True)
    runner.run_point(spec.cycle(0), 1)  # type: ignore[arg-type]
    label = spec.cycle(0).label  # type: ignore[union-attr]

    def die(*_args: Any, **_kwargs: Any) -> None:
        raise RuntimeError("the process died before the manifest")

    monkeypatch.setattr(runner.store, "write_manifest", die)
    with pytest.raises(RuntimeError):
        runner.run_point(spec.cycle(0), 2)  # type: ignore[arg-type]
    monkeypatch.undo()
    assert runner.store.manifest(label, 2) is None
    landed = runner.store.landing_interval(label, "sales", 2)
    assert landed.exists()  # left by the attempt, but not committed: invisible, and redone
    fresh = Runner(spec, spark, tmp_path, "ivm", simulate=True)
    redone = fresh.run_point(spec.cycle(0), 2)  # type: ignore[arg-type]
    assert not redone.skipped
    outcome = compare_results(reference(spark, spec, 2), delivered(spark, redone.delivered))  # type: ignore[arg-type]
    assert outcome.equal, outcome.reason
    t1, t2 = spec.cycle(0).time_points.values[:2]  # type: ignore[union-attr]
    arrived = spark.read.parquet(spec.location("sales")).where(
        f"arrived_at > TIMESTAMP '{t1}' AND arrived_at <= TIMESTAMP '{t2}'").count()
    assert fresh.store.manifest(label, 2)["landed"]["sales"]["rows"] == arrived  # landed once, not twice


def test_states_no_later_fragment_reads_are_deleted(cycles: dict[str, tuple[Runner, list[Any]]]) -> None:
    runner, results = cycles["ivm"]
    label = results[0].cycle
    states = runner.store.cycle_dir(label) / "states"
    alive = [{s["folder"] for s in r.manifest["states"]} for r in results]
    assert any(alive[:-1]), "the ivm plan keeps a state for a later time point"
    assert alive[-1] == set()
    assert sorted(p.name for p in states.iterdir() if not p.name.startswith(".")) == []
