"""The job lock and the chain of manifests, without Spark: one writer per job folder, a dead
holder's lock taken over, a live one named in one line; a gap, a truncated or altered manifest,
or a broken link is damage."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tempura.runtime.lock import NAME, JobLock, LockHeld, force_unlock, read_holder
from tempura.runtime.store import Damage, JobStore


def write_lock(folder: Path, host: str, pid: int, heartbeat: float) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / NAME).write_text(json.dumps({"host": host, "pid": pid, "token": "theirs", "since": heartbeat,
                                           "heartbeat": heartbeat}))


def test_a_second_writer_stops_with_one_line_naming_the_holder(tmp_path: Path) -> None:
    first = JobLock(tmp_path)
    first.acquire()
    try:
        with pytest.raises(LockHeld) as raised:
            JobLock(tmp_path).acquire()
        message = str(raised.value)
        assert "\n" not in message
        assert f"pid {os.getpid()} on {socket.gethostname()}" in message and "--force-unlock" in message
    finally:
        first.release()
    assert not (tmp_path / NAME).exists()
    second = JobLock(tmp_path)
    second.acquire()  # free again
    second.release()


def test_the_lock_of_a_process_that_died_is_taken_over(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    write_lock(tmp_path, socket.gethostname(), dead.pid, time.time())
    lock = JobLock(tmp_path)
    lock.acquire()
    holder = read_holder(tmp_path / NAME)
    assert holder is not None and holder.pid == os.getpid() and holder.token == lock.token
    lock.release()


def test_another_hosts_lock_is_kept_while_its_heartbeat_is_fresh_and_taken_when_stale(tmp_path: Path) -> None:
    write_lock(tmp_path, "elsewhere", 1, time.time())
    with pytest.raises(LockHeld, match="on elsewhere"):
        JobLock(tmp_path, lease=60).acquire()
    write_lock(tmp_path, "elsewhere", 1, time.time() - 61)
    lock = JobLock(tmp_path, lease=60)
    lock.acquire()
    assert read_holder(tmp_path / NAME).token == lock.token  # type: ignore[union-attr]
    lock.release()


def test_a_waiting_run_takes_the_lock_when_the_holder_releases_it(tmp_path: Path) -> None:
    holder = JobLock(tmp_path)
    holder.acquire()
    threading.Timer(0.5, holder.release).start()
    waiter = JobLock(tmp_path)
    waiter.acquire(wait=10)
    assert read_holder(tmp_path / NAME).token == waiter.token  # type: ignore[union-attr]
    waiter.release()


def test_the_heartbeat_renews_the_lock(tmp_path: Path) -> None:
    lock = JobLock(tmp_path, heartbeat=0.1)
    lock.acquire()
    first = read_holder(tmp_path / NAME)
    time.sleep(0.5)
    later = read_holder(tmp_path / NAME)
    lock.release()
    assert first is not None and later is not None and later.heartbeat > first.heartbeat and later.token == first.token


def test_a_run_that_lost_its_lock_does_not_commit(tmp_path: Path) -> None:
    lock = JobLock(tmp_path)
    lock.acquire()
    lock.check()
    assert force_unlock(tmp_path) is not None
    other = JobLock(tmp_path)
    other.acquire()
    with pytest.raises(LockHeld, match="lost its lock"):
        lock.check()
    other.release()
    lock.release()  # not its lock any more: leaves nothing behind, raises nothing


def manifest(index: int) -> dict[str, object]:
    return {"spec": "j", "cycle": "c", "index": index, "states": [], "inventory": {}}


@pytest.fixture()
def chained(tmp_path: Path) -> JobStore:
    store = JobStore(tmp_path / "job")
    for i in (1, 2, 3):
        store.write_manifest("c", i, manifest(i))
    return store


def test_manifests_form_a_verified_chain(chained: JobStore) -> None:
    found = chained.chain("c")
    assert [m["index"] for m in found] == [1, 2, 3]
    assert found[0]["previous"] is None
    assert found[1]["previous"] == found[0]["checksum"] and found[2]["previous"] == found[1]["checksum"]
    assert chained.committed("c") == 3


def test_a_missing_manifest_before_a_committed_one_is_damage_not_a_point_to_redo(chained: JobStore) -> None:
    chained.manifest_path("c", 2).unlink()
    with pytest.raises(Damage, match=r"t002\.json is missing, but t3 is committed after it"):
        chained.committed("c")


def test_a_truncated_manifest_is_damage(chained: JobStore) -> None:
    path = chained.manifest_path("c", 2)
    path.write_text(path.read_text()[:40])
    with pytest.raises(Damage, match=r"t2: .*t002\.json is truncated"):
        chained.chain("c")


def test_an_altered_manifest_is_damage(chained: JobStore) -> None:
    path = chained.manifest_path("c", 3)
    data = json.loads(path.read_text())
    data["states"] = [{"id": "s", "folder": "s@t003"}]
    path.write_text(json.dumps(data))
    with pytest.raises(Damage, match="was altered"):
        chained.chain("c")


def test_a_manifest_committed_after_another_predecessor_breaks_the_link(chained: JobStore) -> None:
    other = JobStore(chained.root.parent / "other")
    other.write_manifest("c", 1, {**manifest(1), "states": [{"id": "x", "folder": "x@t001"}]})
    os.replace(other.manifest_path("c", 1), chained.manifest_path("c", 1))
    with pytest.raises(Damage, match="does not follow t1's manifest"):
        chained.chain("c")


def test_uncommitting_keeps_the_manifests_aside(chained: JobStore) -> None:
    assert chained.uncommit("c", 2) == [2, 3]
    assert chained.committed("c") == 1
    kept = sorted(p.name for p in (chained.cycle_dir("c") / "uncommitted").rglob("*.json"))
    assert kept == ["t002.json", "t003.json"]
