"""The run history of a standing query, under the job's folder: an embedded SQLite database
(``history.sqlite``) when the folder is a local path, one JSON document per committed time point
and per adopted plan (``history/``) when it is at a URI (HDFS, an object store, ``file://``), where
SQLite cannot write: it needs a local file with POSIX locks.

Four tables:

- ``runs``: one row per committed time point — cycle, index, time value, method of the plan that
  ran, the plan's estimated cost at that time point, measured wall and executor CPU time of its
  fragments, rows landed and what landing them cost (executor CPU, bytes read from the sources:
  the same for every plan but one that lands an interval laid out), and whether the remaining
  time points were re-planned, with the reason;
- ``fragments``: per fragment of a run, estimated rows and seconds against measured rows, wall
  time, CPU time, bytes read and written, and the Spark jobs and stages it ran against the stages
  the estimate charged and their share of it (each stage costs a fixed amount whatever its input:
  ``docs/statistics.md``; :mod:`tempura.scheduler.calibration` fits that amount to these rows),
  for a fragment that ran another method than the one forced, why (``fallback``); and, for one
  whose reads of laid-out landings a probe pruned (:mod:`tempura.runtime.layout`), the bytes and
  buckets they read against the whole and the buckets the plan expected them to touch;
- ``plans``: each plan the job adopted, with its cost vector and objective, and why;
- ``events``: the event log, one record per attempt (:data:`OUTCOMES`): a time point committed,
  with its figures and plan change; a run refused or failed, with its one-line message; a run
  that found nothing due, with when the next time point is. Written whether or not the run holds
  the job's lock (as a document at a URI, ``history/events/<id>.json``).

Rows are written in one transaction per committed time point, after its manifest: if the process
dies in between, the next run (which finds the time point committed) writes them from the
manifest, so the history never misses a committed time point.

:class:`DocumentHistory` keeps the same rows as files through the job folder's
:class:`~tempura.runtime.storage.Storage`: ``history/runs/<cycle>/tNNN.json`` holds a time point's
``runs`` row and its ``fragments`` rows, written atomically (a temporary file renamed into place:
one document is one transaction), ``history/plans/<plan_id>.json`` a ``plans`` row. Reading loads
every document into an in-memory SQLite database with the same tables, so every query (``tempura
history``, the calibration of the stage cost, the runner's own) is the same for both.
:func:`history_at` opens the one a location names.
"""

from __future__ import annotations

import json
import re
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any, Iterable, Mapping

from tempura.runtime.storage import Location, Storage, Uri, storage_for

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    cycle TEXT NOT NULL,
    time_index INTEGER NOT NULL,
    time_value TEXT NOT NULL,
    committed_at TEXT NOT NULL,
    mode TEXT NOT NULL,
    method TEXT NOT NULL,
    plan_id TEXT NOT NULL,
    estimated_seconds REAL,
    wall_seconds REAL,
    cpu_seconds REAL,
    rows_landed INTEGER,
    late_rows INTEGER,
    rejected_rows INTEGER,
    delivered TEXT,
    replanned INTEGER NOT NULL DEFAULT 0,
    plan_changed INTEGER NOT NULL DEFAULT 0,
    reason TEXT,
    landing_cpu_seconds REAL,
    landing_bytes_read INTEGER,
    work TEXT,
    planning_seconds REAL,
    run_wall_seconds REAL,
    forecast_rows TEXT,
    landed_rows TEXT,
    PRIMARY KEY (cycle, time_index)
);
CREATE TABLE IF NOT EXISTS fragments (
    cycle TEXT NOT NULL,
    time_index INTEGER NOT NULL,
    fragment TEXT NOT NULL,
    method TEXT NOT NULL,
    form TEXT,
    output TEXT,
    streaming INTEGER NOT NULL,
    estimated_rows REAL,
    estimated_seconds REAL,
    rows_in INTEGER,
    rows_out INTEGER,
    wall_seconds REAL,
    cpu_seconds REAL,
    bytes_in INTEGER,
    bytes_out INTEGER,
    shuffle_bytes INTEGER,
    jobs INTEGER,
    stages INTEGER,
    estimated_stages REAL,
    estimated_fixed_seconds REAL,
    fallback TEXT,
    pruned_bytes_read INTEGER,
    pruned_bytes INTEGER,
    pruned_buckets_read INTEGER,
    pruned_buckets INTEGER,
    estimated_buckets_read REAL,
    probe_keys REAL,
    estimated_row_seconds REAL,
    row_constant REAL,
    PRIMARY KEY (cycle, time_index, fragment)
);
CREATE TABLE IF NOT EXISTS events (
    event_id TEXT PRIMARY KEY,
    at TEXT NOT NULL,
    outcome TEXT NOT NULL,
    cycle TEXT,
    time_index INTEGER,
    time_value TEXT,
    method TEXT,
    message TEXT,
    details TEXT,
    host TEXT,
    pid INTEGER
);
CREATE TABLE IF NOT EXISTS plans (
    plan_id TEXT PRIMARY KEY,
    cycle TEXT NOT NULL,
    from_index INTEGER NOT NULL,
    method TEXT NOT NULL,
    cost_vector TEXT NOT NULL,
    objective REAL NOT NULL,
    reason TEXT,
    created_at TEXT NOT NULL
);
"""


RUN_COLUMNS = ("cycle", "time_index", "time_value", "committed_at", "mode", "method", "plan_id", "estimated_seconds",
               "wall_seconds", "cpu_seconds", "rows_landed", "late_rows", "rejected_rows", "delivered", "replanned",
               "plan_changed", "reason", "landing_cpu_seconds", "landing_bytes_read", "work", "planning_seconds",
               "run_wall_seconds", "forecast_rows", "landed_rows")
JSON_COLUMNS = ("work", "forecast_rows", "landed_rows")  # runs columns that hold a JSON document
EVENT_COLUMNS = ("event_id", "at", "outcome", "cycle", "time_index", "time_value", "method", "message", "details",
                 "host", "pid")
OUTCOMES = ("committed", "refused", "failed", "nothing due")
"""What an attempt came to: a time point committed; the run refused (another holds the lock, a
cycle too far back); a time point or the run failed; nothing was due."""
PLAN_COLUMNS = ("plan_id", "cycle", "from_index", "method", "cost_vector", "objective", "reason", "created_at")
FRAGMENT_COLUMNS = ("cycle", "time_index", "fragment", "method", "form", "output", "streaming", "estimated_rows",
                    "estimated_seconds", "rows_in", "rows_out", "wall_seconds", "cpu_seconds", "bytes_in", "bytes_out",
                    "shuffle_bytes", "jobs", "stages", "estimated_stages", "estimated_fixed_seconds", "fallback",
                    "pruned_bytes_read", "pruned_bytes", "pruned_buckets_read", "pruned_buckets", "estimated_buckets_read",
                    "probe_keys", "estimated_row_seconds", "row_constant")
# Columns the schema gained later, with their types: a history written before them
# gets them (NULL in its old rows) when it is next opened.
ADDED_COLUMNS = {"runs": (("landing_cpu_seconds", "REAL"), ("landing_bytes_read", "INTEGER"), ("work", "TEXT"),
                          ("planning_seconds", "REAL"), ("run_wall_seconds", "REAL"), ("forecast_rows", "TEXT"),
                          ("landed_rows", "TEXT")),
                 "fragments": (("jobs", "INTEGER"), ("stages", "INTEGER"), ("estimated_stages", "REAL"),
                               ("estimated_fixed_seconds", "REAL"), ("fallback", "TEXT"), ("pruned_bytes_read", "INTEGER"),
                               ("pruned_bytes", "INTEGER"), ("pruned_buckets_read", "INTEGER"), ("pruned_buckets", "INTEGER"),
                               ("estimated_buckets_read", "REAL"), ("probe_keys", "REAL"), ("estimated_row_seconds", "REAL"),
                               ("row_constant", "REAL"))}


def _add_missing_columns(connection: sqlite3.Connection) -> None:
    for table, columns in ADDED_COLUMNS.items():
        present = {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}
        for name, kind in columns:
            if name not in present:
                try:
                    with connection:
                        connection.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")
                except sqlite3.OperationalError as error:  # another process added it first
                    if "duplicate column" not in str(error):
                        raise


def run_row(manifest: Mapping[str, Any]) -> tuple[Any, ...]:
    """A committed time point's ``runs`` row (:data:`RUN_COLUMNS`), from its manifest."""
    run = manifest["run"]
    return (manifest["cycle"], manifest["index"], str(manifest["time"]), manifest["committed_at"], run["mode"],
            run["method"], run["plan_id"], run["estimated_seconds"], run["wall_seconds"], run["cpu_seconds"],
            run["rows_landed"], run["late_rows"], run["rejected_rows"], manifest.get("delivered"),
            int(run.get("replanned", False)), int(run.get("plan_changed", False)), run.get("reason"),
            run.get("landing_cpu_seconds"), run.get("landing_bytes_read"),
            json.dumps(run["work"], sort_keys=True) if run.get("work") is not None else None,
            run.get("planning_seconds"), run.get("run_wall_seconds"),
            json.dumps(run["forecast_rows"], sort_keys=True) if run.get("forecast_rows") else None,
            json.dumps({name: entry.get("rows") for name, entry in manifest.get("landed", {}).items()}, sort_keys=True))


# What a time point's run did besides its plan's fragments (tempura.runtime.metrics.PURPOSES):
# its overhead, which the history shows beside the plan's work.
PLAN_WORK = ("fragment", "state save", "delivery")


def work_split(row: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """A ``runs`` row's executor CPU seconds of its plan's work and of everything else the run
    did (statistics, arrival, schemas, landing, checks, commit); ``None`` where not recorded."""
    if not row.get("work"):
        return None, None
    work = json.loads(row["work"]) if isinstance(row["work"], str) else row["work"]
    plan = sum(float(w.get("cpu_seconds", 0.0)) for purpose, w in work.items() if purpose in PLAN_WORK)
    other = sum(float(w.get("cpu_seconds", 0.0)) for purpose, w in work.items() if purpose not in PLAN_WORK)
    return plan, other


def forecast_error(row: Mapping[str, Any]) -> dict[str, tuple[float, int]]:
    """Per source, the rows forecast for a ``runs`` row's interval and the rows it landed."""
    if not row.get("forecast_rows") or not row.get("landed_rows"):
        return {}
    forecast = json.loads(row["forecast_rows"]) if isinstance(row["forecast_rows"], str) else row["forecast_rows"]
    landed = json.loads(row["landed_rows"]) if isinstance(row["landed_rows"], str) else row["landed_rows"]
    return {name: (float(forecast[name]), int(landed[name])) for name in sorted(forecast) if landed.get(name) is not None}


def fragment_rows(manifest: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """A committed time point's ``fragments`` rows (:data:`FRAGMENT_COLUMNS`), from its manifest."""
    return [(manifest["cycle"], manifest["index"], f["id"], f["method"], f["form"], f["output"], int(f["streaming"]),
             f["estimated_rows"], f["estimated_seconds"], f["rows_in"], f["rows_out"], f["wall_seconds"],
             f["cpu_seconds"], f["bytes_in"], f["bytes_out"], f["shuffle_bytes"], f.get("jobs"), f.get("stages"),
             f.get("estimated_stages"), f.get("estimated_fixed_seconds"), f.get("fallback") or None,
             f.get("pruned_bytes_read"), f.get("pruned_bytes"), f.get("pruned_buckets_read"), f.get("pruned_buckets"),
             f.get("estimated_buckets_read"), f.get("probe_keys"), f.get("estimated_row_seconds"),
             f.get("row_constant"))
            for f in manifest["fragments"]]


def event_row(event: Mapping[str, Any]) -> tuple[Any, ...]:
    """An event's row: its columns in :data:`EVENT_COLUMNS` order, ``details`` as JSON."""
    return tuple(json.dumps(event.get(c) or {}, default=str) if c == "details" else event.get(c) for c in EVENT_COLUMNS)


def _insert(table: str, columns: Iterable[str]) -> str:
    names = list(columns)
    return f"INSERT OR REPLACE INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"


class History:
    """The SQLite run history at ``path``."""

    def __init__(self, path: Path, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only  # another job's history: read as it is, never migrated

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path)
        connection.executescript(SCHEMA)
        _add_missing_columns(connection)
        return connection

    def record_plan(self, plan_id: str, cycle: str, from_index: int, method: str, vector: Iterable[float],
                    objective: float, reason: str, created_at: str) -> None:
        with closing(self._connect()) as db, db:
            db.execute(_insert("plans", PLAN_COLUMNS),
                       (plan_id, cycle, from_index, method, json.dumps(list(vector)), objective, reason, created_at))

    def record_run(self, manifest: Mapping[str, Any]) -> None:
        """Write a committed time point's rows (again, idempotently) from its manifest."""
        with closing(self._connect()) as db, db:
            db.execute(_insert("runs", RUN_COLUMNS), run_row(manifest))
            db.execute("DELETE FROM fragments WHERE cycle = ? AND time_index = ?", (manifest["cycle"], manifest["index"]))
            db.executemany(_insert("fragments", FRAGMENT_COLUMNS), fragment_rows(manifest))

    def record_event(self, event: Mapping[str, Any]) -> None:
        """Append one attempt's record to the event log (:data:`EVENT_COLUMNS`; ``details`` a
        JSON document)."""
        with closing(self._connect()) as db, db:
            db.execute(_insert("events", EVENT_COLUMNS), event_row(event))

    def events(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The event log, oldest first (the last ``limit`` records)."""
        rows = self._rows("SELECT * FROM events ORDER BY at, event_id")
        for row in rows:
            if isinstance(row.get("details"), str):
                row["details"] = json.loads(row["details"])
        return rows[-limit:] if limit else rows

    def set_replan(self, cycle: str, index: int, changed: bool, reason: str) -> None:
        with closing(self._connect()) as db, db:
            db.execute("UPDATE runs SET replanned = 1, plan_changed = ?, reason = ? WHERE cycle = ? AND time_index = ?",
                       (int(changed), reason, cycle, index))

    def forget(self, cycle: str, first: int) -> None:
        """Drop the runs and fragments of ``cycle`` from time point ``first`` on (a repair takes
        their commits back; they are recorded again when they run again)."""
        if not self.path.exists():
            return
        with closing(self._connect()) as db, db:
            db.execute("DELETE FROM runs WHERE cycle = ? AND time_index >= ?", (cycle, first))
            db.execute("DELETE FROM fragments WHERE cycle = ? AND time_index >= ?", (cycle, first))

    def has_run(self, cycle: str, index: int) -> bool:
        if not self.path.exists():
            return False
        with closing(self._connect()) as db:
            return db.execute("SELECT 1 FROM runs WHERE cycle = ? AND time_index = ?", (cycle, index)).fetchone() is not None

    def runs(self) -> list[dict[str, Any]]:
        rows = self._rows("SELECT * FROM runs ORDER BY cycle, time_index")
        for row in rows:  # the columns holding JSON documents, as data
            for key in JSON_COLUMNS:
                if isinstance(row.get(key), str):
                    row[key] = json.loads(row[key])
        return rows

    def fragments(self, cycle: str | None = None) -> list[dict[str, Any]]:
        if cycle is None:
            return self._rows("SELECT * FROM fragments ORDER BY cycle, time_index, fragment")
        return self._rows("SELECT * FROM fragments WHERE cycle = ? ORDER BY time_index, fragment", (cycle,))

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        try:
            connection = (sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True) if self.read_only
                          else self._connect())
            with closing(connection) as db:
                db.row_factory = sqlite3.Row
                return [dict(r) for r in db.execute(sql, params).fetchall()]
        except sqlite3.Error:
            if not self.read_only:
                raise
            return []  # another job's file that is not (yet) a readable history: nothing to read


_DOCUMENT = re.compile(r"t(\d{3,})\.json$")


class DocumentHistory(History):
    """The run history as JSON documents in the folder ``folder``, through ``storage`` (see the
    module's docstring); read into an in-memory SQLite database with :class:`History`'s tables."""

    def __init__(self, folder: Location, read_only: bool = False, storage: Storage | None = None) -> None:
        self.folder = folder
        self.read_only = read_only
        self.storage = storage or storage_for(folder)

    def _run_document(self, cycle: str, index: int) -> Location:
        return self.folder / "runs" / cycle / f"t{index:03d}.json"

    def _write(self, where: Location, data: Mapping[str, Any]) -> None:
        self.storage.write_atomically(where, json.dumps(data, indent=1, default=str))

    def record_plan(self, plan_id: str, cycle: str, from_index: int, method: str, vector: Iterable[float],
                    objective: float, reason: str, created_at: str) -> None:
        row = (plan_id, cycle, from_index, method, json.dumps(list(vector)), objective, reason, created_at)
        self._write(self.folder / "plans" / f"{plan_id}.json", dict(zip(PLAN_COLUMNS, row)))

    def record_run(self, manifest: Mapping[str, Any]) -> None:
        self._write(self._run_document(manifest["cycle"], manifest["index"]),
                    {"run": dict(zip(RUN_COLUMNS, run_row(manifest))),
                     "fragments": [dict(zip(FRAGMENT_COLUMNS, row)) for row in fragment_rows(manifest)]})

    def record_event(self, event: Mapping[str, Any]) -> None:
        self._write(self.folder / "events" / f"{event['event_id']}.json", dict(zip(EVENT_COLUMNS, event_row(event))))

    def set_replan(self, cycle: str, index: int, changed: bool, reason: str) -> None:
        where = self._run_document(cycle, index)
        text = self.storage.read_text(where)
        if text is None:
            return
        document = json.loads(text)
        document["run"].update(replanned=1, plan_changed=int(changed), reason=reason)
        self._write(where, document)

    def forget(self, cycle: str, first: int) -> None:
        folder = self.folder / "runs" / cycle
        for name in self.storage.children(folder):
            match = _DOCUMENT.fullmatch(name)
            if match and int(match.group(1)) >= first:
                self.storage.delete(folder / name)

    def has_run(self, cycle: str, index: int) -> bool:
        return self.storage.exists(self._run_document(cycle, index))

    def _documents(self) -> Iterable[dict[str, Any]]:
        """Every document's content, tagged with its kind; a document that does not parse (cut
        short where a rename is not atomic) is left out, as a row never written."""
        runs = self.folder / "runs"
        places = [(runs / cycle / name, "run") for cycle in self.storage.children(runs)
                  for name in self.storage.children(runs / cycle) if _DOCUMENT.fullmatch(name)]
        for folder, kind in (("plans", "plan"), ("events", "event")):
            places += [(self.folder / folder / name, kind) for name in self.storage.children(self.folder / folder)
                       if name.endswith(".json") and not name.startswith(".")]
        for where, kind in places:
            try:
                text = self.storage.read_text(where)
                data = json.loads(text) if text is not None else None
            except (OSError, ValueError):
                continue
            if isinstance(data, dict):
                yield {"kind": kind, **data}

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(":memory:")
        connection.executescript(SCHEMA)
        with connection:
            for document in self._documents():
                if document["kind"] == "plan":
                    rows = [("plans", {k: v for k, v in document.items() if k in PLAN_COLUMNS})]
                elif document["kind"] == "event":
                    rows = [("events", {k: v for k, v in document.items() if k in EVENT_COLUMNS})]
                else:
                    rows = [("runs", {k: v for k, v in document.get("run", {}).items() if k in RUN_COLUMNS})]
                    rows += [("fragments", {k: v for k, v in f.items() if k in FRAGMENT_COLUMNS})
                             for f in document.get("fragments", [])]
                for table, row in rows:
                    connection.execute(_insert(table, row), tuple(row.values()))
        return connection

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        try:
            with closing(self._connect()) as db:
                db.row_factory = sqlite3.Row
                return [dict(r) for r in db.execute(sql, params).fetchall()]
        except (sqlite3.Error, OSError):
            if not self.read_only:
                raise
            return []


def history_at(path: Location, read_only: bool = False, storage: Storage | None = None) -> History:
    """The run history at ``path``: SQLite at a local path, JSON documents at a URI."""
    if isinstance(path, Uri):
        return DocumentHistory(path, read_only, storage)
    return History(Path(path), read_only)
