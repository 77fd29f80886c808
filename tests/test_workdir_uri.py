"""A workdir at a URI, on Spark: given as a ``file://`` URI, every file of the job folder goes
through Hadoop's ``FileSystem`` (:class:`~tempura.runtime.storage.HadoopStorage`), the one way to
reach HDFS or an object store, tested here on the only file system the tests have. The job
delivers what it delivers with a plain local workdir; its manifests, lock, plans, statistics and
history (JSON documents) are under the URI's folder and nowhere else; ``tempura history`` and
``tempura check`` read it; the lock through Hadoop refuses a second taker in one line and takes a
stale one over; a URI workdir on another mount than the sources and the output keeps working.
Where renames and creates are atomic is Hadoop's contract (``docs/runtime.md``): not tested
here, as no other file system is."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner

from tempura.cli import main
from tempura.runtime.lock import NAME, JobLock, LockHeld, read_holder
from tempura.runtime.storage import HadoopStorage, Uri, location
from tempura.scheduler import load_spec
from tempura.scheduler.planning import job_folder

from test_bad_sources import ROWS, add_file, write_spec

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("fast_spark")]

QUERY = "SELECT category, SUM(price) AS total FROM sales GROUP BY category"
NOW = "2026-01-01T13:00:00"  # both time points due


def cli(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def delivered(spark: Any, workdir: Path) -> dict[int, list[tuple[Any, ...]]]:
    """Each committed time point's delivery, read back from where its manifest says."""
    out = {}
    for manifest in sorted(workdir.rglob("cycles/*/t[0-9][0-9][0-9].json")):
        data = json.loads(manifest.read_text())
        out[data["index"]] = sorted(tuple(r) for r in spark.read.parquet(data["delivered"]).collect())
    return out


@pytest.fixture()
def job(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The small job's spec and source; the working folder is ``tmp_path`` (where a URI read as
    a relative path would make a folder ``file:``)."""
    add_file(spark, tmp_path / "data" / "sales", "a.parquet", ROWS)
    spec = write_spec(tmp_path, QUERY)
    monkeypatch.chdir(tmp_path)
    yield spec


def test_a_file_uri_workdir_goes_through_hadoop_and_keeps_the_job_there(spark: Any, job: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    ran = cli("run", str(job), "--now", NOW, "--workdir", work.as_uri())
    assert ran.exit_code == 0, ran.output
    plain = cli("run", str(job), "--now", NOW, "--workdir", str(tmp_path / "plain"))
    assert plain.exit_code == 0, plain.output
    results = delivered(spark, work)
    assert results == delivered(spark, tmp_path / "plain") and sorted(results) == [1, 2], results
    assert results[2] == [("a", 5), ("b", 2)]

    folder = job_folder(work, load_spec(job))
    assert isinstance(folder, Path)
    label = next((folder / "cycles").iterdir()).name
    assert sorted(p.name for p in (folder / "cycles" / label).glob("t*.json")) == ["t001.json", "t002.json"]
    assert sorted(p.name for p in (folder / "history" / "runs" / label).iterdir()) == ["t001.json", "t002.json"]
    assert list((folder / "history" / "plans").glob("*.json"))
    assert (folder / "stats" / "sales.json").is_file() and (folder / "cycles" / label / "plans" / "t002.plan.json").is_file()
    assert not (folder / "history.sqlite").exists() and not (folder / NAME).exists()
    assert not list(folder.rglob("*.json.crc")), "Hadoop's checksummed local file system wrote side files"
    assert not [p for p in tmp_path.rglob("*") if "file:" in p.name], "a folder named after the URI was made"

    history = cli("history", str(job), "--workdir", work.as_uri(), "--fragments", "--format", "json")
    assert history.exit_code == 0, history.output
    data = json.loads(history.output)
    local = json.loads(cli("history", str(job), "--workdir", str(tmp_path / "plain"), "--format", "json").output)
    assert [(r["cycle"], r["time_index"], r["rows_landed"]) for r in data["runs"]] == \
        [(r["cycle"], r["time_index"], r["rows_landed"]) for r in local["runs"]] == [(label, 1, 1), (label, 2, 2)]
    assert data["fragments"] and data["runs"][0]["reason"], data  # t1's re-planning, recorded afterwards

    clean = cli("check", str(job), "--workdir", work.as_uri())
    assert clean.exit_code == 0, clean.output
    first = next((folder / "cycles" / label / "landing" / "sales" / "i=001").glob("part-*"))
    data = first.read_bytes()
    first.write_bytes(data[:-8] + b"\0" * 8)  # the same size, its footer gone: found by Spark's read
    unreadable = cli("check", str(job), "--workdir", work.as_uri())
    assert unreadable.exit_code == 1 and "cannot be read" in unreadable.output, unreadable.output
    assert "\tat " not in unreadable.output and "Traceback" not in unreadable.output, unreadable.output
    first.write_bytes(data)
    landed = next((folder / "cycles" / label / "landing" / "sales" / "i=002").glob("part-*"))
    landed.unlink()
    (folder / "cycles" / label / "t001.json").unlink()
    damaged = cli("check", str(job), "--workdir", work.as_uri())
    assert damaged.exit_code == 1, damaged.output
    assert "t001.json is missing" in damaged.output and landed.name in damaged.output, damaged.output


def test_the_lock_through_hadoop_refuses_a_second_taker_and_takes_a_stale_one_over(spark: Any, tmp_path: Path) -> None:
    storage = HadoopStorage(spark)
    folder = Uri(tmp_path.as_uri()) / "job"
    first = JobLock(folder, storage=storage, heartbeat=0.1)
    first.acquire()
    try:
        beat = read_holder(folder / NAME, storage)
        with pytest.raises(LockHeld) as raised:
            JobLock(folder, storage=storage).acquire()
        assert "\n" not in str(raised.value) and f"pid {os.getpid()} on {socket.gethostname()}" in str(raised.value)
        time.sleep(0.5)
        later = read_holder(folder / NAME, storage)
        assert beat is not None and later is not None and later.token == beat.token and later.heartbeat > beat.heartbeat
        first.check()
    finally:
        first.release()
    assert not (tmp_path / "job" / NAME).exists()

    old = time.time() - 61
    (tmp_path / "job" / NAME).write_text(json.dumps({"host": "elsewhere", "pid": 1, "token": "theirs", "since": old,
                                                     "heartbeat": old}))
    taker = JobLock(folder, lease=60, storage=storage)
    taker.acquire()
    holder = read_holder(folder / NAME, storage)
    assert holder is not None and holder.token == taker.token
    taker.release()
    assert sorted(p.name for p in (tmp_path / "job").iterdir()) == [], "the stale lock or a temporary file was left"


def test_a_uri_workdir_on_another_mount_than_the_sources_and_the_output(spark: Any, job: Path, tmp_path: Path) -> None:
    """The workdir on a memory file system where the machine has one: each delivery is moved
    from the workdir's pending folder to the output across the mounts, through Hadoop."""
    elsewhere = Path("/dev/shm")
    if not (elsewhere.is_dir() and os.access(elsewhere, os.W_OK) and elsewhere.stat().st_dev != tmp_path.stat().st_dev):
        pytest.skip("no writable file system on another mount than the temporary folder")
    job.write_text(job.read_text() + "output: {path: out/totals}\n")
    work = Path(tempfile.mkdtemp(prefix="tempura-workdir-", dir=elsewhere))
    try:
        ran = cli("run", str(job), "--now", NOW, "--workdir", work.as_uri())
        assert ran.exit_code == 0, ran.output
        assert sorted(tuple(r) for r in spark.read.parquet(str(tmp_path / "out" / "totals")).collect()) == [("a", 5), ("b", 2)]
        assert len(list(work.rglob("cycles/*/t[0-9][0-9][0-9].json"))) == 2
        checked = cli("check", str(job), "--workdir", work.as_uri())
        assert checked.exit_code == 0, checked.output
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_workdir_locations() -> None:
    assert location("file:///srv/work/") == Uri("file:///srv/work")
    assert str(Uri("hdfs://nn:8020/w") / "jobs" / "a") == "hdfs://nn:8020/w/jobs/a"
    assert (Uri("s3a://bucket/w") / "jobs").parent == Uri("s3a://bucket/w") and Uri("s3a://b/w/x.json").name == "x.json"
    assert location("a:b") == Path("a:b").absolute()  # a folder with a colon in its name
    assert Uri("file:///srv/w").local_path() == Path("/srv/w") and Uri("hdfs://nn/w").local_path() is None
    with pytest.raises(Exception, match="not host 'elsewhere'"):
        location("file://elsewhere/srv/work")
