"""Runs by the clock: each time point's files land only at that point, and a process of its own
runs it, as cron runs ``tempura run --now t_i``; measured as the user pays for it.

- :func:`split_by_interval` writes each arriving source's rows apart per interval of the cycle
  (``<out>/<source>/i=NNN/``; rows before the cycle's origin, a source's history, go to
  ``i=000``), from the generated data of a scenario.
- :class:`ClockJob` is one job's folder set up to be run by the clock: its spec and SQL, its
  source folders empty at first. :meth:`ClockJob.arrive` copies interval ``i``'s files into the
  source folders (as new files, the way data lands), and :meth:`ClockJob.run_point` runs
  ``tempura run SPEC --now t_i`` in a new process with Spark's event log on.
- :func:`read_event_log` reads that log: **every** Spark job the process started, its executor
  CPU, records and bytes read, and its purpose (the job description tempura gives each job,
  :data:`tempura.runtime.metrics.PURPOSES`); the application's wall time. The CPU of the
  process tree is sampled while it runs (:func:`tree_cpu_run`); a tempura process also reports
  its own (Python and the JVM, ``TEMPURA_PROCESS_REPORT``) when it exits.

So a point's figures are the whole run: planning, statistics, landing, fragments, commit, and the
process around them — not only the plan's fragments, which are reported beside them, labelled.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from tempura.runtime.metrics import PURPOSES, UNTAGGED
from tempura.scheduler import load_spec
from tempura.scheduler.spec import Spec
from tempura.tvr.arrival import sql_literal

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PROJECT = Path(__file__).resolve().parent.parent
ENTRY = "import sys; from tempura.cli import main; sys.exit(main(sys.argv[1:]))"
TIMEOUT = 1800.0  # seconds one time point's process may take


def split_by_interval(spark: SparkSession, spec: Spec, out: Path, files_per_interval: int = 1) -> dict[str, list[int]]:
    """Write each source's rows (as the spec's generated data holds them) apart per interval of
    cycle 0 under ``out/<source>/i=NNN/`` (``i=000``: rows at or before the origin); a source
    arriving by file is copied whole into ``i=001``. Returns per source the rows per folder."""
    cycle = spec.cycle(0)
    assert cycle is not None
    values = cycle.time_points.values
    counts: dict[str, list[int]] = {}
    for name, source in spec.sources.items():
        frame = spark.read.format(source.format or "parquet").load(spec.location(name))
        target = out / name
        shutil.rmtree(target, ignore_errors=True)
        column = source.arrival.column
        if column is None:
            frame.coalesce(files_per_interval).write.parquet(str(target / "i=001"))
            counts[name] = [0, frame.count()]
            continue
        bounds = [cycle.origin, *values]
        found = []
        for i in range(len(bounds)):
            upper, lower = bounds[i], bounds[i - 1] if i > 0 else None
            if i == 0:
                where = f"`{column}` <= {sql_literal(upper)}" if upper is not None else None
            else:
                assert upper is not None
                low = f"`{column}` > {sql_literal(lower)} AND " if lower is not None else ""
                where = f"{low}`{column}` <= {sql_literal(upper)}"
            if where is None:
                found.append(0)
                continue
            part = frame.where(where)
            part.coalesce(files_per_interval).write.parquet(str(target / f"i={i:03d}"))
            found.append(spark.read.parquet(str(target / f"i={i:03d}")).count())
        counts[name] = found
    return counts


@dataclass
class PointFigures:
    """What one time point's run cost, as its process's Spark event log and the process say."""

    index: int
    returncode: int
    wall_seconds: float  # the process, from start to exit
    cpu_seconds: float = 0.0  # executor CPU of every job of the run's Spark application
    records_read: int = 0
    bytes_read: int = 0
    jobs: int = 0
    app_wall_seconds: float = 0.0  # the Spark application's, from its start to its end
    process_cpu_seconds: float = 0.0  # the process tree's CPU: Python and the JVMs (driver and local executors)
    by_purpose: dict[str, dict[str, float]] = field(default_factory=dict)
    output: str = ""
    reported_cpu_seconds: float | None = None  # tempura's own report of its process's CPU, at exit

    @property
    def fragments_cpu(self) -> float:
        """The plan's fragments' executor CPU alone: a partial figure."""
        return self.by_purpose.get("fragment", {}).get("cpu_seconds", 0.0)

    @property
    def landing_cpu(self) -> float:
        return self.by_purpose.get("landing", {}).get("cpu_seconds", 0.0)

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "returncode": self.returncode, "wall_seconds": self.wall_seconds,
                "cpu_seconds": self.cpu_seconds, "records_read": self.records_read, "bytes_read": self.bytes_read,
                "jobs": self.jobs, "app_wall_seconds": self.app_wall_seconds,
                "process_cpu_seconds": self.process_cpu_seconds, "reported_cpu_seconds": self.reported_cpu_seconds,
                "by_purpose": self.by_purpose,
                "fragments_cpu_seconds (partial)": self.fragments_cpu}


def _purpose(description: str) -> str:
    head = description.split(":", 1)[0].strip() if ":" in description else ""
    return head if head in PURPOSES else UNTAGGED


def read_event_log(folder: Path) -> dict[str, Any]:
    """Every job of the Spark application whose event log is under ``folder`` (one application):
    per purpose and in all, executor CPU seconds, records and bytes read, jobs; and the
    application's wall time (to its last job's end, when a process that exits before its
    application's end is written leaves none)."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(("appstatus", "."))
                   and p.name not in OWN_FILES)
    stage_job: dict[int, int] = {}
    job_purpose: dict[int, str] = {}
    totals: dict[str, dict[str, float]] = defaultdict(lambda: {"cpu_seconds": 0.0, "records_read": 0, "bytes_read": 0,
                                                                "jobs": 0})
    start = end = last = None  # last: the last job's end, where the log has no application end
    for path in files:
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                event = json.loads(line)
                kind = event.get("Event")
                if kind == "SparkListenerJobStart":
                    properties = event.get("Properties") or {}
                    purpose = _purpose(str(properties.get("spark.job.description") or ""))
                    job_purpose[event["Job ID"]] = purpose
                    totals[purpose]["jobs"] += 1
                    for stage in event.get("Stage IDs", []):
                        stage_job[stage] = event["Job ID"]
                elif kind == "SparkListenerStageCompleted":
                    info = event["Stage Info"]
                    values = {a.get("Name"): a.get("Value") for a in info.get("Accumulables", [])}
                    purpose = job_purpose.get(stage_job.get(info["Stage ID"], -1), UNTAGGED)
                    entry = totals[purpose]
                    entry["cpu_seconds"] += int(values.get("internal.metrics.executorCpuTime", 0) or 0) / 1e9
                    entry["records_read"] += int(values.get("internal.metrics.input.recordsRead", 0) or 0)
                    entry["bytes_read"] += int(values.get("internal.metrics.input.bytesRead", 0) or 0)
                elif kind == "SparkListenerApplicationStart":
                    start = event["Timestamp"]
                elif kind == "SparkListenerApplicationEnd":
                    end = event["Timestamp"]
                if kind == "SparkListenerJobEnd" and event.get("Completion Time"):
                    last = max(last or 0, int(event["Completion Time"]))
    whole = {key: sum(t[key] for t in totals.values()) for key in ("cpu_seconds", "records_read", "bytes_read", "jobs")}
    return {"whole": whole, "by_purpose": {k: dict(v) for k, v in totals.items()},
            "app_wall_seconds": (((end or last) - start) / 1000 if start is not None and (end or last) is not None
                                 else 0.0)}


@dataclass
class ClockJob:
    """One job run by the clock: a folder with the spec, its SQL and empty source folders, fed
    interval by interval from :func:`split_by_interval`'s folders."""

    folder: Path
    staged: Path  # split_by_interval's output
    spec_path: Path
    workdir: Path
    spark_conf: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls, scenario_spec: Path, staged: Path, folder: Path,
               spark_conf: Mapping[str, str] | None = None) -> ClockJob:
        """A fresh job folder for the spec at ``scenario_spec`` (its data to come from ``staged``)."""
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for path in scenario_spec.parent.iterdir():
            if path.suffix in (".yaml", ".sql"):
                shutil.copyfile(path, folder / path.name)
        job = cls(folder, staged, folder / scenario_spec.name, folder / "work", dict(spark_conf or {}))
        for name in job.spec.sources:
            Path(job.spec.location(name)).mkdir(parents=True, exist_ok=True)
        return job

    @property
    def spec(self) -> Spec:
        return load_spec(self.spec_path)

    def now(self, index: int) -> str:
        cycle = self.spec.cycle(0)
        assert cycle is not None
        value = cycle.time_points.value(index)
        return value.isoformat() if hasattr(value, "isoformat") else str(value)

    def arrive(self, index: int) -> int:
        """Copy every source's interval ``index`` files into its folder (and, with interval 1,
        the history of ``i=000``) as new files; returns how many."""
        copied = 0
        for name in self.spec.sources:
            target = Path(self.spec.location(name))
            for i in ([0, 1] if index == 1 else [index]):
                folder = self.staged / name / f"i={i:03d}"
                for part in sorted(folder.glob("*.parquet")) if folder.exists() else []:
                    shutil.copyfile(part, target / f"i{i:03d}-{part.name}")
                    copied += 1
        return copied

    def next_cycle_now(self) -> str | None:
        """The next cycle's first time point (``None``: the schedule has one cycle)."""
        following = self.spec.cycle(1)
        if following is None:
            return None
        value = following.time_points.value(1)
        return value.isoformat() if hasattr(value, "isoformat") else str(value)

    def run_point(self, index: int, method: str = "auto", events: Path | None = None,
                  extra: Sequence[str] = (), now: str | None = None) -> PointFigures:
        """``tempura run SPEC --now t_index`` (or ``--now now``) in a new process, measured whole."""
        events = events or self.folder / "events" / f"t{index:03d}-{method}-{time.time_ns()}"
        command = ["-c", ENTRY, "run", str(self.spec_path), "--now", now or self.now(index), "--method", method,
                   "--workdir", str(self.workdir), *extra]
        return measured_process(index, command, events, self.spark_conf)


OWN_FILES = ("output.txt", "process.json")  # what a measured process's folder holds beside its event log
SAMPLE_SECONDS = 0.05  # how often a measured process tree's CPU is sampled


def tree_cpu_run(command: Sequence[str], cwd: Path, env: Mapping[str, str], output: Path,
                 timeout: float = TIMEOUT) -> tuple[int, float, float]:
    """Run ``command`` with its output to ``output``; its exit code, wall seconds and the CPU
    seconds of its whole process tree (every process it started, Python's and the JVMs', each
    sampled every :data:`SAMPLE_SECONDS` while it lives: a process's last few milliseconds are
    not seen). One way for every contender, whatever processes it starts."""
    import psutil

    seen: dict[tuple[int, float], float] = {}  # (pid, create time) -> its own CPU seconds
    began = time.perf_counter()
    with output.open("w", encoding="utf-8") as sink:
        child = subprocess.Popen(list(command), cwd=cwd, env=dict(env), stdout=sink, stderr=subprocess.STDOUT)
        root = psutil.Process(child.pid)
        while child.poll() is None:
            try:
                tree = [root, *root.children(recursive=True)]
            except psutil.Error:
                tree = []
            for process in tree:
                try:
                    times = process.cpu_times()
                    seen[(process.pid, process.create_time())] = times.user + times.system
                except psutil.Error:
                    continue
            if time.perf_counter() - began > timeout:
                for process in reversed(tree):
                    with contextlib.suppress(psutil.Error):
                        process.kill()
                child.wait()
                break
            time.sleep(SAMPLE_SECONDS)
    return child.returncode, time.perf_counter() - began, sum(seen.values())


def event_log_conf(events: Path) -> dict[str, str]:
    """Spark's settings for an uncompressed event log of one application under ``events``."""
    return {"spark.eventLog.enabled": "true", "spark.eventLog.dir": events.resolve().as_uri(),
            "spark.eventLog.compress": "false", "spark.eventLog.rolling.enabled": "false"}


def measured_command(index: int, command: Sequence[str], events: Path, env: Mapping[str, str],
                     cwd: Path = PROJECT) -> PointFigures:
    """``command`` in a new process whose Spark writes its event log under ``events`` (``env``
    says so): the whole of what it cost (:func:`read_event_log`, and its process tree's CPU)."""
    events.mkdir(parents=True, exist_ok=True)
    output = events / "output.txt"
    returncode, wall, tree_cpu = tree_cpu_run(command, cwd, env, output)
    log = read_event_log(events)
    whole = log["whole"]
    text = output.read_text(encoding="utf-8", errors="replace")
    return PointFigures(index, returncode, wall, whole["cpu_seconds"], int(whole["records_read"]),
                        int(whole["bytes_read"]), int(whole["jobs"]), log["app_wall_seconds"], tree_cpu,
                        log["by_purpose"], text[-4000:])


def measured_process(index: int, args: Sequence[str], events: Path, spark_conf: Mapping[str, str] | None = None
                     ) -> PointFigures:
    """``python ARGS`` in a new process whose Spark writes its event log under ``events``: the
    whole of what it cost (:func:`measured_command`); the process's own report of its CPU
    (Python and the JVM, at exit) beside the sampled tree's."""
    events.mkdir(parents=True, exist_ok=True)
    report = events / "process.json"
    conf = {**event_log_conf(events), **(spark_conf or {})}
    flags = " ".join(f"--conf {k}={v}" for k, v in conf.items())
    env = dict(os.environ, PYSPARK_SUBMIT_ARGS=f"{flags} pyspark-shell", TEMPURA_PROCESS_REPORT=str(report))
    figures = measured_command(index, [sys.executable, *args], events, env)
    process = json.loads(report.read_text()) if report.exists() else {}
    figures.reported_cpu_seconds = (float(process.get("python_cpu_seconds", 0.0))
                                    + float(process.get("jvm_cpu_seconds", 0.0)))
    return figures


__all__ = ["ClockJob", "PointFigures", "event_log_conf", "measured_command", "measured_process", "read_event_log",
           "split_by_interval", "tree_cpu_run"]
