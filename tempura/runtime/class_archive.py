"""The class-data archive of the driver JVM tempura starts: a JVM that starts in half the time.

A run by the clock is a new process per time point, and each starts a JVM that loads and
verifies the same 20,000-odd classes of Spark's jars before it does any work: seconds of wall
time and of CPU per run, more than a small interval's work. The JVM can map those classes from an
archive of its own instead (Java's AppCDS, dynamic archives: ``-XX:ArchiveClassesAtExit`` writes
one as the JVM exits, ``-XX:SharedArchiveFile`` maps it).

This module owns that archive. It lives in a per-user cache folder (``TEMPURA_CLASS_ARCHIVE``
names another; ``off`` turns it off), under a key of the Java runtime (its ``-version``) and
Spark's jars (names and sizes), so that another JDK or pyspark gets its own. The first JVM
started without one writes it as it exits, to a file of its own; the process that started it
waits for its JVM to exit and then moves the file into place atomically
(:func:`finish_archive`), so no JVM maps a half-written archive, and two processes creating one
at once each write their own and the last move wins. A file left by a process killed before
that is removed once it is an hour old. A JVM that cannot use an archive (another JVM build, a
damaged file) runs without it: the JVM checks, and its messages about it are turned off, since
they would go to standard output. The launch's own ``-Xshare`` or archive options win: tempura
then adds none.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

ENV = "TEMPURA_CLASS_ARCHIVE"
KEEP = 3  # archives kept in the folder (other JDKs or pyspark versions), the newest
STALE_SECONDS = 3600.0  # a part file this old was left by a process that did not finish it
QUIET = "-Xlog:cds*=off"
USER_OPTIONS = ("-Xshare", "SharedArchiveFile", "ArchiveClassesAtExit")


@dataclass(frozen=True)
class ArchivePlan:
    """The driver JVM's options for the archive, and, when this JVM writes it, the file it
    writes and where that goes once the JVM has exited."""

    options: str
    writing: Path | None = None
    final: Path | None = None


def java_binary() -> str | None:
    """The ``java`` Spark starts: ``JAVA_HOME``'s, else the one on the PATH."""
    java_home = os.environ.get("JAVA_HOME")
    return os.path.join(java_home, "bin", "java") if java_home else shutil.which("java")


def archive_folder(environ: dict[str, str] | None = None) -> Path | None:
    """Where the archives live: ``TEMPURA_CLASS_ARCHIVE``, else the user's cache folder; ``None``
    when turned off."""
    env = os.environ if environ is None else environ
    chosen = env.get(ENV, "")
    if chosen.lower() in ("off", "0", "false", "no"):
        return None
    if chosen:
        return Path(chosen)
    cache = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return cache / "tempura" / "class-archive"


@functools.cache
def java_version(java: str) -> str:
    """What ``java -version`` says (its standard error), asked once per process."""
    return subprocess.run([java, "-version"], capture_output=True, text=True, check=False).stderr


def archive_key(java: str, jars: Path) -> str:
    """A short hash of the Java runtime's version and of the jars' names and sizes."""
    version = java_version(java)
    digest = hashlib.sha256(version.encode())
    for jar in sorted(jars.glob("*.jar")):
        digest.update(f"{jar.name}:{jar.stat().st_size}\n".encode())
    return digest.hexdigest()[:16]


def plan_archive(folder: Path, key: str, user_options: str = "", pid: int | None = None) -> ArchivePlan:
    """The options for a JVM started now: map the archive of ``key`` if there is one, else write
    it (unless another process is writing it right now); none when ``user_options`` set their own."""
    if any(option in user_options for option in USER_OPTIONS):
        return ArchivePlan("")
    final = folder / f"{key}.jsa"
    if final.is_file():
        return ArchivePlan(f"-XX:SharedArchiveFile={final} {QUIET}")
    now = time.time()
    writers = False
    for part in folder.glob(f"{key}.*.part"):
        try:
            if now - part.stat().st_mtime > STALE_SECONDS:
                part.unlink()
            else:
                writers = True
        except FileNotFoundError:
            continue
    if writers:
        return ArchivePlan("")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return ArchivePlan("")
    if not os.access(folder, os.W_OK):
        return ArchivePlan("")
    writing = folder / f"{key}.{pid or os.getpid()}.part"
    writing.touch()  # others see it is being written
    return ArchivePlan(f"-XX:ArchiveClassesAtExit={writing} {QUIET}", writing, final)


def finish_archive(plan: ArchivePlan) -> bool:
    """After the JVM that wrote ``plan``'s archive has exited: move it into place (only if it
    was written), and keep the :data:`KEEP` newest archives. Whether one was moved."""
    if plan.writing is None or plan.final is None:
        return False
    try:
        if plan.writing.stat().st_size == 0:  # the JVM did not write it (it failed, or was killed)
            plan.writing.unlink()
            return False
        os.replace(plan.writing, plan.final)
    except FileNotFoundError:
        return False
    archives = sorted(plan.final.parent.glob("*.jsa"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in archives[KEEP:]:
        try:
            old.unlink()
        except FileNotFoundError:
            pass
    return True

