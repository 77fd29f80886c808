"""Checking a job's folder: what ``tempura check`` reports and what ``tempura repair`` rebuilds.

A job folder is intact when, in every cycle, the manifests form one chain (no gap, each parses,
each checksum matches its content, each links to the one before), the newest manifest's
inventory is on disk as listed (every file, its size, and — read from parquet footers — the rows
of states and landed intervals), and the newest delivery is where its manifest says, file for
file. :func:`check_job` lists every problem found without stopping at the first; nothing here
needs Spark for a job folder on a local path, so ``tempura check`` answers at once. A job folder
at a URI is read through Hadoop's file system, and the rows of its parquet folders counted by
Spark (:class:`~tempura.runtime.storage.HadoopStorage`).

:func:`last_intact` is where a repair starts from: the latest time point whose manifest is
sound, linked, and whose inventory is intact. States an older time point listed may have been
dropped after their last read by a later one, so a repair may have to start further back than
the damage; the repair runs every time point from there again from the sources.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from tempura.runtime.lock import LEASE, read_holder, stale
from tempura.runtime.lock import NAME as LOCK_NAME
from tempura.runtime.storage import LOCAL, HadoopStorage, Location, Storage, Uri, is_uri
from tempura.runtime.store import Damage, JobStore, inventory, listed_problems
from tempura.tvr.time import cycle_words, time_point_words


@dataclass
class CycleReport:
    """One cycle of a job folder as checked."""

    label: str
    committed: int  # manifests on disk
    intact: int  # the last intact time point (a repair starts after it)
    problems: list[str] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)  # an attempt's .pending/ (cleaned by the next run)
    passed: list[str] = field(default_factory=list)  # why the sound manifests after ``intact`` are not resume points
    times: dict[int, str] = field(default_factory=dict)  # the time point of each readable manifest, by index


@dataclass
class JobReport:
    """A whole job folder as checked."""

    folder: Location
    cycles: list[CycleReport] = field(default_factory=list)
    lock: str | None = None  # who holds the lock, if anyone

    @property
    def damaged(self) -> list[CycleReport]:
        return [c for c in self.cycles if c.problems]


def _chain_prefix(store: JobStore, label: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The sound prefix of a cycle's manifests and the problems after it."""
    sound: list[dict[str, Any]] = []
    problems: list[str] = []
    for expected, index in enumerate(store.manifest_indices(label), 1):
        if index != expected:
            problems.append(f"{cycle_words(label)}: {store.manifest_path(label, expected)} is missing, but t{index} "
                            f"is committed after it")
            break
        try:
            data = store.manifest(label, index)
        except Damage as error:
            problems.append(str(error))
            break
        assert data is not None
        if sound and "previous" in data and data["previous"] != sound[-1].get("checksum"):
            problems.append(f"{cycle_words(label)}, {time_point_words(index, data.get('time'))}: "
                            f"{store.manifest_path(label, index)} does not follow t{index - 1}'s manifest")
            break
        sound.append(data)
    return sound, problems


def _readable(store: JobStore, label: str) -> list[dict[str, Any]]:
    """The cycle's manifests that parse and match their checksums, gaps or not."""
    out = []
    for index in store.manifest_indices(label):
        try:
            data = store.manifest(label, index)
        except Damage:
            continue
        if data is not None:
            out.append(data)
    return out


def _delivery_problems(label: str, manifest: Mapping[str, Any], storage: Storage) -> list[str]:
    """Whether a delivery is where its manifest lists it: a local one (or a ``file:`` URI's)
    always; another URI's when the job folder's ``storage`` is Hadoop's (else not checked)."""
    delivery = manifest.get("delivery")
    if not delivery:
        return []
    path = str(delivery["path"])
    folder: Location
    if not is_uri(path):
        folder, storage = Path(path), LOCAL
    elif (local := Uri(path).local_path()) is not None:
        folder, storage = local, LOCAL
    elif isinstance(storage, HadoopStorage):
        folder = Uri(path)
    else:
        return []
    where = f"{cycle_words(label)}, {time_point_words(int(manifest.get('index') or 0), manifest.get('time'))}: the delivery {folder}"
    if not storage.is_dir(folder):
        return [f"{where} is missing"]
    return listed_problems(folder, delivery.get("files", {}), lambda name: f"{where}: {name}", storage)


def last_intact(store: JobStore, label: str) -> int:
    """The latest time point of cycle ``label`` whose manifest chain is sound up to it and whose
    inventory is intact on disk (0: none, so a repair reruns the cycle from its start)."""
    return resume_point(store, label)[0]


def resume_point(store: JobStore, label: str) -> tuple[int, list[str]]:
    """:func:`last_intact`, and why each later sound manifest is not a point to resume from: a
    file it lists is gone (a state it kept, dropped once the time points after it had read it,
    cannot be read again)."""
    sound, _ = _chain_prefix(store, label)
    passed: list[str] = []
    for data in reversed(sound):
        problems = store.verify(label, data, deep=True)
        if not problems and data is sound[-1]:
            problems = _delivery_problems(label, data, store.storage)
        if not problems:
            return int(data["index"]), passed[::-1]
        why = problems[0].split(": ", 1)[-1]
        if "/states/" in why:
            why += " (a state is dropped once the time points after it have read it)"
        passed.append(f"the manifest of {time_point_words(int(data['index']), data.get('time'))} is intact, but {why}, so no time point can run on from it")
    return 0, passed[::-1]


def check_cycle(store: JobStore, label: str) -> CycleReport:
    """Every problem of one cycle (see the module's docstring)."""
    sound, problems = _chain_prefix(store, label)
    readable = _readable(store, label)  # past a break in the chain too: what later time points left
    if readable:  # states and checkpoints older manifests list are dropped after their last read
        problems += store.verify(label, readable[-1], deep=True)
        newest = next((m for m in reversed(readable) if m.get("delivery")), None)
        if newest is not None:
            problems += _delivery_problems(label, newest, store.storage)
    pending = store.pending(label)
    leftovers = [str(pending)] if store.storage.exists(pending) and inventory(pending, store.storage) else []
    intact, passed = resume_point(store, label) if problems else (len(sound), [])
    times = {int(m["index"]): str(m.get("time")) for m in readable if "index" in m}
    return CycleReport(label, len(store.manifest_indices(label)), intact, problems, leftovers, passed, times)


def check_job(store: JobStore) -> JobReport:
    """Every cycle of the job folder, checked; and who holds its lock."""
    report = JobReport(store.root)
    for label in store.cycles():
        report.cycles.append(check_cycle(store, label))
    holder = read_holder(store.root / LOCK_NAME, store.storage)
    if holder is not None:
        report.lock = holder.describe() + (" — stale: the next run takes it over" if stale(holder, LEASE) else "")
    return report


__all__ = ["CycleReport", "JobReport", "check_cycle", "check_job", "last_intact", "resume_point"]
