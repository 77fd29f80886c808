"""One writer per job folder: a lock file with a lease that a crashed holder cannot keep.

A run that writes a job folder (``tempura run``, ``--simulate``, ``tempura repair``) first takes
its lock, ``<job>/.lock``: a JSON file naming the holder (host, pid, a random token, when it took
the lock) and its heartbeat. The file is created only if no lock exists
(:meth:`~tempura.runtime.storage.Storage.create_exclusive`: on a local disk written complete
under a temporary name and linked into place with ``os.link``; on HDFS Hadoop's
``create(path, overwrite=false)``, atomic at the name node; on an object store as atomic as its
connector makes a create without overwrite). While it runs, a thread renews the heartbeat every
:data:`HEARTBEAT` seconds, rewriting the file under a temporary name and renaming it over the
lock. The job folder may be on any file system its :class:`~tempura.runtime.storage.Storage`
reaches.

A lock is *stale*, and the next run takes it over, when its holder is gone: on the same host, the
holder's pid no longer runs; on any host, the heartbeat is older than the lease
(:data:`LEASE`). A run that finds a live lock waits up to ``wait`` seconds, or stops with
:class:`LockHeld`, one line naming the holder. ``tempura run --force-unlock`` removes a lock an
operator knows to be dead (with a warning: two writers at once can commit a wrong result).

Before anything is put in place — a landed interval, a state, a delivery, the manifest —
:meth:`JobLock.check` makes sure the lock is still this run's (a run paused past its lease may
have lost it): only the holder changes what others read.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from tempura.errors import TempuraError
from tempura.runtime.storage import Location, Storage, storage_for

LEASE = 120.0  # seconds without a heartbeat after which a lock is stale
HEARTBEAT = 10.0  # seconds between heartbeats
NAME = ".lock"


class LockHeld(TempuraError):
    """Another run holds the job folder's lock (or took it over from this one)."""


@dataclass(frozen=True)
class Holder:
    """Who holds a lock, as its file says."""

    host: str
    pid: int
    token: str
    since: float
    heartbeat: float

    def describe(self, now: float | None = None) -> str:
        age = (now or time.time()) - self.heartbeat
        since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(self.since))
        return f"pid {self.pid} on {self.host} since {since} (heartbeat {age:.0f}s ago)"

    def to_json(self) -> dict[str, Any]:
        return {"host": self.host, "pid": self.pid, "token": self.token, "since": self.since, "heartbeat": self.heartbeat}


def read_holder(path: Location, storage: Storage | None = None) -> Holder | None:
    """The holder a lock file names; ``None`` if there is no lock (or it is unreadable: a lock is
    put in place complete, so an unreadable one was damaged, or is being written where a create
    is not atomic, and is judged by its age)."""
    storage = storage or storage_for(path)
    try:
        text = storage.read_text(path)
        if text is None:
            return None
        data = json.loads(text)
        return Holder(str(data["host"]), int(data["pid"]), str(data["token"]), float(data["since"]),
                      float(data["heartbeat"]))
    except (OSError, ValueError, KeyError, TypeError):
        age = storage.modified(path)
        if age is None:
            return None
        return Holder("?", -1, "", age, age)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stale(holder: Holder, lease: float, now: float | None = None) -> bool:
    """Whether ``holder`` is gone: its process has ended (same host), or its heartbeat is older
    than ``lease``."""
    if holder.host == socket.gethostname() and holder.pid > 0 and not _alive(holder.pid):
        return True
    return (now or time.time()) - holder.heartbeat > lease


class JobLock:
    """The lock of one job folder, held by this process while a run writes it."""

    def __init__(self, folder: Location, lease: float = LEASE, heartbeat: float = HEARTBEAT,
                 storage: Storage | None = None) -> None:
        self.folder = folder
        self.path = self.folder / NAME
        self.storage = storage or storage_for(folder)
        self.lease = lease
        self.heartbeat = heartbeat
        self.token = ""
        self._depth = 0
        self._since = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def held(self) -> bool:
        return self._depth > 0

    def acquire(self, wait: float = 0.0, sleep: Callable[[float], None] = time.sleep) -> None:
        """Take the lock (re-entrant): at once if it is free or stale, else after the holder
        releases it within ``wait`` seconds; else raise :class:`LockHeld`."""
        if self._depth:
            self._depth += 1
            return
        self.storage.mkdirs(self.folder)
        deadline = time.time() + wait
        while True:
            if self._try_take():
                self._depth = 1
                self._start_heartbeat()
                return
            holder = read_holder(self.path, self.storage)
            if holder is None:
                continue  # released meanwhile: try again
            if stale(holder, self.lease):
                self._break(holder)
                continue
            if time.time() >= deadline:
                raise LockHeld(self._held_by(holder))
            sleep(min(1.0, max(0.05, deadline - time.time())))

    def refuse_if_held(self) -> None:
        """Raise :class:`LockHeld` at once if a live run holds the lock (a check before a run
        starts Spark, so that a second run says so in a second, not after a JVM's start; the
        lock itself is still taken by :meth:`acquire`)."""
        holder = read_holder(self.path, self.storage)
        if holder is not None and holder.token != self.token and not stale(holder, self.lease):
            raise LockHeld(self._held_by(holder))

    def _held_by(self, holder: Holder) -> str:
        return (f"{self.folder} is locked by another run: {holder.describe()}; wait for it (--wait SECONDS), or if "
                "that run is dead, remove the lock with --force-unlock")

    def release(self) -> None:
        """Release one level of the lock; the last release removes the lock file if it is still
        this run's."""
        if not self._depth:
            return
        self._depth -= 1
        if self._depth:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        holder = read_holder(self.path, self.storage)
        if holder is not None and holder.token == self.token:
            self.storage.delete(self.path)

    def check(self) -> None:
        """Raise :class:`LockHeld` unless this run still holds the lock (the fence before a
        commit)."""
        holder = read_holder(self.path, self.storage)
        if holder is None or holder.token != self.token:
            who = holder.describe() if holder is not None else "nobody (the lock file was removed)"
            raise LockHeld(f"{self.folder}: this run lost its lock to {who}; nothing more is committed")

    def __enter__(self) -> JobLock:
        self.acquire()
        return self

    def __exit__(self, *_: object) -> None:
        self.release()

    # -- inside ---------------------------------------------------------------------------------

    def _text(self, now: float) -> str:
        return json.dumps(Holder(socket.gethostname(), os.getpid(), self.token, self._since, now).to_json())

    def _try_take(self) -> bool:
        self.token = secrets.token_hex(8)
        self._since = time.time()
        return self.storage.create_exclusive(self.path, self._text(self._since))  # fails if a lock exists

    def _break(self, holder: Holder) -> None:
        """Take a stale lock out of the way: renamed aside, and put back if another run took it
        over in between."""
        aside = self.folder / f"{NAME}.stale-{secrets.token_hex(4)}"
        try:
            self.storage.move(self.path, aside)
        except OSError:
            if self.storage.exists(self.path):
                raise
            return  # gone meanwhile
        moved = read_holder(aside, self.storage)
        if moved is not None and moved.token != holder.token:
            text = self.storage.read_text(aside)
            if text is not None:
                self.storage.create_exclusive(self.path, text)  # a live lock taken meanwhile: restore it
        self.storage.delete(aside)

    def _start_heartbeat(self) -> None:
        self._stop = threading.Event()

        def beat() -> None:
            while not self._stop.wait(self.heartbeat):
                holder = read_holder(self.path, self.storage)
                if holder is None or holder.token != self.token:
                    return  # lost: check() says so before the next commit
                self.storage.write_atomically(self.path, self._text(time.time()))

        self._thread = threading.Thread(target=beat, name="tempura-lock-heartbeat", daemon=True)
        self._thread.start()


def force_unlock(folder: Location, storage: Storage | None = None) -> Holder | None:
    """Remove the lock of ``folder`` whoever holds it; returns the holder it named."""
    path = folder / NAME
    storage = storage or storage_for(path)
    holder = read_holder(path, storage)
    storage.delete(path)
    return holder


__all__ = ["HEARTBEAT", "LEASE", "Holder", "JobLock", "LockHeld", "force_unlock", "read_holder", "stale"]
