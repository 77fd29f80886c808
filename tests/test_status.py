"""The event log and ``tempura status``, on Spark, by the clock. Every attempt is one record: a
time point committed, nothing due (with the next point), a run refused by another's lock, a
run that failed on a damaged file (one line, and the spec's ``hooks.on_failure`` called with the
record). ``status`` says, per job, the last commit, the next point and the lag, the method, the
last failure and whether a commit came after it, and the lock's holder; ``history`` lists the
attempts."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tempura.cli import main
from tempura.errors import TempuraError
from tempura.runtime.lock import JobLock, LockHeld
from tempura.scheduler import load_spec
from tempura.scheduler.runner import Runner
from tempura.standing import StandingQuery

pytestmark = pytest.mark.spark

START = dt.datetime(2026, 11, 20)
HOOK = '''
import json, os
def failed(event):
    with open(os.environ["TEMPURA_TEST_FAILURES"], "a") as out:
        out.write(json.dumps(event) + "\\n")
'''


def arrive(spark: Any, folder: Path, index: int) -> None:
    """Interval ``index``'s sales, as a new file."""
    rows = [(f"c{i % 3}", i, START + dt.timedelta(hours=6 * (index - 1), minutes=3 * i + 1)) for i in range(100)]
    spark.createDataFrame(rows, "category STRING, price INT, sold_at TIMESTAMP").coalesce(1) \
        .write.mode("append").parquet(str(folder / "data" / "sales"))


@pytest.fixture
def job(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "hooks_for_status.py").write_text(HOOK)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TEMPURA_TEST_FAILURES", str(tmp_path / "failures.jsonl"))
    (tmp_path / "spec.yaml").write_text(
        "name: sales\nquery: SELECT category, SUM(price) AS revenue FROM sales GROUP BY category\n"
        "sources:\n  sales:\n    path: data/sales\n    arrival: {column: sold_at}\n"
        f"schedule:\n  start: '{START.isoformat()}'\n  every: 6h\n  points: 4\n  deliver: every\n"
        "hooks: {on_failure: hooks_for_status:failed}\n")
    arrive(spark, tmp_path, 1)
    return tmp_path


def run(spark: Any, folder: Path, hours: int) -> Any:
    return Runner(load_spec(folder / "spec.yaml"), spark, folder / "work").run_due(now=START + dt.timedelta(hours=hours))


def test_every_attempt_is_a_record_and_status_says_where_the_job_stands(spark: Any, job: Path) -> None:
    assert [r.index for r in run(spark, job, 6)] == [1]
    assert run(spark, job, 7) == []  # nothing due until t2
    damaged = job / "data" / "sales" / "part-99999-damaged.snappy.parquet"
    damaged.write_bytes(b"not a parquet file")
    with pytest.raises(TempuraError) as raised:
        run(spark, job, 12)
    assert "\n" not in str(raised.value)
    holder = JobLock(job / "work" / "jobs" / "sales")
    holder.acquire(0.0)
    try:
        with pytest.raises(LockHeld):
            run(spark, job, 12)
    finally:
        holder.release()

    query = StandingQuery(job / "spec.yaml", job / "work")
    events = query.history().events
    assert [e["outcome"] for e in events] == ["committed", "nothing due", "failed", "refused"]
    assert events[0]["time_index"] == 1 and events[0]["details"]["rows_landed"] == 100
    assert events[1]["message"] == "no time point is due; the next is at 2026-11-20 12:00:00"
    assert events[2]["time_index"] == 2 and events[2]["message"] == str(raised.value)
    assert events[2]["details"] == {"kind": "user"}
    assert "holds" in events[3]["message"] or "lock" in events[3]["message"]
    hooked = [json.loads(line) for line in (job / "failures.jsonl").read_text().splitlines()]
    assert [h["event_id"] for h in hooked] == [events[2]["event_id"]]

    status = query.status(now=START + dt.timedelta(hours=15))
    assert status.last is not None and status.last["index"] == 1 and status.method == "auto"
    assert status.next == {"cycle": "20261120T000000", "index": 2, "time": "2026-11-20 12:00:00", "due": True}
    assert status.lag_seconds == 3 * 3600
    assert status.last_failure is not None and status.last_failure["message"] == str(raised.value)
    assert not status.last_failure["recovered"] and status.lock is None and status.attempts == 4

    damaged.unlink()
    arrive(spark, job, 2)
    assert [r.index for r in run(spark, job, 12)] == [2]
    status = query.status(now=START + dt.timedelta(hours=13))
    assert status.last is not None and status.last["index"] == 2
    assert status.next is not None and status.next["index"] == 3 and not status.next["due"] and status.lag_seconds == 0
    assert status.last_failure is not None and status.last_failure["recovered"]


def test_the_status_and_history_commands(spark: Any, job: Path) -> None:
    run(spark, job, 6)
    shown = CliRunner().invoke(main, ["status", str(job / "spec.yaml"), "--workdir", str(job / "work")],
                               env={"COLUMNS": "300"})
    assert shown.exit_code == 0, shown.output
    # by the wall clock, a run considers the cycle under way (a day's four points, the latest whose
    # t1 has come) and the one before it: the next point due is that one's t1, hours behind
    now = dt.datetime.now()
    under_way = now.date() if now.time() >= dt.time(6) else now.date() - dt.timedelta(days=1)
    yesterday = dt.datetime.combine(under_way - dt.timedelta(days=1), dt.time(6))
    row = next(line for line in shown.output.splitlines() if "sales" in line and "t1" in line)
    assert "t1 (2026-11-20 06:00)" in row and "auto" in row and f"t1 ({yesterday:%Y-%m-%d %H:%M}) due" in row, row
    assert (" h │" in row or " d │" in row) and "free" in row  # the lag: hours or days, by the time of day
    data = json.loads(CliRunner().invoke(main, ["status", str(job / "spec.yaml"), "--workdir", str(job / "work"),
                                                "--format", "json"]).output)
    assert data["jobs"][0]["name"] == "sales" and data["jobs"][0]["last"]["index"] == 1
    assert data["jobs"][0]["next"]["time"] == str(yesterday) and data["jobs"][0]["lag_seconds"] > 18 * 3600
    history = CliRunner().invoke(main, ["history", str(job / "spec.yaml"), "--workdir", str(job / "work")],
                                 env={"COLUMNS": "300"})
    assert history.exit_code == 0 and "attempts (the last 1 of 1)" in history.output, history.output
    assert "t1 committed (auto)" in history.output


def test_a_second_run_is_refused_before_spark_starts(job: Path) -> None:
    """The lock is looked at before the run starts a Spark session: a second run stops at once,
    and the refusal is in the event log."""
    holder = JobLock(job / "work" / "jobs" / "sales")
    holder.acquire(0.0)
    try:
        query = StandingQuery(job / "spec.yaml", job / "work")
        with pytest.raises(LockHeld, match="is locked by another run"):
            query.run_due(now=START + dt.timedelta(hours=6))
        assert query._spark is None  # no session was started for it
    finally:
        holder.release()
    assert [e["outcome"] for e in StandingQuery(job / "spec.yaml", job / "work").history().events] == ["refused"]


def test_a_run_with_nothing_due_says_when_the_next_time_point_is(spark: Any, job: Path) -> None:
    run(spark, job, 6)
    shown = CliRunner().invoke(main, ["run", str(job / "spec.yaml"), "--workdir", str(job / "work"),
                                      "--now", "2026-11-20T07:00:00"])
    assert shown.exit_code == 0, shown.output
    assert shown.output.strip().splitlines()[-1] == "no time point is due; the next is t2 (2026-11-20 12:00)"
