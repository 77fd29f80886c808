"""Plans kept for reuse: a standing query's plans under the exact inputs that made them.

A planning is a function of its inputs: the query and its SQL, the methods asked for and the
rules and phases left out, the output mode, the time points and their objective, every source's
statistics (sketches included) and arrival over the cycle (measured, forecast or declared), what
the landing guarantees of each source's reads, what the cycle has committed (the floor, the
states kept, the intervals landed and their layouts), the cost constants, the state selection's
options and margin, the notes the plans carry — and tempura's own code. :func:`planning_key`
hashes all of them, each value written out in full (:func:`canonical`); two plannings with one
key are the same planning, and the second takes the first's plans.

Where that happens: a run by the clock re-plans the rest of its cycle after committing ``t_i``
(the re-optimization hook) and the run of ``t_{i+1}``, a new process, plans it again before
landing, from the same manifest, statistics and forecast. So the job keeps its last plannings in
its folder (:class:`PlanCache`, ``plans/``), each one file written atomically; a file that
cannot be read back, damaged or from another version of Python's pickle, is a miss and is
planned again. A value :func:`canonical` cannot write out in full (a function, say) makes the
planning uncacheable: it is planned, never looked up.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import enum
import hashlib
import json
import pickle
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from tempura.runtime.storage import Location, Storage

KEEP = 8  # plannings a job keeps


class Uncacheable(Exception):
    """An input of a planning that cannot be written out in full."""


def canonical(value: Any) -> Any:
    """``value`` written out in full as JSON-able data, the same in every process: dataclasses
    by class and fields, mappings and sets sorted, floats exactly (hex)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return ["f", value.hex()]
    if isinstance(value, enum.Enum):
        return ["enum", type(value).__qualname__, value.name]
    if isinstance(value, (bytes, bytearray)):
        return ["b", hashlib.sha256(value).hexdigest()]
    if isinstance(value, (dt.datetime, dt.date, dt.time, dt.timedelta)):
        return ["t", type(value).__name__, str(value)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return ["d", type(value).__qualname__,
                [[f.name, canonical(getattr(value, f.name))] for f in dataclasses.fields(value)]]
    if isinstance(value, Mapping):
        items = [[canonical(k), canonical(v)] for k, v in value.items()]
        return ["m", sorted(items, key=lambda kv: json.dumps(kv[0], sort_keys=True))]
    if isinstance(value, (set, frozenset)):
        return ["s", sorted((canonical(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))]
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if callable(value):
        raise Uncacheable(f"{type(value).__qualname__} is code, not data")
    if type(value).__repr__ is not object.__repr__:
        return ["r", type(value).__qualname__, repr(value)]
    if hasattr(value, "__dict__"):
        return ["o", type(value).__qualname__, canonical(vars(value))]
    raise Uncacheable(f"{type(value).__qualname__} cannot be written out in full")


@lru_cache(maxsize=1)
def code_version() -> str:
    """A digest of tempura's own source: plans made by other code are other plans."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def planning_key(inputs: Mapping[str, Any]) -> str | None:
    """The key of a planning with ``inputs`` (and tempura's code), or ``None`` if some input
    cannot be written out in full."""
    try:
        text = json.dumps(canonical({**inputs, "code": code_version()}), sort_keys=True, separators=(",", ":"))
    except Uncacheable:
        return None
    return hashlib.sha256(text.encode()).hexdigest()


@dataclasses.dataclass
class PlanCache:
    """A job's last plannings, by key: in this process, and in ``folder`` for the next. Each is
    kept pickled, so every :meth:`get` hands out plans of its own (a caller may change them)."""

    storage: Storage | None = None
    folder: Location | None = None
    keep: bool = True  # False: nothing is kept, every planning is made (to measure what reuse saves)
    hits: int = 0
    misses: int = 0
    _here: dict[str, bytes] = dataclasses.field(default_factory=dict)

    def get(self, key: str | None) -> Any | None:
        """The plans planned under ``key``, or ``None``."""
        if key is None or not self.keep:
            self.misses += 1
            return None
        data = self._here.get(key)
        found = None
        try:
            if data is None and self.storage is not None and self.folder is not None:
                text = self.storage.read_text(self.folder / f"{key}.plans")
                data = base64.b64decode(text) if text is not None else None
            found = pickle.loads(data) if data is not None else None
        except Exception:  # damaged, or written by another Python: planned again
            found = None
        if found is None or data is None:
            self.misses += 1
            return None
        self.hits += 1
        self._here[key] = data
        return found

    def put(self, key: str | None, plans: Any) -> None:
        """Keep ``plans`` under ``key`` (and let the oldest of the folder's go)."""
        if key is None or not self.keep:
            return
        try:
            data = pickle.dumps(plans, protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError):
            return  # not kept: planned again
        self._here[key] = data
        if self.storage is None or self.folder is None:
            return
        self.storage.mkdirs(self.folder)
        self.storage.write_atomically(self.folder / f"{key}.plans", base64.b64encode(data).decode("ascii"))
        kept = sorted(((self.storage.modified(self.folder / name) or 0.0, name)
                       for name in self.storage.children(self.folder) if name.endswith(".plans")), reverse=True)
        for _, name in kept[KEEP:]:
            self.storage.delete(self.folder / name)


__all__ = ["KEEP", "PlanCache", "Uncacheable", "canonical", "code_version", "planning_key"]
