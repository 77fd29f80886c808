"""The driver JVM's class-data archive: which options a JVM started now gets (map the archive,
write it, or neither), moving a written archive into place, and — on a real JVM, in
subprocesses — a first process writing it as it exits and the next one mapping it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tempura.runtime.class_archive import KEEP, STALE_SECONDS, ArchivePlan, finish_archive, plan_archive


def test_a_jvm_maps_the_archive_there_is_and_writes_it_when_there_is_none(tmp_path: Path) -> None:
    first = plan_archive(tmp_path, "k1", pid=11)
    assert first.writing == tmp_path / "k1.11.part" and first.final == tmp_path / "k1.jsa"
    assert first.options.startswith(f"-XX:ArchiveClassesAtExit={first.writing} ") and "-Xlog:cds*=off" in first.options
    assert first.writing.exists()  # the others see it is being written ...
    assert plan_archive(tmp_path, "k1", pid=12).options == ""  # ... and run without meanwhile
    first.writing.write_bytes(b"archive")
    assert finish_archive(first) and not first.writing.exists()
    mapped = plan_archive(tmp_path, "k1", pid=13)
    assert mapped.options == f"-XX:SharedArchiveFile={tmp_path / 'k1.jsa'} -Xlog:cds*=off" and mapped.writing is None
    assert plan_archive(tmp_path, "k2", pid=14).writing == tmp_path / "k2.14.part"  # another JDK or Spark: its own


def test_the_launchs_own_archive_options_win(tmp_path: Path) -> None:
    for options in ("-Xshare:off", "-XX:SharedArchiveFile=/x.jsa", "-XX:ArchiveClassesAtExit=/y.jsa"):
        assert plan_archive(tmp_path, "k", f"-Da=1 {options}") == ArchivePlan("")
    assert not list(tmp_path.iterdir())


def test_a_part_left_by_a_killed_process_is_removed_when_stale_and_an_empty_one_never_moved(tmp_path: Path) -> None:
    left = tmp_path / "k.99.part"
    left.write_bytes(b"half an archive")
    old = time.time() - STALE_SECONDS - 10
    os.utime(left, (old, old))
    plan = plan_archive(tmp_path, "k", pid=5)
    assert not left.exists() and plan.writing == tmp_path / "k.5.part"
    assert not finish_archive(plan)  # the JVM wrote nothing: no archive, and the part is gone
    assert not (tmp_path / "k.jsa").exists() and not plan.writing.exists()


def test_only_the_newest_archives_are_kept(tmp_path: Path) -> None:
    for n in range(KEEP + 2):
        archive = tmp_path / f"old{n}.jsa"
        archive.write_bytes(b"a")
        os.utime(archive, (1000.0 + n, 1000.0 + n))
    plan = plan_archive(tmp_path, "new", pid=1)
    assert plan.writing is not None
    plan.writing.write_bytes(b"archive")
    assert finish_archive(plan)
    kept = {p.name for p in tmp_path.glob("*.jsa")}
    assert kept == {"new.jsa", *(f"old{n}.jsa" for n in range(KEEP + 2 - (KEEP - 1), KEEP + 2))}


SESSION = """
from tempura.runtime import get_spark
spark = get_spark(master="local[1]")
assert spark.range(10).selectExpr("sum(id)").collect()[0][0] == 45
print("options:", spark.sparkContext.getConf().get("spark.driver.extraJavaOptions"))
"""


@pytest.mark.spark
def test_the_first_process_writes_the_archive_as_it_exits_and_the_next_maps_it(tmp_path: Path) -> None:
    env = {**os.environ, "TEMPURA_CLASS_ARCHIVE": str(tmp_path)}
    first = subprocess.run([sys.executable, "-c", SESSION], env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "ArchiveClassesAtExit" in first.stdout
    archives = list(tmp_path.glob("*.jsa"))
    assert len(archives) == 1 and archives[0].stat().st_size > 1_000_000 and not list(tmp_path.glob("*.part"))
    second = subprocess.run([sys.executable, "-c", SESSION], env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-2000:]
    assert f"-XX:SharedArchiveFile={archives[0]}" in second.stdout
    assert "[cds" not in second.stdout and "cds]" not in second.stdout  # the JVM says nothing of it
