"""``tempura run --daemon`` in a subprocess, by the wall clock: it prints the line of each time
point it commits, as ``run`` does; on SIGTERM it stops in one line, with no stack trace, and
leaves no lock; a SIGTERM while a time point runs lets that point finish and commit, and starts
no other."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark


def job(spark: Any, folder: Path) -> tuple[Path, dt.datetime]:
    """A schedule of 6-hour points whose first two are due now and the third hours away; sales
    over the first two intervals."""
    start = dt.datetime.now().replace(microsecond=0) - dt.timedelta(hours=12, minutes=2)
    rows = [(f"c{i % 3}", i, start + dt.timedelta(minutes=5 + i)) for i in range(600)]
    spark.createDataFrame(rows, "category STRING, price INT, sold_at TIMESTAMP").coalesce(1) \
        .write.parquet(str(folder / "data" / "sales"))
    (folder / "spec.yaml").write_text(
        "name: nightly\nquery: SELECT category, SUM(price) AS revenue FROM sales GROUP BY category\n"
        "sources:\n  sales:\n    path: data/sales\n    arrival: {column: sold_at}\n"
        f"schedule:\n  start: '{start.isoformat()}'\n  every: 6h\n  points: 4\n  deliver: every\n")
    return folder / "spec.yaml", start


def daemon(spec: Path, work: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "tempura", "run", "--daemon", str(spec), "--workdir", str(work)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=spec.parent,
                            env=dict(os.environ, COLUMNS="200"))


def manifests(work: Path) -> list[Path]:
    return sorted(work.glob("jobs/nightly/cycles/*/t*.json"))


def wait_for(test: Any, seconds: float, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + seconds
    while not test():
        if process.poll() is not None:
            raise AssertionError(f"the daemon ended early: {process.communicate()}")
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def test_the_daemon_prints_each_commit_and_stops_on_sigterm_in_one_line(spark: Any, tmp_path: Path) -> None:
    spec, _ = job(spark, tmp_path)
    work = tmp_path / "work"
    process = daemon(spec, work)
    wait_for(lambda: len(manifests(work)) == 2 and not (work / "jobs" / "nightly" / ".lock").exists(), 240, process)
    time.sleep(1.0)  # asleep until t3, hours away
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, (out, err)
    lines = out.splitlines()
    assert [line.split(" (")[0].split(", ", 1)[1] for line in lines[:2]] == ["t1", "t2"], out
    assert all(line.startswith("cycle of ") for line in lines[:2]), out
    assert all(": auto, " in line and "rows landed" in line for line in lines[:2]), out
    assert lines[2:] == ["stopped by SIGTERM: every time point taken was committed"], out
    assert "Traceback" not in err and "Exception" not in err and "ERROR" not in err, err
    assert not (work / "jobs" / "nightly" / ".lock").exists()


def test_a_sigterm_while_a_time_point_runs_lets_it_commit_and_starts_no_other(spark: Any, tmp_path: Path) -> None:
    spec, _ = job(spark, tmp_path)
    work = tmp_path / "work"
    process = daemon(spec, work)
    wait_for(lambda: (work / "jobs" / "nightly" / ".lock").exists(), 120, process)  # t1 is under way
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=240)
    assert process.returncode == 0, (out, err)
    assert [m.name for m in manifests(work)] == ["t001.json"], out
    assert json.loads(manifests(work)[0].read_text())["index"] == 1
    assert out.splitlines()[-1] == "stopped by SIGTERM: every time point taken was committed", out
    assert "Traceback" not in err, err
    assert not (work / "jobs" / "nightly" / ".lock").exists()
