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
the time point is redone from scratch. The manifest is written to a temporary file and renamed,
so it is either complete or absent. The run history (SQLite) lives beside the cycles.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from tempura.runtime.files import Files

_TAG = re.compile(r".*@t(\d+)$")
_INTERVAL = re.compile(r"i=(\d+)$")


SIMULATIONS = "simulate-"  # a simulation of one method keeps its cycles and history in <job>/simulate-<method>


def job_histories(workdir: Path) -> list[Path]:
    """The run history of every job under ``workdir`` and of each of its simulations
    (``jobs/<name>[/simulate-<method>]/history.sqlite``) that exists."""
    found = []
    for job in sorted((Path(workdir) / "jobs").glob("*")):
        for folder in (job, *sorted(job.glob(SIMULATIONS + "*"))):
            path = JobStore(folder).history_path
            if path.is_file():
                found.append(path)
    return found


class JobStore:
    """The folders of one standing query (``root`` = ``<workdir>/jobs/<name>``)."""

    def __init__(self, root: Path, files: Files | None = None) -> None:
        self.root = root
        self.files = files

    @property
    def history_path(self) -> Path:
        return self.root / "history.sqlite"

    def cycle_dir(self, cycle: str) -> Path:
        return self.root / "cycles" / cycle

    def manifest_path(self, cycle: str, index: int) -> Path:
        return self.cycle_dir(cycle) / f"t{index:03d}.json"

    def pending(self, cycle: str) -> Path:
        return self.cycle_dir(cycle) / ".pending"

    def state_path(self, cycle: str, state: str, index: int) -> Path:
        return self.cycle_dir(cycle) / "states" / f"{state}@t{index:03d}"

    def landing(self, cycle: str, source: str) -> Path:
        return self.cycle_dir(cycle) / "landing" / source

    def landing_interval(self, cycle: str, source: str, index: int) -> Path:
        return self.landing(cycle, source) / f"i={index:03d}"

    def checkpoint(self, cycle: str, stream: str, index: int) -> Path:
        return self.cycle_dir(cycle) / "checkpoints" / f"{stream}@t{index:03d}"

    def plan_path(self, cycle: str, index: int) -> Path:
        return self.cycle_dir(cycle) / "plans" / f"t{index:03d}.plan.json"

    # -- manifests ---------------------------------------------------------------------------

    def manifest(self, cycle: str, index: int) -> dict[str, Any] | None:
        """The committed manifest of time point ``index``, or ``None`` if it is not committed."""
        path = self.manifest_path(cycle, index)
        if not path.exists():
            return None
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return data

    def committed(self, cycle: str) -> int:
        """The last committed time point of the cycle (0: none). Time points commit in order."""
        index = 0
        while self.manifest_path(cycle, index + 1).exists():
            index += 1
        return index

    def write_manifest(self, cycle: str, index: int, data: dict[str, Any]) -> Path:
        """Commit time point ``index``: its manifest appears complete, or not at all."""
        write_json_atomically(self.manifest_path(cycle, index), data)
        return self.manifest_path(cycle, index)

    def save_plan(self, cycle: str, index: int, plan: dict[str, Any]) -> Path:
        write_json_atomically(self.plan_path(cycle, index), plan)
        return self.plan_path(cycle, index)

    # -- leftovers and garbage ---------------------------------------------------------------

    def discard_uncommitted(self, cycle: str, index: int) -> list[str]:
        """Delete everything an attempt at time point ``index`` (or later) may have left: the
        pending folder, and states, landed intervals and checkpoints tagged ``index`` or later.
        Returns what it deleted."""
        assert self.files is not None
        deleted = []
        pending = self.pending(cycle)
        if self.files.exists(pending):
            self.files.delete(pending)
            deleted.append(str(pending))
        base = self.cycle_dir(cycle)
        for kind in ("states", "checkpoints"):
            for name in self.files.children(base / kind):
                match = _TAG.match(name)
                if match and int(match.group(1)) >= index:
                    self.files.delete(base / kind / name)
                    deleted.append(f"{kind}/{name}")
        for source in self.files.children(base / "landing"):
            for name in self.files.children(base / "landing" / source):
                match = _INTERVAL.match(name)
                if match and int(match.group(1)) >= index:
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


def write_json_atomically(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as JSON to a temporary file beside ``path``, flush it to disk, rename it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2, default=str)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
