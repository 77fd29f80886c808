"""The durable folders of a standing query, and the commit of a time point.

A job's folder under the workdir (``<workdir>/jobs/<name>/``) holds, per cycle
(``cycles/<label>/``):

- ``landing/<source>/i=NNN/``: the rows of source interval ``NNN`` as tempura ingested them (the
  folder that streaming fragments read with Spark's file source);
- ``states/<state>@tNNN/``: one parquet folder per state version, saved at time point ``NNN``;
- ``checkpoints/<stream>@tNNN/``: a streaming query's checkpoint as of time point ``NNN``;
- ``tNNN.json``: the time point's **manifest**, written last;
- ``.pending/``: temporary folders of the attempt under way.

Every folder is written under ``.pending/`` and renamed into place when complete. A time point is
committed when its manifest exists; folders tagged with a time point that has no manifest are
leftovers of an attempt that died, and :meth:`JobStore.discard_uncommitted` deletes them before
the time point is redone from scratch — never a folder a committed manifest lists. The manifest
is written to a temporary file and renamed, so it is either complete or absent.

**Committed means verified.** A manifest carries the SHA-256 of its own content (``checksum``),
the checksum of the manifest before it (``previous``: the manifests of a cycle are one chain), and
the *inventory* of every folder a later time point may read (the landed intervals, the states
alive, the latest checkpoint of each stream), each with its files' sizes and its rows; the
delivery is listed likewise. :meth:`JobStore.chain` reads a cycle's manifests as one chain: a
missing manifest before a committed one, a truncated or altered manifest, or a broken link is
:class:`Damage`, named with the time point and the file. :meth:`JobStore.verify` checks an
inventory's files before they are read. The run history lives beside the cycles
(:mod:`tempura.scheduler.history`).

The job folder may be on any file system: its small files (manifests, plans) go through the
:class:`~tempura.runtime.storage.Storage` of its location (the local file system for a path,
Hadoop's ``FileSystem`` for a URI), the folders Spark writes through :class:`Files`.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from typing import Any, Callable, Iterable, Mapping

from tempura.errors import TempuraError
from tempura.runtime.files import Files, uri
from tempura.runtime.storage import Location, Storage, Uri, as_location, storage_for
from tempura.tvr.time import cycle_words, time_point_words

_TAG = re.compile(r".*@t(\d+)$")
_INTERVAL = re.compile(r"i=(\d+)$")
_MANIFEST = re.compile(r"t(\d{3,})\.json$")
UNCOMMITTED = "uncommitted"  # cycles/<label>/uncommitted/<stamp>/: manifests a repair took back


class Damage(TempuraError):
    """A committed time point's manifest or one of the files it lists is missing or damaged."""


def checksum(data: Mapping[str, Any]) -> str:
    """The SHA-256 of a manifest's content (every key but ``checksum``), as JSON with sorted keys."""
    content = {k: v for k, v in data.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def inventory(folder: Location, storage: Storage | None = None) -> dict[str, int]:
    """The data files under a folder, by path relative to it, with their sizes. Hidden files
    (``.``, ``_``: checksums and markers) are left out, as Spark's readers leave them out."""
    return (storage or storage_for(folder)).files(folder)


def listed_problems(folder: Location, listed: Mapping[str, int], describe: Callable[[str], str],
                    storage: Storage | None = None) -> list[str]:
    """One message per file of ``listed`` (name: size) missing under ``folder`` or of another
    size; ``describe(name)`` names the file in the message."""
    found = inventory(folder, storage)
    out = []
    for name, size in sorted(dict(listed).items()):
        if name not in found:
            out.append(f"{describe(name)} is missing")
        elif found[name] != size:
            out.append(f"{describe(name)} has {found[name]} bytes, not {size}")
    return out


def parquet_rows(folder: Location, storage: Storage | None = None) -> int | None:
    """The rows of a parquet folder from its files' footers (``None``: not readable so)."""
    return (storage or storage_for(folder)).parquet_rows(folder)


SIMULATIONS = "simulate-"  # a simulation of one method keeps its cycles and history in <job>/simulate-<method>
HISTORY_FILE = "history.sqlite"  # the run history of a job folder on a local path
HISTORY_DOCUMENTS = "history"  # ... and of one at a URI: a folder of JSON documents


def history_location(job: Location) -> Location:
    """Where the run history of the job folder ``job`` lives: a SQLite file for a local folder,
    a folder of JSON documents for one at a URI (:mod:`tempura.scheduler.history`)."""
    return job / (HISTORY_DOCUMENTS if isinstance(job, Uri) else HISTORY_FILE)


def job_histories(workdir: Location, storage: Storage | None = None) -> list[Location]:
    """The run history of every job under ``workdir`` and of each of its simulations
    (``jobs/<name>[/simulate-<method>]/history.sqlite``, or ``…/history/`` at a URI) that
    exists."""
    jobs = as_location(workdir) / "jobs"
    storage = storage or storage_for(jobs)
    found: list[Location] = []
    for name in storage.children(jobs):
        job = jobs / name
        folders = [job, *(job / n for n in storage.children(job) if n.startswith(SIMULATIONS))]
        found.extend(path for path in map(history_location, folders) if storage.exists(path))
    return found


class JobStore:
    """The folders of one standing query (``root`` = ``<workdir>/jobs/<name>``), on the file
    system of its location: ``storage``, else the location's, over the session of ``files``
    (Spark's folders) for a URI."""

    def __init__(self, root: Location, files: Files | None = None, storage: Storage | None = None) -> None:
        self.root = root
        self.files = files
        self.storage = storage or storage_for(root, files.spark if files is not None else None)

    @property
    def history_path(self) -> Location:
        return history_location(self.root)

    def cycles(self) -> list[str]:
        """The labels of the cycles the job folder holds, in order."""
        folder = self.root / "cycles"
        return [name for name in self.storage.children(folder) if self.storage.is_dir(folder / name)]

    def cycle_dir(self, cycle: str) -> Location:
        return self.root / "cycles" / cycle

    def manifest_path(self, cycle: str, index: int) -> Location:
        return self.cycle_dir(cycle) / f"t{index:03d}.json"

    def pending(self, cycle: str) -> Location:
        return self.cycle_dir(cycle) / ".pending"

    def state_path(self, cycle: str, state: str, index: int) -> Location:
        return self.cycle_dir(cycle) / "states" / f"{state}@t{index:03d}"

    def landing(self, cycle: str, source: str) -> Location:
        return self.cycle_dir(cycle) / "landing" / source

    def landing_interval(self, cycle: str, source: str, index: int) -> Location:
        return self.landing(cycle, source) / f"i={index:03d}"

    def interval_folders(self, cycle: str, source: str, first: int, last: int,
                         history: Mapping[str, list[str]] | None = None) -> tuple[list[str], list[str]]:
        """The URIs of ``source``'s landed intervals ``first..last`` in ``cycle``, and, in a carried
        cycle (``history``: its history's folders per source, under the job's folder) whose
        interval 1 they include, the folders of its history, read as interval 1."""
        carried = history is not None and first == 1
        own = [uri(self.landing_interval(cycle, source, i)) for i in range(2 if carried else first, last + 1)]
        taken = [uri(self.root / path) for path in (history or {}).get(source, [])] if carried else []
        return own, taken

    def interval_files(self, cycle: str, source: str, first: int, last: int) -> list[dict[str, int]]:
        """The files of ``source``'s landed intervals ``first..last`` in ``cycle``, each interval's
        by path relative to its folder, with sizes."""
        return [inventory(self.landing_interval(cycle, source, i), self.storage) for i in range(first, last + 1)]

    def checkpoint(self, cycle: str, stream: str, index: int) -> Location:
        return self.cycle_dir(cycle) / "checkpoints" / f"{stream}@t{index:03d}"

    def plan_path(self, cycle: str, index: int) -> Location:
        return self.cycle_dir(cycle) / "plans" / f"t{index:03d}.plan.json"

    # -- manifests ---------------------------------------------------------------------------

    def manifest(self, cycle: str, index: int) -> dict[str, Any] | None:
        """The committed manifest of time point ``index``, or ``None`` if it is not committed;
        :class:`Damage` if it does not parse or its checksum does not match its content."""
        path = self.manifest_path(cycle, index)
        try:
            text = self.storage.read_text(path)
        except OSError as error:
            raise Damage(f"{cycle_words(cycle)}, t{index}: cannot read {path}: {error.strerror}") from None
        if text is None:
            return None
        try:
            data = json.loads(text)
        except ValueError:
            raise Damage(f"{cycle_words(cycle)}, t{index}: {path} is truncated or not JSON") from None
        if not isinstance(data, dict) or data.get("index") != index:
            raise Damage(f"{cycle_words(cycle)}, t{index}: {path} is not the manifest of t{index}")
        if "checksum" in data and data["checksum"] != checksum(data):
            raise Damage(f"{cycle_words(cycle)}, t{index}: {path} was altered (its checksum does not match its content)")
        return data

    def manifest_indices(self, cycle: str) -> list[int]:
        """The time points of the cycle that have a manifest file, in order."""
        names = self.storage.children(self.cycle_dir(cycle))
        return sorted(int(m.group(1)) for name in names if (m := _MANIFEST.fullmatch(name)))

    def chain(self, cycle: str) -> list[dict[str, Any]]:
        """The cycle's committed manifests ``t1..tn`` as one verified chain; :class:`Damage` names
        the first gap, unreadable or altered manifest, or broken link."""
        indices = self.manifest_indices(cycle)
        out: list[dict[str, Any]] = []
        for expected, index in enumerate(indices, 1):
            if index != expected:
                raise Damage(f"{cycle_words(cycle)}: {self.manifest_path(cycle, expected)} is missing, but "
                             f"t{index} is committed after it")
            data = self.manifest(cycle, index)
            assert data is not None
            if out and "previous" in data and data["previous"] != out[-1].get("checksum"):
                raise Damage(f"{cycle_words(cycle)}, t{index}: {self.manifest_path(cycle, index)} does not follow "
                             f"t{index - 1}'s manifest (it was committed after another t{index - 1})")
            out.append(data)
        return out

    def committed(self, cycle: str) -> int:
        """The last committed time point of the cycle (0: none); :class:`Damage` if the chain of
        manifests is broken."""
        return len(self.chain(cycle))

    def write_manifest(self, cycle: str, index: int, data: dict[str, Any]) -> dict[str, Any]:
        """Commit time point ``index``: its manifest appears complete, or not at all, with its
        checksum and its predecessor's. Returns the manifest as written (as it reads back)."""
        previous = self.manifest(cycle, index - 1) if index > 1 else None
        content = json.loads(json.dumps(data, default=str))  # as it will read back
        content["previous"] = previous.get("checksum") if previous is not None else None
        content["checksum"] = checksum(content)
        write_json_atomically(self.manifest_path(cycle, index), content, self.storage)
        return content

    # -- what a manifest lists ---------------------------------------------------------------

    def listing(self, cycle: str, relative: Iterable[str], rows: Mapping[str, int | None]) -> dict[str, Any]:
        """The inventory entry of each of the cycle's folders ``relative`` (paths under the
        cycle's folder): its data files with their sizes, and its rows where known."""
        base = self.cycle_dir(cycle)
        return {path: {"files": inventory(base / path, self.storage), "rows": rows.get(path)}
                for path in sorted(set(relative))}

    def verify(self, cycle: str, manifest: Mapping[str, Any], deep: bool = False) -> list[str]:
        """What is wrong with the folders ``manifest`` lists (its inventory, and its delivery when
        it is one of the cycle's folders): one message per missing folder, missing file, file of
        another size or (``deep``: parquet footers read) other row count. Empty when intact."""
        index = manifest.get("index")
        base = self.cycle_dir(cycle)
        named = f"committed by t{index:03d}.json" if isinstance(index, int) else "committed"
        where = f"{cycle_words(cycle)}, {time_point_words(index, manifest.get('time'))}" if isinstance(index, int) \
            else cycle_words(cycle)
        problems: list[str] = []
        for path, entry in sorted(dict(manifest.get("inventory", {})).items()):
            folder = base / path
            if not self.storage.is_dir(folder):
                problems.append(f"{where}: {folder} ({named}) is missing")
                continue
            damaged = listed_problems(folder, entry.get("files", {}),
                                      lambda name: f"{where}: {folder / name} ({named})", self.storage)
            problems += damaged
            if deep and not damaged and entry.get("rows") is not None and path.startswith(("states/", "landing/")):
                try:
                    rows = parquet_rows(folder, self.storage)
                except Exception as error:  # a footer that does not parse: the file is damaged
                    why = error.strerror if isinstance(error, OSError) and error.strerror else error
                    problems.append(f"{where}: {folder} ({named}) cannot be read: {why}")
                    continue
                if rows is not None and rows != entry["rows"]:
                    problems.append(f"{where}: {folder} ({named}) holds {rows} rows, not {entry['rows']}")
        for entries in dict(manifest.get("history", {})).values():  # a carried cycle's history, in earlier cycles
            for entry in entries:
                folder = self.root / str(entry["path"])
                if not self.storage.is_dir(folder):
                    problems.append(f"{where}: {folder} (history {named}) is missing")
                    continue
                problems += listed_problems(folder, entry.get("files", {}),
                                            lambda name: f"{where}: {folder / name} (history {named})",
                                            self.storage)
        return problems

    def check_readable(self, cycle: str, manifest: Mapping[str, Any], index: int) -> None:
        """Raise :class:`Damage` (one line) if a folder ``manifest`` lists for later time points
        is missing or damaged, before time point ``index`` reads it."""
        problems = self.verify(cycle, manifest)
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise Damage(f"{problems[0]}{more}: t{index} cannot run; 'tempura check' lists the damage, "
                         f"'tempura repair' rebuilds from the last intact time point")

    def protected(self, cycle: str) -> set[str]:
        """The cycle's folders (relative paths) a committed manifest lists: never deleted by a
        clean-up. Unreadable manifests protect nothing they might list, so nothing is deleted
        then at all (see :meth:`discard_uncommitted`)."""
        out: set[str] = set()
        for index in self.manifest_indices(cycle):
            data = self.manifest(cycle, index)
            if data is None:
                continue
            out.update(dict(data.get("inventory", {})))
            out.update(f"states/{s['folder']}" for s in data.get("states", []))
        return out

    def uncommit(self, cycle: str, first: int) -> list[int]:
        """Take back the commits of time points ``first`` and later (a repair): their manifests
        are moved, never deleted, to ``uncommitted/<stamp>/``. Returns the time points."""
        taken = [i for i in self.manifest_indices(cycle) if i >= first]
        if not taken:
            return []
        aside = self.cycle_dir(cycle) / UNCOMMITTED / time.strftime("%Y%m%dT%H%M%S")
        self.storage.mkdirs(aside)
        for index in reversed(taken):  # the last first: the chain stays a prefix throughout
            path = self.manifest_path(cycle, index)
            self.storage.move(path, aside / path.name)
        return taken

    def save_plan(self, cycle: str, index: int, plan: dict[str, Any]) -> Location:
        write_json_atomically(self.plan_path(cycle, index), plan, self.storage)
        return self.plan_path(cycle, index)

    # -- leftovers and garbage ---------------------------------------------------------------

    def discard_uncommitted(self, cycle: str, index: int) -> list[str]:
        """Delete everything an attempt at time point ``index`` (or later) may have left: the
        pending folder, and states, landed intervals and checkpoints tagged ``index`` or later.
        Returns what it deleted."""
        assert self.files is not None
        keep = self.protected(cycle)
        deleted = []
        pending = self.pending(cycle)
        if self.files.exists(pending):
            self.files.delete(pending)
            deleted.append(str(pending))
        base = self.cycle_dir(cycle)
        for kind in ("states", "checkpoints"):
            for name in self.files.children(base / kind):
                match = _TAG.match(name)
                if match and int(match.group(1)) >= index and f"{kind}/{name}" not in keep:
                    self.files.delete(base / kind / name)
                    deleted.append(f"{kind}/{name}")
        for source in self.files.children(base / "landing"):
            for name in self.files.children(base / "landing" / source):
                match = _INTERVAL.match(name)
                if match and int(match.group(1)) >= index and f"landing/{source}/{name}" not in keep:
                    self.files.delete(base / "landing" / source / name)
                    deleted.append(f"landing/{source}/{name}")
        return deleted

    def drop_states(self, cycle: str, keep: set[str]) -> list[str]:
        """Delete the saved state folders whose names are not in ``keep``; returns them."""
        assert self.files is not None
        folder = self.cycle_dir(cycle) / "states"
        dropped = [name for name in self.files.children(folder) if name not in keep and not name.startswith(".")]
        for name in dropped:
            self.files.delete(folder / name)
        return dropped


def write_json_atomically(path: Location, data: dict[str, Any], storage: Storage | None = None) -> None:
    """Write ``data`` as JSON to a temporary file beside ``path``, flushed to disk, then renamed
    over it (:meth:`Storage.write_atomically`)."""
    (storage or storage_for(path)).write_atomically(path, json.dumps(data, indent=2, default=str))
