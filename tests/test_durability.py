"""A job's run in process, on Spark: a second writer stops and commits nothing, an empty result
does not replace a full one unless the spec allows it, and a run catches up on at most
``max_catch_up`` past cycles (a schedule that starts in 1991 does not replay 13,000 cycles).
Damage to a job folder (a lost or cut-short state file or manifest) and its repair are tested
through the command line in ``tests/test_faults.py``; the chain of manifests without Spark in
``tests/test_lock.py``."""

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
from tempura.runtime.store import JobStore
from tempura.scheduler import load_spec
from tempura.scheduler.reference import reference
from tempura.scheduler.runner import Runner
from tempura.scheduler.spec import Spec

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


def copy(committed: Path, tmp_path: Path) -> tuple[Spec, Path, JobStore, str]:
    """A fresh copy of the committed job (spec, data, output and workdir)."""
    shutil.copytree(committed, tmp_path / "job")
    spec = load_spec(tmp_path / "job" / "stock_cdc" / "spec.yaml")
    cycle = spec.cycle(0)
    assert cycle is not None
    store = JobStore(tmp_path / "job" / "work" / "jobs" / "stock_cdc")
    return spec, tmp_path / "job" / "work", store, cycle.label


def assert_delivers_the_reference(spark: Any, spec: Spec, index: int) -> None:
    cycle = spec.cycle(0)
    assert cycle is not None
    expected = [tuple(r) for r in reference(spark, spec, cycle, index).collect()]
    actual = [tuple(r) for r in spark.read.parquet(spec.output_location()).collect()]
    outcome = compare_results(expected, actual)
    assert outcome.equal, f"t{index}: {outcome.reason}"


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
