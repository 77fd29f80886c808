"""Deliveries into a table of Spark's catalog (``output: {table: db.name}``).

tempura creates the table at its first delivery, as an external parquet table marked with the
table property ``tempura.job`` (the job's name); a table of that name that another job or a user
made is never written: the run stops with one line. Its files live under the table's *root*,
``<database location>/<table>``:

- **snapshot**: each delivery is written, complete, to a new version folder
  ``<root>/v-<cycle>-tNNN-<ms>``; then one metadata switch points the table at it (``CREATE
  TABLE … LOCATION`` the first time, ``ALTER TABLE … SET LOCATION`` after), and the version
  folders older than the one it replaced are deleted (a query begun before the switch reads on).
  A reader sees the old contents or the new, never a half-written or empty table; a run killed
  before the switch leaves an unreferenced folder, deleted by the next delivery.
- **delta**: the table is partitioned by ``cycle`` and ``time_point`` and has the multiplicity
  column ``__m``; each delivery is committed to its partition folder
  ``<root>/cycle=<label>/time_point=NNN`` (written aside, then renamed) and added with ``ALTER
  TABLE … ADD IF NOT EXISTS PARTITION``, so a rerun of a time point replaces its partition and
  adds it once.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from tempura.errors import ExecutionError
from tempura.runtime.executor import spark_error_message, spark_errors
from tempura.runtime.files import Files
from tempura.sql.names import quote_identifier

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

JOB_PROPERTY = "tempura.job"
VERSION_PREFIX = "v-"


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _name(table: str) -> str:
    return ".".join(quote_identifier(part) for part in table.split("."))


class OutputTable:
    """The catalog table a job delivers to."""

    def __init__(self, spark: SparkSession, table: str, job: str, files: Files | None = None) -> None:
        self.spark = spark
        self.table = table
        self.job = job
        self.files = files or Files(spark)

    def _sql(self, text: str) -> list[tuple[str, ...]]:
        try:
            return [tuple(r) for r in self.spark.sql(text).collect()]
        except spark_errors() as error:
            raise ExecutionError(f"output table {self.table}: {spark_error_message(error)}") from None

    def _describe(self) -> dict[str, str]:
        return {str(r[0]).strip(): str(r[1] or "").strip() for r in self._sql(f"DESCRIBE TABLE EXTENDED {_name(self.table)}")}

    def exists(self) -> bool:
        return bool(self.spark.catalog.tableExists(self.table))

    def location(self) -> str | None:
        """The table's location now; ``None`` if there is no table yet. Raises
        :class:`ExecutionError` if the table is not this job's."""
        if not self.exists():
            return None
        properties = self._sql(f"SHOW TBLPROPERTIES {_name(self.table)}")
        owner = next((str(row[1]) for row in properties if str(row[0]) == JOB_PROPERTY), None)
        if owner != self.job:
            whose = f"job '{owner}'" if owner else "no tempura job (it was made otherwise)"
            raise ExecutionError(f"output table {self.table} exists and belongs to {whose}: tempura writes only a table "
                                 f"it created for job '{self.job}' (drop it, or name another table)")
        return self._describe().get("Location") or None

    @cached_property
    def root(self) -> str:
        """Where the table's files go: ``<database location>/<table>``."""
        parts = self.table.split(".")
        database = parts[-2] if len(parts) > 1 else self.spark.catalog.currentDatabase()
        found = self._sql(f"DESCRIBE DATABASE EXTENDED {quote_identifier(database)}")
        location = next((str(value) for key, value in found if str(key).strip().lower() == "location"), None)
        if not location:
            raise ExecutionError(f"output table {self.table}: Spark's catalog gives no location for database {database}")
        return f"{location.rstrip('/')}/{parts[-1]}"

    def _create(self, schema: StructType, location: str, partitioned: bool) -> None:
        columns = [f"{quote_identifier(f.name)} {f.dataType.simpleString()}" for f in schema.fields]
        partitions = ""
        if partitioned:
            columns += ["`cycle` string", "`time_point` int"]
            partitions = " PARTITIONED BY (`cycle`, `time_point`)"
        self._sql(f"CREATE TABLE {_name(self.table)} ({', '.join(columns)}) USING parquet{partitions} "
                  f"LOCATION {_literal(location)} TBLPROPERTIES ({_literal(JOB_PROPERTY)} = {_literal(self.job)})")

    def add_partition(self, schema: StructType, cycle: str, index: int, folder: str, current: str | None) -> None:
        """Make the committed ``folder`` the table's partition of ``(cycle, index)`` (creating the
        table first if there is none: ``current``, its :meth:`location`, is ``None``); a rerun
        adds it once."""
        if current is None:
            self._create(schema, self.root, partitioned=True)
        self._sql(f"ALTER TABLE {_name(self.table)} ADD IF NOT EXISTS PARTITION "
                  f"(`cycle` = {_literal(cycle)}, `time_point` = {index}) LOCATION {_literal(folder)}")
        self.spark.catalog.refreshTable(self.table)

    def version_folder(self, cycle: str, index: int, stamp: int) -> str:
        return f"{self.root}/{VERSION_PREFIX}{cycle}-t{index:03d}-{stamp}"

    def switch(self, schema: StructType, folder: str, previous: str | None) -> None:
        """Point the table at ``folder`` in one metadata change (creating the table the first
        time: ``previous``, its :meth:`location`, is ``None``), then delete its version folders
        but this one and the one it replaces (which a query begun before the switch may still be
        reading)."""
        if previous is None:
            self._create(schema, folder, partitioned=False)
        else:
            self._sql(f"ALTER TABLE {_name(self.table)} SET LOCATION {_literal(folder)}")
        self.spark.catalog.refreshTable(self.table)
        keep = {folder.rstrip("/").rsplit("/", 1)[-1]}
        if previous is not None:
            keep.add(previous.rstrip("/").rsplit("/", 1)[-1])
        for name in self.files.children(self.root):
            if name.startswith(VERSION_PREFIX) and name not in keep:
                self.files.delete(f"{self.root}/{name}")
