"""Committed means verified, on Spark: a time point reads nothing a committed manifest lists
without checking it first, so a lost or damaged file stops the run with one line naming the
time point and the file; ``check`` lists the damage and ``repair`` rebuilds from the last intact
time point, after which every delivery equals ``spark.sql`` on the snapshot. A second writer
stops, an empty result does not replace a full one, and a run catches up on at most
``max_catch_up`` past cycles."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import pytest

from scenarios import copy_scenario
from scenarios.stock_cdc.generate import generate
from tempura.runtime import compare_results
from tempura.runtime.lock import JobLock, LockHeld
from tempura.runtime.store import Damage, JobStore
from tempura.scheduler import load_spec
from tempura.scheduler.check import check_job
from tempura.scheduler.reference import reference
from tempura.scheduler.runner import Runner
from tempura.scheduler.spec import StandingQuery

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("fast_spark")]

AFTER_T3 = dt.datetime(2026, 11, 22, 19)
AFTER_T4 = dt.datetime(2026, 11, 23, 1)


@pytest.fixture(scope="module")
def committed(fast_spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """stock_cdc (a change feed) at a tiny scale, delivering every time point to an output,
    run by the clock through t3 under ivm: the job folder later tests damage (each a copy)."""
    root = tmp_path_factory.mktemp("durable")
    spec_path = copy_scenario("stock_cdc", root)
    spec_path.write_text(spec_path.read_text().replace("deliver: last", "deliver: every")
                         + "output: {path: out/stock, format: parquet}\n")
    generate(fast_spark, spec_path.parent, 0.001)
    Runner(load_spec(spec_path), fast_spark, root / "work", "ivm").run_due(AFTER_T3)
    return root


def copy(committed: Path, tmp_path: Path) -> tuple[StandingQuery, Path, JobStore, str]:
    """A fresh copy of the committed job (spec, data, output and workdir)."""
    shutil.copytree(committed, tmp_path / "job")
    spec = load_spec(tmp_path / "job" / "stock_cdc" / "spec.yaml")
    cycle = spec.cycle(0)
    assert cycle is not None
    store = JobStore(tmp_path / "job" / "work" / "jobs" / "stock_cdc")
    return spec, tmp_path / "job" / "work", store, cycle.label


def assert_delivers_the_reference(spark: Any, spec: StandingQuery, index: int) -> None:
    cycle = spec.cycle(0)
    assert cycle is not None
    expected = [tuple(r) for r in reference(spark, spec, cycle, index).collect()]
    actual = [tuple(r) for r in spark.read.parquet(spec.output_location()).collect()]
    outcome = compare_results(expected, actual)
    assert outcome.equal, f"t{index}: {outcome.reason}"


def a_state_file(store: JobStore, label: str) -> Path:
    manifest = store.manifest(label, 3)
    assert manifest is not None and manifest["states"], "ivm keeps a state after t3"
    folder = store.state_path(label, manifest["states"][0]["id"], manifest["states"][0]["produced_at"])
    return sorted(folder.glob("part-*.parquet"))[0]


def repaired(spark: Any, spec: StandingQuery, workdir: Path, store: JobStore, label: str) -> None:
    """``check`` names damage; ``repair`` rebuilds; then the job is intact and right, and goes on."""
    report = check_job(store)
    assert report.damaged, "check finds the damage"
    results = Runner(spec, spark, workdir, "ivm").repair()
    assert results and [r.index for r in results][-1] == 3
    assert not check_job(store).damaged
    assert_delivers_the_reference(spark, spec, 3)
    Runner(spec, spark, workdir, "ivm").run_due(AFTER_T4)
    assert_delivers_the_reference(spark, spec, 4)


@pytest.mark.parametrize("damage", ["deleted", "truncated"])
def test_a_lost_or_truncated_state_file_stops_the_run_and_repair_rebuilds(damage: str, fast_spark: Any, committed: Path,
                                                                          tmp_path: Path) -> None:
    spec, workdir, store, label = copy(committed, tmp_path)
    part = a_state_file(store, label)
    if damage == "deleted":
        part.unlink()
    else:
        part.write_bytes(part.read_bytes()[:-100])
    with pytest.raises(Damage) as raised:
        Runner(spec, fast_spark, workdir, "ivm").run_due(AFTER_T4)
    message = str(raised.value)
    assert "\n" not in message and "t3" in message and part.name in message and "t4 cannot run" in message
    assert store.manifest(label, 4) is None
    repaired(fast_spark, spec, workdir, store, label)


def test_a_missing_manifest_is_damage_and_nothing_it_listed_is_deleted(fast_spark: Any, committed: Path,
                                                                     tmp_path: Path) -> None:
    spec, workdir, store, label = copy(committed, tmp_path)
    before = sorted(str(p.relative_to(store.root)) for p in store.cycle_dir(label).rglob("*") if p.is_file())
    store.manifest_path(label, 2).unlink()
    with pytest.raises(Damage, match=r"t002\.json is missing, but t3 is committed"):
        Runner(spec, fast_spark, workdir, "ivm").run_due(AFTER_T4)
    after = sorted(str(p.relative_to(store.root)) for p in store.cycle_dir(label).rglob("*") if p.is_file())
    assert set(before) - set(after) == {str(store.manifest_path(label, 2).relative_to(store.root))}
    repaired(fast_spark, spec, workdir, store, label)


def test_a_truncated_manifest_stops_the_run(fast_spark: Any, committed: Path, tmp_path: Path) -> None:
    spec, workdir, store, label = copy(committed, tmp_path)
    path = store.manifest_path(label, 3)
    path.write_text(path.read_text()[:200])
    with pytest.raises(Damage, match=r"t3: .*t003\.json is truncated"):
        Runner(spec, fast_spark, workdir, "ivm").run_due(AFTER_T4)
    repaired(fast_spark, spec, workdir, store, label)


def test_a_second_writer_stops_and_commits_nothing(fast_spark: Any, committed: Path, tmp_path: Path) -> None:
    spec, workdir, store, label = copy(committed, tmp_path)
    holder = JobLock(store.root)
    holder.acquire()
    try:
        with pytest.raises(LockHeld, match="is locked by another run"):
            Runner(spec, fast_spark, workdir, "ivm").run_due(AFTER_T4)
    finally:
        holder.release()
    assert store.manifest(label, 4) is None and not store.pending(label).exists()


def test_an_empty_result_does_not_replace_a_full_one_unless_allowed(fast_spark: Any, committed: Path,
                                                                   tmp_path: Path) -> None:
    spec, workdir, store, label = copy(committed, tmp_path)
    Runner(spec, fast_spark, workdir, "ivm").run_due(AFTER_T4)
    before = sorted(p.name for p in Path(spec.output_location() or "").glob("part-*"))
    next_day = dt.datetime(2026, 11, 23, 7)  # the next cycle's t1: no stock changes arrive that day
    with pytest.raises(Exception, match="delivers an empty result, which would replace the rows") as raised:
        Runner(spec, fast_spark, workdir, "ivm").run_due(next_day)
    assert "\n" not in str(raised.value)
    nxt = spec.cycle(1)
    assert nxt is not None and store.manifest(nxt.label, 1) is None
    assert sorted(p.name for p in Path(spec.output_location() or "").glob("part-*")) == before
    spec.path.write_text(spec.path.read_text() + "allow_empty: true\n")
    allowed = load_spec(spec.path)
    Runner(allowed, fast_spark, workdir, "ivm").run_due(next_day)
    assert fast_spark.read.parquet(allowed.output_location()).count() == 0
    expected = reference(fast_spark, allowed, nxt, 1).collect()
    assert expected == []


def test_a_run_catches_up_on_at_most_max_catch_up_past_cycles(fast_spark: Any, committed: Path, tmp_path: Path) -> None:
    spec, workdir, store, label = copy(committed, tmp_path)
    text = spec.path.read_text().replace('start: "2026-11-22T00:00:00"', 'start: "1991-01-01T00:00:00"')
    spec.path.write_text(text.replace("every: 6h", "every: 6h\n  deliver: last").replace("  deliver: every\n", ""))
    old = load_spec(spec.path)
    runner = Runner(old, fast_spark, workdir / "again", "batch")
    due = runner.due(AFTER_T4)
    cycles = sorted({c.label for c, _ in due})
    assert cycles == ["20261121T000000", "20261122T000000"], cycles  # today's cycle and one before it
    assert runner.skipped > 13000  # every cycle since 1991 that never ran
    since = Runner(old, fast_spark, workdir / "again", "batch").due(AFTER_T4, since=dt.datetime(2026, 11, 19, 12))
    assert sorted({c.label for c, _ in since})[0] == "20261119T000000"
