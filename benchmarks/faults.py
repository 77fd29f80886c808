"""``tempura bench faults``: ``tempura run`` killed with ``kill -9`` at random phases, run again,
every delivery checked; and pairs of runs started at once on one job folder.

A *trial* is one job on a copy of a small scenario (its data generated once per scenario, its
statistics collected once and copied into each trial's job folder, so a run does not analyse the
sources again). Its spec delivers at every time point into ``output: {mode: delta}``: each time
point's change lands in its own partition ``cycle=…/time_point=NNN``, so the result as of every
time point is the sum of the partitions up to it, and each is checked against
:func:`tempura.scheduler.reference.reference` with :func:`tempura.runtime.compare_results`.

- A **kill point** runs ``tempura run --now <end of the cycle>`` in a subprocess with
  ``TEMPURA_FAULT=PHASE@tN#K`` (:mod:`tempura.runtime.faults`), so it dies at that phase; then runs
  ``tempura run`` again in this process, and checks every time point: a *lost* result is a time
  point without its manifest or its delivery, a *wrong* one differs from the reference.
- A **pair** starts a run, waits until it holds the job's lock, and starts a second one, with or
  without ``--wait``: without, the second must stop with one line naming the holder; with, it
  must find nothing left to run. The first's deliveries are checked.

At most two subprocesses run at once. The report goes to ``faults.json`` in the output folder.
The fault-injection tests (``tests/test_faults.py``) are built on the same helpers.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import shutil
import subprocess
import sys
import time
import traceback
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from tempura.errors import TempuraError
from tempura.runtime import compare_results, spark_rows
from tempura.runtime.faults import PHASES, VARIABLE
from tempura.runtime.lock import NAME as LOCK_NAME
from tempura.runtime.store import JobStore
from tempura.scheduler.reference import reference
from tempura.scheduler.spec import Cycle, Spec
from tempura.standing import StandingQuery

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SCENARIOS = ("sales_returns", "stock_cdc")
METHODS = ("auto", "batch", "ivm", "streaming", "ojv", "higher-order")
SCALE = 0.002
PROJECT = Path(__file__).resolve().parent.parent
# The command line as its console entry point runs it (``tempura = tempura.cli:main``).
ENTRY = "import sys; from tempura.cli import main; sys.argv[0] = 'tempura'; main()"
# A subprocess's Spark: one core (two run at once), settings for tiny data.
SUBPROCESS_SPARK = {
    "master": "local[1]",
    "conf": {
        "spark.sql.shuffle.partitions": "1",
        "spark.sql.codegen.wholeStage": "false",
        "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    },
}
# A killed run's JVM lives for a few time points of tiny data: compiling its hot code with the
# client compiler only, and collecting garbage on one thread, spares the cores the tests share.
SHORT_LIVED_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
SHORT_LIVED_SPARK = {**SUBPROCESS_SPARK, "conf": {**SUBPROCESS_SPARK["conf"],  # type: ignore[dict-item]
                                                  "spark.driver.defaultJavaOptions": SHORT_LIVED_JVM}}
# Phases a time point may reach more than once (per source, fragment, state): #K picks one.
REPEATED = ("landing", "landed", "fragment", "state-written", "state-saved")
TIMEOUT = 900.0  # seconds a subprocess may take before it counts as hung

Row = tuple[Any, ...]


# -- scenarios and trials ----------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """A scenario copied with its data, and statistics of its sources to seed each job with."""

    name: str
    folder: Path
    stats: Path

    @property
    def spec_path(self) -> Path:
        return self.folder / "spec.yaml"


def prepare(spark: SparkSession, name: str, root: Path, scale: float = SCALE) -> Scenario:
    """Scenario ``name`` copied into ``root/name`` with data at ``scale`` (generated once) and its
    sources analysed once."""
    from scenarios import prepared_scenario

    root = root.resolve()  # the subprocesses run in the project's folder
    spec_path = prepared_scenario(spark, name, root, scale)
    query = StandingQuery(spec_path, root / ".stats" / name, spark)
    query.analyze()
    job = query.job_folder()
    assert isinstance(job, Path)  # a local workdir
    return Scenario(name, spec_path.parent, job / "stats")


@dataclass(frozen=True)
class Trial:
    """One job of a scenario: its spec ``<scenario>/<tag>.yaml`` (sources and output must lie in
    the spec's folder), its output and workdir under ``<scenario>/trials/<tag>/``."""

    scenario: Scenario
    tag: str

    @property
    def spec_path(self) -> Path:
        return self.scenario.folder / f"{self.tag}.yaml"

    @property
    def folder(self) -> Path:
        return self.scenario.folder / "trials" / self.tag

    @property
    def workdir(self) -> Path:
        return self.folder / "work"

    @property
    def output(self) -> Path:
        return self.folder / "out"

    def spec(self) -> Spec:
        return StandingQuery(self.spec_path, self.workdir).spec

    def cycle(self) -> Cycle:
        cycle = self.spec().cycle(0)
        assert cycle is not None
        return cycle

    @property
    def job(self) -> Path:
        job = StandingQuery(self.spec_path, self.workdir).job_folder()
        assert isinstance(job, Path)  # a local workdir
        return job

    @property
    def lock(self) -> Path:
        return self.job / LOCK_NAME

    def store(self) -> JobStore:
        return JobStore(self.job)

    def now(self, index: int | None = None) -> str:
        """Time point ``index`` of cycle 0 (default: the last), as ``--now`` takes it."""
        values = self.cycle().time_points.values
        value = values[(index or len(values)) - 1]
        return value.isoformat() if isinstance(value, (dt.date, dt.datetime)) else str(value)

    def run_args(self, method: str, index: int | None = None, *extra: str, workdir: str | None = None) -> list[str]:
        """``tempura run`` of this trial's due time points as of ``index`` (default: all);
        ``workdir``: the trial's workdir written another way (a ``file:`` URI)."""
        return ["run", str(self.spec_path), "--method", method, "--now", self.now(index), "--workdir",
                workdir or str(self.workdir), *extra]

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        self.spec_path.unlink(missing_ok=True)


def new_trial(scenario: Scenario, tag: str, spark: Mapping[str, object] = SUBPROCESS_SPARK) -> Trial:
    """A fresh job of ``scenario``: delivering at every time point into its own delta output (in
    place of the scenario's own), its statistics seeded, its runs' Spark set by ``spark``."""
    trial = Trial(scenario, tag)
    trial.remove()
    text = scenario.spec_path.read_text(encoding="utf-8").replace("deliver: last", "deliver: every")
    text = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("output:"))
    output = trial.output.relative_to(scenario.folder).as_posix()
    text += f"\noutput: {{path: {output}, mode: delta}}\nspark: {json.dumps(spark)}\n"
    trial.spec_path.write_text(text, encoding="utf-8")
    shutil.copytree(scenario.stats, trial.job / "stats")
    return trial


# -- running -----------------------------------------------------------------------------------


@dataclass
class Exit:
    """How a run of the command line ended."""

    code: int
    stdout: str
    stderr: str
    seconds: float = 0.0
    exception: str = ""  # an exception other than an exit (in-process runs): its traceback

    @property
    def errors(self) -> list[str]:
        """The lines saying ``error: …``."""
        return [line for line in (self.stdout + "\n" + self.stderr).splitlines() if line.startswith("error:")]

    def one_line_error(self) -> str:
        """Why this is not a user error of one line (exit 2, one ``error:`` line, no stack
        trace); empty when it is."""
        text = self.stdout + self.stderr + self.exception
        if self.code != 2:
            return f"exit {self.code}, expected 2: {self.last_lines()}"
        if "Traceback" in text or "at org.apache" in text:
            return f"a stack trace: {self.last_lines()}"
        if len(self.errors) != 1:
            return f"{len(self.errors)} error lines: {self.last_lines()}"
        return ""

    def last_lines(self, n: int = 6) -> str:
        lines = [line for line in (self.stdout + "\n" + self.stderr + "\n" + self.exception).splitlines() if line.strip()]
        return " | ".join(lines[-n:])


def start(args: Sequence[str], fault: str | None = None) -> subprocess.Popen[str]:
    """``tempura ARGS`` in a subprocess (with ``TEMPURA_FAULT=fault``)."""
    env = {key: value for key, value in os.environ.items() if key != VARIABLE}
    if fault is not None:
        env[VARIABLE] = fault
    return subprocess.Popen([sys.executable, "-c", ENTRY, *args], cwd=PROJECT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen[str], began: float, timeout: float = TIMEOUT) -> Exit:
    """Wait for ``process``; one that hangs past ``timeout`` is killed (exit ``-9``, and
    ``hung`` in its error output)."""
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        stderr += f"\nhung: killed after {timeout:.0f} s"
    return Exit(process.returncode, stdout, stderr, time.monotonic() - began)


def run_subprocess(args: Sequence[str], fault: str | None = None, timeout: float = TIMEOUT) -> Exit:
    began = time.monotonic()
    return finish(start(args, fault), began, timeout)


def run_in_process(args: Sequence[str]) -> Exit:
    """``tempura ARGS`` in this process (its Spark session reused), output captured."""
    from click.testing import CliRunner

    from tempura.cli import main

    began = time.monotonic()
    result = CliRunner().invoke(main, list(args))
    problem = ""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        problem = "".join(traceback.format_exception(result.exception))
    return Exit(result.exit_code, result.stdout, result.stderr, time.monotonic() - began, problem)


def wait_for_lock(trial: Trial, process: subprocess.Popen[str], timeout: float = 300.0) -> bool:
    """Whether ``process`` took the trial's lock (while still running) within ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if trial.lock.exists():
            return process.poll() is None
        if process.poll() is not None:
            return False
        time.sleep(0.05)
    return False


# -- checking ----------------------------------------------------------------------------------


@dataclass
class Verdict:
    """Every time point of a trial's cycle checked against the reference."""

    checked: list[int] = field(default_factory=list)
    wrong: dict[int, str] = field(default_factory=dict)  # time point: what differs
    lost: list[int] = field(default_factory=list)  # time points without a manifest or a delivery

    @property
    def ok(self) -> bool:
        return not self.wrong and not self.lost

    def describe(self) -> str:
        parts = [f"t{i} wrong: {why}" for i, why in sorted(self.wrong.items())]
        parts += [f"t{i} lost" for i in self.lost]
        return "; ".join(parts) or "every time point equals the reference"


def partition(trial: Trial, index: int) -> Path:
    """Where time point ``index``'s delivery lands."""
    return trial.output / f"cycle={trial.cycle().label}" / f"time_point={index:03d}"


def delivered(spark: SparkSession, trial: Trial, through: int) -> dict[int, list[Row] | str]:
    """The delivered result as of each time point up to ``through`` whose delivery exists: the
    sum of the deltas delivered up to it (a row whose multiplicity sums to ``n`` appears ``n``
    times), or what is wrong with it (a negative sum)."""
    from pyspark.sql import functions as F

    from tempura.runtime.files import uri

    present = [i for i in range(1, through + 1) if partition(trial, i).exists()]
    if not present:
        return {}
    deltas = (spark.read.option("basePath", uri(trial.output)).parquet(*[uri(partition(trial, i)) for i in present])
              .drop("cycle"))
    columns = [c for c in deltas.columns if c not in ("__m", "time_point")]
    changes: dict[int, list[tuple[Row, int]]] = {}
    for row in deltas.select(*[F.col(f"`{c}`") for c in columns], "__m", "time_point").collect():
        values = tuple(row)
        changes.setdefault(int(values[-1]), []).append((values[:-2], int(values[-2])))
    out: dict[int, list[Row] | str] = {}
    counts: dict[Row, int] = {}
    for index in range(1, through + 1):
        for values, m in changes.get(index, []):
            counts[values] = counts.get(values, 0) + m
        if index not in present:
            continue
        negative = [(values, count) for values, count in counts.items() if count < 0]
        if negative:
            out[index] = f"row {negative[0][0]!r} has multiplicity {negative[0][1]}"
            continue
        out[index] = [values for values, count in counts.items() for _ in range(count)]
    return out


def check(spark: SparkSession, trial: Trial, through: int | None = None,
          expected: dict[tuple[str, int], list[Row]] | None = None) -> Verdict:
    """Every time point of cycle 0 up to ``through`` (default: all): committed, delivered, and
    equal to the reference. ``expected``: a cache of reference results by scenario and time point
    (they depend on the sources and the query only)."""
    spec = trial.spec()
    cycle = trial.cycle()
    store = trial.store()
    last = through or cycle.time_points.k
    verdict = Verdict()
    results = delivered(spark, trial, last)
    cache = expected if expected is not None else {}
    for index in range(1, last + 1):
        try:
            manifest = store.manifest(cycle.label, index)
        except (OSError, ValueError, TempuraError):
            manifest = None
        if manifest is None or index not in results:
            verdict.lost.append(index)
            continue
        verdict.checked.append(index)
        key = (trial.scenario.name, index)
        if key not in cache:
            cache[key] = spark_rows(reference(spark, spec, cycle, index))
        found = results[index]
        if isinstance(found, str):
            verdict.wrong[index] = found
            continue
        outcome = compare_results(cache[key], found)
        if not outcome.equal:
            verdict.wrong[index] = outcome.reason
    return verdict


def methods_planned(spark: SparkSession, scenario: Scenario, methods: Sequence[str] = METHODS) -> list[str]:
    """The methods that have a plan for the scenario's query (as its trials deliver)."""
    trial = new_trial(scenario, "probe")
    try:
        planned = StandingQuery(trial.spec_path, trial.workdir, spark).plan("auto").alternatives
        return [method for method in methods if method in planned]
    finally:
        trial.remove()


# -- the benchmark -----------------------------------------------------------------------------


@dataclass(frozen=True)
class KillPoint:
    scenario: str
    method: str
    phase: str
    index: int
    count: int

    @property
    def fault(self) -> str:
        return f"{self.phase}@t{self.index}" + (f"#{self.count}" if self.count > 1 else "")


@dataclass
class KillResult:
    point: KillPoint
    tag: str
    killed: bool  # the subprocess died by SIGKILL (the fault fired)
    exit: int
    rerun_exit: int
    rerun_error: str
    wrong: dict[int, str]
    lost: list[int]
    seconds: float

    @property
    def ok(self) -> bool:
        return self.rerun_exit == 0 and not self.wrong and not self.lost


@dataclass
class PairResult:
    scenario: str
    method: str
    tag: str
    waited: bool
    first_exit: int
    second_exit: int
    second_problem: str  # empty when the second run behaved
    wrong: dict[int, str]
    lost: list[int]

    @property
    def ok(self) -> bool:
        return self.first_exit == 0 and not self.second_problem and not self.wrong and not self.lost


def kill_points(rng: random.Random, count: int, methods: dict[str, list[str]], k: int = 4) -> list[KillPoint]:
    """``count`` random kill points over the scenarios' planned methods."""
    out = []
    names = sorted(methods)
    for _ in range(count):
        name = rng.choice(names)
        phase = rng.choice(PHASES)
        repeat = rng.choice((1, 1, 2, 3)) if phase in REPEATED else 1
        out.append(KillPoint(name, rng.choice(methods[name]), phase, rng.randint(1, k), repeat))
    return out


def every_kill_point(methods: dict[str, list[str]], index: int = 2) -> list[KillPoint]:
    """Every phase under every planned method of every scenario, at time point ``index``."""
    return [KillPoint(name, method, phase, index, 1) for name in sorted(methods) for method in methods[name]
            for phase in PHASES]


def _kill_and_rerun(spark: SparkSession, trial: Trial, point: KillPoint, killed: Exit,
                    expected: dict[tuple[str, int], list[Row]]) -> KillResult:
    rerun = run_in_process(trial.run_args(point.method))
    verdict = check(spark, trial, expected=expected)
    problem = "" if rerun.code == 0 else rerun.last_lines()
    return KillResult(point, trial.tag, killed.code == -9, killed.code, rerun.code, problem, verdict.wrong,
                      verdict.lost, killed.seconds + rerun.seconds)


def _pair(spark: SparkSession, trial: Trial, method: str, waited: bool,
          expected: dict[tuple[str, int], list[Row]]) -> PairResult:
    began = time.monotonic()
    first = start(trial.run_args(method))
    problem = ""
    if not wait_for_lock(trial, first):
        problem = "the first run never held the lock"
        second = Exit(0, "", "")
    else:
        second = run_subprocess(trial.run_args(method, None, *(["--wait", "600"] if waited else [])))
    done = finish(first, began)
    if not problem and waited:
        ran = [line for line in second.stdout.splitlines() if "fragment(s)" in line]
        if second.code != 0 or ran:
            problem = f"with --wait: exit {second.code}, ran {len(ran)} time point(s): {second.last_lines()}"
    elif not problem:
        problem = second.one_line_error()
        if not problem and "locked by another run" not in second.errors[0]:
            problem = f"the error does not name the holder: {second.errors[0]}"
    verdict = check(spark, trial, expected=expected)
    return PairResult(trial.scenario.name, method, trial.tag, waited, done.code, second.code, problem, verdict.wrong,
                      verdict.lost)


def run(spark: SparkSession, out: Path, workdir: Path, kills: int = 200, pairs: int = 20, seed: int = 0,
        scenarios: Sequence[str] = SCENARIOS, scale: float = SCALE,
        log: Callable[[str], None] = lambda _m: None, matrix: bool = False) -> dict[str, Any]:
    """The whole benchmark; writes ``faults.json`` into ``out`` and returns the report
    (``matrix``: every phase under every method of every scenario first, then the random ones)."""
    began = time.monotonic()
    rng = random.Random(seed)
    prepared = {name: prepare(spark, name, workdir, scale) for name in scenarios}
    methods = {name: methods_planned(spark, s) for name, s in prepared.items()}
    log("methods with a plan: " + "; ".join(f"{n}: {', '.join(m)}" for n, m in methods.items()))
    k = min(StandingQuery(s.spec_path).spec.time_points().k for s in prepared.values())
    points = (every_kill_point(methods) if matrix else []) + kill_points(rng, kills, methods, k)
    expected: dict[tuple[str, int], list[Row]] = {}
    results: list[KillResult] = []
    with ThreadPoolExecutor(max_workers=2) as pool:
        running: list[tuple[Trial, KillPoint, Future[Exit]]] = []
        for n, point in enumerate(points):
            trial = new_trial(prepared[point.scenario], f"kill-{n:04d}")
            running.append((trial, point, pool.submit(run_subprocess, trial.run_args(point.method), point.fault)))
        for n, (trial, point, future) in enumerate(running):
            result = _kill_and_rerun(spark, trial, point, future.result(), expected)
            results.append(result)
            log(f"kill {n + 1}/{len(points)} {point.scenario} {point.method} {point.fault}: "
                f"{'killed' if result.killed else f'exit {result.exit}'}; "
                + ("ok" if result.ok else f"rerun exit {result.rerun_exit} {result.rerun_error} wrong {result.wrong} "
                                          f"lost {result.lost}"))
            if result.ok:
                trial.remove()
    pair_results: list[PairResult] = []
    for n in range(pairs):
        name = rng.choice(sorted(prepared))
        method = rng.choice(methods[name])
        trial = new_trial(prepared[name], f"pair-{n:03d}")
        found = _pair(spark, trial, method, rng.random() < 0.5, expected)
        pair_results.append(found)
        log(f"pair {n + 1}/{pairs} {name} {method} {'--wait' if found.waited else 'no wait'}: "
            + ("ok" if found.ok else f"{found.second_problem} wrong {found.wrong} lost {found.lost}"))
        if found.ok:
            trial.remove()
    report = build_report(results, pair_results, seed, scale, methods, time.monotonic() - began)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "faults.json"
    report["files"] = [str(path)]
    path.write_text(json.dumps(report, indent=2, default=str))
    return report


def build_report(kills: Sequence[KillResult], pairs: Sequence[PairResult], seed: int, scale: float,
                 methods: dict[str, list[str]], seconds: float) -> dict[str, Any]:
    """Counts by phase and by method, and every failure in full."""

    def tally(items: Sequence[KillResult]) -> dict[str, int]:
        return {"kills": len(items), "fired": sum(r.killed for r in items),
                "wrong": sum(len(r.wrong) for r in items), "lost": sum(len(r.lost) for r in items),
                "rerun_failed": sum(r.rerun_exit != 0 for r in items)}

    def kill_json(r: KillResult) -> dict[str, Any]:
        data = asdict(r)
        data["fault"] = r.point.fault
        return data

    return {
        "seed": seed,
        "scale": scale,
        "seconds": round(seconds, 1),
        "methods": methods,
        "summary": {**tally(kills), "pairs": len(pairs), "pairs_failed": sum(not p.ok for p in pairs),
                    "pairs_wrong": sum(len(p.wrong) for p in pairs), "pairs_lost": sum(len(p.lost) for p in pairs)},
        "by_phase": {phase: tally([r for r in kills if r.point.phase == phase]) for phase in PHASES},
        "by_method": {m: tally([r for r in kills if r.point.method == m]) for m in sorted({r.point.method for r in kills})},
        "failures": [kill_json(r) for r in kills if not r.ok],
        "pair_failures": [asdict(p) for p in pairs if not p.ok],
    }


__all__ = ["Exit", "KillPoint", "Scenario", "Trial", "Verdict", "check", "new_trial", "prepare", "run",
           "run_in_process", "run_subprocess", "start", "finish", "wait_for_lock", "delivered", "partition"]
