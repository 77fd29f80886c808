"""Where statistics live between processes, and which statistics the estimator gets.

:class:`StatsStore` keeps one JSON file per table under ``<workdir>/stats/``, written to a
temporary file and renamed into place, so a crash never leaves a torn file. A workdir at a URI
is read and written through the :class:`TextFiles` it is given (the runtime's Hadoop storage). Each file records
a fingerprint of the table's data files (names, sizes, modification times). When the files
change, the stored statistics are *stale*: :class:`StatsCatalog` still uses them, scaled to the
files' new size, and says so; a table that was never analysed gets defaults from its file sizes
(:mod:`tempura.stats.defaults`).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tempura.atomic import write_text
from tempura.catalog import Catalog, TableSource
from tempura.errors import TempuraError
from tempura.stats.defaults import default_table_stats
from tempura.stats.model import TableStats

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class FileState:
    """The data files of a table as they are now."""

    digest: str
    bytes: float
    files: int


def _is_data_file(name: str) -> bool:
    return not name.startswith(("_", ".")) and not name.endswith(".crc")


def file_state(source: TableSource, spark: SparkSession | None = None) -> FileState | None:
    """Fingerprint of a table's files: local paths are listed directly; other URIs, and a table
    of Spark's catalog (at the location the catalog gives), through Spark's Hadoop file system
    when a session is given. ``None`` when it cannot be listed."""
    entries: list[tuple[str, int, int]] = []
    if source.table is not None and not source.path:  # a catalog table, not located yet
        if spark is None:
            return None
        source = source.located(spark)
    if "://" not in source.path and not source.path.startswith("file:"):
        root = Path(source.path)
        if root.is_file():
            stat = root.stat()
            entries.append((root.name, stat.st_size, stat.st_mtime_ns))
        elif root.is_dir():
            for folder, dirs, files in os.walk(root):
                dirs[:] = sorted(d for d in dirs if _is_data_file(d))
                for name in sorted(files):
                    if _is_data_file(name):
                        path = Path(folder, name)
                        stat = path.stat()
                        entries.append((str(path.relative_to(root)), stat.st_size, stat.st_mtime_ns))
        else:
            return None
    elif spark is not None:
        jvm: Any = spark.sparkContext._jvm
        path = jvm.org.apache.hadoop.fs.Path(source.path)
        jsc: Any = spark.sparkContext._jsc
        fs = path.getFileSystem(jsc.hadoopConfiguration())
        listing = fs.listFiles(path, True)
        while listing.hasNext():
            status = listing.next()
            name = str(status.getPath().toString())
            if _is_data_file(name.rsplit("/", 1)[-1]):
                entries.append((name, int(status.getLen()), int(status.getModificationTime())))
    else:
        return None
    digest = hashlib.sha256(json.dumps(sorted(entries)).encode()).hexdigest()[:16]
    return FileState(digest, float(sum(size for _, size, _ in entries)), len(entries))


class TextFiles(Protocol):
    """Small text files on the workdir's file system (:class:`tempura.runtime.storage.Storage`)."""

    def read_text(self, path: Any) -> str | None: ...

    def write_atomically(self, path: Any, text: str) -> None: ...


class StatsStore:
    """Statistics files under ``<workdir>/stats``: a local folder, or any location joined with
    ``/`` whose ``files`` read and write them."""

    def __init__(self, workdir: str | Path | Any, files: TextFiles | None = None) -> None:
        self.root = (Path(workdir) if isinstance(workdir, str) else workdir) / "stats"
        self.files = files

    def path(self, table: str) -> Any:
        return self.root / f"{table.lower()}.json"

    def load(self, table: str) -> TableStats | None:
        path = self.path(table)
        if self.files is not None:
            text = self.files.read_text(path)
        else:
            text = path.read_text(encoding="utf-8") if path.exists() else None
        if text is None:
            return None
        try:
            return TableStats.from_json(json.loads(text))
        except (ValueError, KeyError, TypeError) as error:
            raise TempuraError(f"{path}: unreadable statistics file ({error}); run 'tempura analyze' again") from None

    def save(self, table: str, stats: TableStats) -> Any:
        """Write atomically: a temporary file in the same folder, then a rename."""
        target = self.path(table)
        if self.files is not None:
            self.files.write_atomically(target, json.dumps(stats.to_json(), indent=1, sort_keys=True))
            return target
        write_text(target, json.dumps(stats.to_json(), indent=1, sort_keys=True), f".{table}.")
        return target


class StatsCatalog:
    """The statistics the estimator uses for each catalog table: stored ones (fresh, or stale
    and scaled), else defaults from file sizes. Also accepts injected statistics (tests,
    what-if planning).

    ``kept``: a job's statistics kept from its landings (a run by the clock). A stored sketch
    then describes every row the job has landed; files beyond those are rows still to land,
    which the arrival forecast counts. So the sketch is neither stale nor scaled to the files."""

    def __init__(
        self,
        catalog: Catalog,
        store: StatsStore | None = None,
        schemas: dict[str, dict[str, str]] | None = None,
        spark: SparkSession | None = None,
        kept: bool = False,
    ) -> None:
        self.catalog = catalog
        self.kept = kept
        self.store = store
        self.schemas = schemas
        self.spark = spark
        self._cache: dict[str, TableStats] = {}

    def forget(self, table: str) -> None:
        """Read ``table``'s statistics from the store again at the next lookup (they were updated)."""
        self._cache.pop(table.lower(), None)

    def inject(self, table: str, stats: TableStats) -> None:
        self._cache[table.lower()] = replace(stats, source="injected")

    def __call__(self, table: str) -> TableStats:
        return self.lookup(table)

    def lookup(self, table: str) -> TableStats:
        key = table.lower()
        if key not in self._cache:
            self._cache[key] = self._resolve(key)
        return self._cache[key]

    def _resolve(self, table: str) -> TableStats:
        source = self.catalog.table(table)
        stored = self.store.load(table) if self.store is not None else None
        if stored is not None and self.kept and stored.sketch is not None:
            return stored
        state = file_state(source, self.spark)
        if stored is not None:
            if state is None or state.digest == stored.fingerprint:
                return stored
            ratio = state.bytes / stored.file_bytes if stored.file_bytes > 0 else 1.0
            return stored.scaled(stored.rows * ratio, stale=True)
        schema = (self.schemas or {}).get(table) or dict(source.schema or {})
        return default_table_stats(source, schema, state.bytes if state is not None else None)
