"""Crashes, concurrent runs and damage: ``tempura run`` killed with ``kill -9`` at every phase of a
time point and run again delivers exactly the reference at every time point; a second run on a
job folder in use stops with one line naming the holder (or waits for it); a damaged job folder
stops ``run`` with one line, is listed by ``check`` and rebuilt by ``repair``.

Each job is the tiny ``sales_returns`` scenario (an outer join), delivering at every time point
into a delta output, so every time point's delivery is kept and checked (:mod:`benchmarks.faults`
holds the harness, shared with ``tempura bench faults``). A killed run is a subprocess
(``TEMPURA_FAULT=PHASE@tN``, ``--now`` at ``t_N``, so the time points through it are due); two run
at once, while this process runs again, in process through the command line, the jobs already
killed.

The kills (a subprocess with Spark costs several seconds, and the suite must stay small): every
phase of :data:`~tempura.runtime.faults.PHASES` once on ``sales_returns``, the methods ``auto``,
``ivm``, ``batch``, ``streaming`` (which runs stream fragments on this query) and ``ojv`` taking
the phases in turn, at t2 (t1 committed, its states kept). Every phase under every method of both
scenarios (``stock_cdc``'s change data too) is ``tempura bench faults --matrix``, with hundreds of
random kill points after it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator

import pytest

from benchmarks import faults
from tempura.runtime.faults import PHASES

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("fast_spark")]

TURNS = ("auto", "ivm", "batch", "streaming", "ojv")


def matrix() -> list[tuple[str, str, str, int]]:
    """(scenario, method, phase, time point) of every kill."""
    out = [("sales_returns", TURNS[n % len(TURNS)], phase, 2) for n, phase in enumerate(PHASES)]
    return out


KILLS = matrix()
KILLED_TEST = "test_a_run_killed_at_a_phase_is_finished_by_the_next_and_delivers_the_reference"
Expected = dict[tuple[str, int], list[tuple[Any, ...]]]



def new_trial(scenario: faults.Scenario, tag: str) -> faults.Trial:
    """:func:`benchmarks.faults.new_trial`, its subprocesses' JVM started short-lived
    (:data:`benchmarks.faults.SHORT_LIVED_SPARK`; a run in this process keeps this process's
    session)."""
    return faults.new_trial(scenario, tag, faults.SHORT_LIVED_SPARK)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("faults")


class Scenarios(dict[str, faults.Scenario]):
    """The scenarios, each prepared (data generated, sources analysed) when first asked for."""

    def __init__(self, spark: Any, root: Path) -> None:
        super().__init__()
        self.spark, self.root = spark, root

    def __missing__(self, name: str) -> faults.Scenario:
        found = self[name] = faults.prepare(self.spark, name, self.root)
        return found


@pytest.fixture(scope="module")
def scenarios(fast_spark: Any, root: Path) -> Scenarios:
    return Scenarios(fast_spark, root)


@pytest.fixture(scope="module")
def expected() -> Expected:
    """Reference results by scenario and time point, computed once."""
    return {}


@pytest.fixture(scope="module")
def killed(request: pytest.FixtureRequest, scenarios: Scenarios
           ) -> Iterator[dict[tuple[str, str, str, int], tuple[faults.Trial, Future[faults.Exit]]]]:
    """The killed runs of the selected kill tests, started at once, two at a time."""
    wanted = [(str(p["name"]), str(p["method"]), str(p["phase"]), int(str(p["index"])))
              for p in (item.callspec.params for item in request.session.items
                        if isinstance(item, pytest.Function) and item.originalname == KILLED_TEST)]
    out = {}
    with ThreadPoolExecutor(max_workers=2) as pool:
        for n, (name, method, phase, index) in enumerate(wanted):
            trial = new_trial(scenarios[name], f"kill-{n:02d}")
            fault = f"{phase}@t{index}"
            # due through the killed time point: the rerun finishes it, and checks each point up to it
            out[(name, method, phase, index)] = (trial, pool.submit(faults.run_subprocess, trial.run_args(method, index),
                                                                   fault))
        yield out
        for _, future in out.values():
            future.cancel()


@pytest.mark.parametrize(("name", "method", "phase", "index"), KILLS,
                         ids=[f"{n}-{m}-{p}@t{i}" for n, m, p, i in KILLS])
def test_a_run_killed_at_a_phase_is_finished_by_the_next_and_delivers_the_reference(
        name: str, method: str, phase: str, index: int, spark: Any, expected: Expected,
        killed: dict[tuple[str, str, str, int], tuple[faults.Trial, Future[faults.Exit]]]) -> None:
    trial, future = killed[(name, method, phase, index)]
    dead = future.result()
    assert dead.code == -9, f"TEMPURA_FAULT={phase}@t{index} did not kill the run: {dead.last_lines()}"
    store = trial.store()
    label = trial.cycle().label
    committed = [i for i in range(1, 5) if store.manifest_path(label, i).exists()]
    assert committed == list(range(1, index + (phase in ("committed", "cleaned", "recorded")))), committed
    again = faults.run_in_process(trial.run_args(method, index))
    assert again.code == 0 and not again.exception, again.last_lines()
    verdict = faults.check(spark, trial, through=index, expected=expected)
    assert verdict.ok, f"{method}, killed at {phase}@t{index}: {verdict.describe()}"
    assert not store.pending(label).exists()
    trial.remove()


# -- two runs at once --------------------------------------------------------------------------


def test_a_second_run_stops_naming_the_holder_and_one_with_wait_waits_and_finds_nothing_due(
        spark: Any, scenarios: Scenarios, expected: Expected) -> None:
    """While a run holds the job, a second stops at once with one line naming it; a third, with
    --wait, waits for it to finish and then finds every time point committed. The workdir is on
    another file system than the sources and the output (a memory file system where the machine
    has one): a delivery moves from the workdir's pending folder to the output across it."""
    trial = new_trial(scenarios["sales_returns"], "pair")
    elsewhere, other = Path("/dev/shm"), None
    if elsewhere.is_dir() and os.access(elsewhere, os.W_OK) and elsewhere.stat().st_dev != trial.folder.stat().st_dev:
        other = Path(tempfile.mkdtemp(prefix="tempura-workdir-", dir=elsewhere))
        shutil.copytree(trial.workdir, other, dirs_exist_ok=True)  # the seeded statistics
        shutil.rmtree(trial.workdir)
        trial.workdir.symlink_to(other, target_is_directory=True)
    try:
        _pair(spark, trial, expected)
    finally:
        if other is not None:
            shutil.rmtree(other, ignore_errors=True)


def _pair(spark: Any, trial: faults.Trial, expected: Expected) -> None:
    first = faults.start(trial.run_args("ivm"))
    began = time.monotonic()
    try:
        assert faults.wait_for_lock(trial, first), "the first run never held the lock"
        second = faults.run_in_process(trial.run_args("ivm"))
        third = faults.run_in_process(trial.run_args("ivm", None, "--wait", "600"))
    finally:
        done = faults.finish(first, began)
    assert not second.one_line_error(), second.one_line_error()
    assert "is locked by another run" in second.errors[0] and f"pid {first.pid} " in second.errors[0], second.errors
    assert done.code == 0, done.last_lines()
    assert third.code == 0 and not third.exception, third.last_lines()
    assert not [line for line in third.stdout.splitlines() if "fragment(s)" in line], third.stdout
    verdict = faults.check(spark, trial, expected=expected)
    assert verdict.ok, verdict.describe()


# -- damage ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def committed(fast_spark: Any, scenarios: Scenarios, root: Path) -> tuple[faults.Trial, Path]:
    """A job run by ``ivm`` through t3 (states alive for t4), and a copy of its folders to put
    back before each damage. Its workdir is given as a ``file://`` URI, which names the same
    folder as the path (checked: the job is where the path says, and nothing is made under the
    working folder): this run writes through Hadoop's file system, the tests' later runs, checks
    and repairs, given the path, through the local one, on the same manifests and lock."""
    trial = faults.new_trial(scenarios["sales_returns"], "damaged")
    ran = faults.run_in_process(trial.run_args("ivm", 3, workdir=trial.workdir.as_uri()))
    assert ran.code == 0, ran.last_lines()
    assert trial.store().manifest_path(trial.cycle().label, 3).exists()
    assert not Path("file:").exists()  # where a URI read as a relative path would have put it
    backup = root / "damaged-backup"
    shutil.copytree(trial.folder, backup)
    return trial, backup


def restored(committed: tuple[faults.Trial, Path]) -> faults.Trial:
    trial, backup = committed
    shutil.rmtree(trial.folder)
    shutil.copytree(backup, trial.folder)
    return trial


def files_of(trial: faults.Trial) -> dict[str, tuple[int, int]]:
    """Every file of the job's cycles and output but an attempt's leftovers: size and mtime."""
    out = {}
    for top in (trial.job / "cycles", trial.output):
        for path in top.rglob("*"):
            if path.is_file() and ".pending" not in path.parts:
                stat = path.stat()
                out[str(path.relative_to(trial.folder))] = (stat.st_size, stat.st_mtime_ns)
    return out


def a_state_file(trial: faults.Trial) -> Path:
    """A parquet file of a state the t3 manifest lists (ivm keeps one for t4)."""
    store = trial.store()
    label = trial.cycle().label
    manifest = store.manifest(label, 3)
    assert manifest is not None and manifest["states"], "ivm keeps no state for t4: nothing to damage"
    folder = store.cycle_dir(label) / "states" / manifest["states"][0]["folder"]
    return sorted(folder.glob("part-*.parquet"))[0]


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def damage(trial: faults.Trial, kind: str) -> str:
    """Damage the job; returns the name the error must give."""
    store = trial.store()
    label = trial.cycle().label
    if kind == "missing-manifest":
        store.manifest_path(label, 2).unlink()
        return "t002.json"
    if kind == "truncated-manifest":
        truncate(store.manifest_path(label, 3))
        return "t003.json"
    state = a_state_file(trial)
    if kind == "missing-state-file":
        state.unlink()
    else:
        truncate(state)
    return state.parent.name


@pytest.mark.parametrize("kind", ["missing-manifest", "truncated-manifest", "missing-state-file", "truncated-state"])
def test_a_damaged_job_stops_run_with_one_line_and_is_repaired(kind: str, spark: Any, expected: Expected,
                                                               committed: tuple[faults.Trial, Path]) -> None:
    trial = restored(committed)
    named = damage(trial, kind)
    before = files_of(trial)
    stopped = faults.run_in_process(trial.run_args("ivm"))
    assert not stopped.one_line_error(), stopped.one_line_error()
    assert named in stopped.errors[0], stopped.errors
    assert files_of(trial) == before, "a run on a damaged job changed what is committed"

    args = [str(trial.spec_path), "--workdir", str(trial.workdir)]
    listed = faults.run_in_process(["check", *args])
    assert listed.code == 1 and named in listed.stdout, listed.last_lines()
    repaired = faults.run_in_process(["repair", *args])
    assert repaired.code == 0 and not repaired.exception, repaired.last_lines()
    clean = faults.run_in_process(["check", *args])
    assert clean.code == 0, clean.last_lines()
    finished = faults.run_in_process(trial.run_args("ivm"))
    assert finished.code == 0 and not finished.exception, finished.last_lines()
    verdict = faults.check(spark, trial, expected=expected)
    assert verdict.ok, f"after repairing a {kind}: {verdict.describe()}"


def test_a_stale_pending_folder_is_listed_and_cleaned_by_the_next_run(spark: Any, expected: Expected,
                                                                       committed: tuple[faults.Trial, Path]) -> None:
    trial = restored(committed)
    pending = trial.store().pending(trial.cycle().label)
    (pending / "states" / "f9").mkdir(parents=True)
    (pending / "states" / "f9" / "part-00000.parquet").write_bytes(b"PAR1 half a file")
    args = [str(trial.spec_path), "--workdir", str(trial.workdir)]
    listed = faults.run_in_process(["check", *args])
    assert listed.code == 0 and ".pending" in listed.stdout, listed.last_lines()
    finished = faults.run_in_process(trial.run_args("ivm"))
    assert finished.code == 0 and not finished.exception, finished.last_lines()
    assert not pending.exists()
    verdict = faults.check(spark, trial, expected=expected)
    assert verdict.ok, verdict.describe()


def test_the_check_finds_a_lost_and_a_wrong_delivery(spark: Any, expected: Expected,
                                                     committed: tuple[faults.Trial, Path]) -> None:
    """The harness can fail: a delivery counted twice is wrong from its time point on, and a time
    point without its delivery is lost."""
    from pyspark.sql import functions as F

    trial = restored(committed)
    assert faults.check(spark, trial, through=3, expected=expected).ok
    first = faults.partition(trial, 1)
    doubled = trial.folder / "doubled"
    spark.read.parquet(str(first)).withColumn("__m", F.col("__m") * 2).write.parquet(str(doubled))
    shutil.rmtree(first)
    doubled.rename(first)
    shutil.rmtree(faults.partition(trial, 2))
    verdict = faults.check(spark, trial, through=3, expected=expected)
    assert verdict.lost == [2] and sorted(verdict.wrong) == [1, 3], verdict.describe()
