"""The catalog: table name → files, format, options and schema; registering tables in Spark.

A catalog is a YAML file::

    tables:
      lineitem:
        path: lineitem.parquet        # relative to the catalog file, or any URI Spark reads
        format: parquet               # parquet | csv | json | orc, or any format Spark has a jar for
        options: {}                   # passed to Spark's reader
        schema: {l_orderkey: bigint}  # optional; read from the files through Spark if absent
      customer:
        table: sales.customer         # a table of Spark's catalog (a metastore) instead of a path

Errors name the catalog file, the line, the table and the key.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, Mapping

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from tempura.errors import CatalogError
from tempura.sql.names import quote_identifier
from tempura.yamlfile import load_yaml

if TYPE_CHECKING:
    import pyarrow.parquet as pq
    from pyspark.sql import DataFrame, SparkSession

Format = Literal["parquet", "csv", "json", "orc"]

# Spark's built-in file formats; any other ``format`` is passed to Spark's reader as it is, for a
# data source on the classpath (Delta, Iceberg, Avro) to read.
FILE_FORMATS = ("parquet", "csv", "json", "orc")

_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}")
_FORMAT_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")


def table_name(text: str) -> str:
    """A catalog table's name as a spec or a catalog gives it: ``name``, ``db.name`` or
    ``catalog.db.name``."""
    if not _TABLE_NAME.fullmatch(text.strip()):
        raise ValueError(f"'{text}' is not a table name such as db.name")
    return text.strip()


def format_name(text: str) -> str:
    """A reader's name: one of Spark's file formats, or one a jar on the classpath provides."""
    if not _FORMAT_NAME.fullmatch(text):
        raise ValueError(f"'{text}' is not the name of a Spark reader (parquet, csv, json, orc, or one a jar provides)")
    return text


def check_location(path: str | None, table: str | None, format: str, format_given: bool) -> None:
    """A source or table names exactly one of a ``path`` and a ``table``, and a ``format`` only
    with a path (a table's format is its own)."""
    if (path is None) == (table is None):
        raise ValueError("give either path (files) or table (a table of Spark's catalog)")
    if path is not None and not path.strip():
        raise ValueError("path must not be empty")
    if table is not None and format_given:
        raise ValueError(f"format: a table is read as its catalog says; format is for a path ('{table}' is a table)")


class _TableModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str | None = None
    table: Annotated[str, AfterValidator(table_name)] | None = None
    format: Annotated[str, AfterValidator(format_name)] = "parquet"
    options: dict[str, str | int | float | bool] = {}
    schema_: dict[str, str] | None = Field(default=None, alias="schema")

    @model_validator(mode="after")
    def _path_or_table(self) -> _TableModel:
        check_location(self.path, self.table, self.format, "format" in self.model_fields_set)
        return self


class _CatalogModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tables: dict[str, _TableModel]


def _is_uri(path: str) -> bool:
    return "://" in path or path.startswith("file:")


@dataclass(frozen=True)
class TableSource:
    """Where a table's data lives and how Spark reads it: files at ``path`` in ``format``, or
    ``table``, a table of Spark's catalog."""

    name: str
    path: str
    format: str = "parquet"
    options: Mapping[str, str] = field(default_factory=dict)
    schema: Mapping[str, str] | None = None
    table: str | None = None

    @property
    def where(self) -> str:
        """The table's data as a message names it."""
        return f"table {self.table}" if self.table is not None else f"{self.format} at {self.path}"

    def located(self, spark: SparkSession) -> TableSource:
        """This table with ``path`` and ``format`` those of its files, as Spark's catalog gives
        them for a catalog table (``format`` ``""``: only the table reads them); a path's as it is."""
        if self.table is None or self.path:  # files, or located already
            return self
        files = table_files(spark, self.table, f"table '{self.name}'")
        return replace(self, path=files.location, format=files.format or "")

    def reader(self, spark: SparkSession) -> DataFrame:
        if self.table is not None:
            return read_catalog_table(spark, self.table, f"table '{self.name}'")
        if not _is_uri(self.path) and not Path(self.path).exists():
            raise CatalogError(f"table '{self.name}': path does not exist: {self.path}")
        reader = spark.read.format(self.format).options(**{k: str(v) for k, v in self.options.items()})
        if self.schema is not None and self.format in ("csv", "json"):
            reader = reader.schema(", ".join(f"{quote_identifier(c)} {t}" for c, t in self.schema.items()))
        try:
            return reader.load(self.path)
        except Exception as exc:  # Spark raises Py4J/Analysis errors with long JVM traces
            raise CatalogError(f"table '{self.name}': cannot read {self.where}: {reader_error(exc, self.format)}") from None


def reader_error(error: BaseException, format: str | None = None) -> str:
    """Spark's error reading data, in one line; a format no jar provides says so."""
    text = str(error).strip()
    if "DATA_SOURCE_NOT_FOUND" in text or "Failed to find the data source" in text:
        return (f"Spark has no reader for format '{format}': the jar providing it is not on the classpath "
                "(add it with spark.jars or --packages)")
    return text.splitlines()[0] if text else type(error).__name__


def _catalog_error(error: Exception, table: str, who: str) -> CatalogError:
    """Spark's error about ``table`` as one line naming ``who``: a missing table says so."""
    text = str(error)
    if "TABLE_OR_VIEW_NOT_FOUND" in text or "not found" in text.lower():
        return CatalogError(f"{who}: Spark's catalog has no table {table}")
    return CatalogError(f"{who}: cannot read table {table}: {reader_error(error)}")


def read_catalog_table(spark: SparkSession, table: str, who: str) -> DataFrame:
    """``table`` of Spark's catalog, its files listed afresh (rows written since the session last
    read it are seen); a missing table is one line naming ``who``."""
    try:
        spark.catalog.refreshTable(table)
        return spark.read.table(table)
    except Exception as exc:  # AnalysisException: TABLE_OR_VIEW_NOT_FOUND, with Spark's context
        raise _catalog_error(exc, table, who) from None


@dataclass(frozen=True)
class TableFiles:
    """Where a catalog table's files are: its location, the format to read one of its files
    in (``None``: only the table reads them, as a Hive text table's), its partition columns."""

    location: str
    format: str | None
    partition_columns: tuple[str, ...]


def table_files(spark: SparkSession, table: str, who: str) -> TableFiles:
    """Where ``table``'s files are, from Spark's catalog (a missing table, a view, or a table
    without files, is one line naming ``who``)."""
    try:
        rows = spark.sql(f"DESCRIBE TABLE EXTENDED {table}").collect()
    except Exception as exc:  # AnalysisException: TABLE_OR_VIEW_NOT_FOUND, with Spark's context
        raise _catalog_error(exc, table, who) from None
    info = {str(r[0]).strip(): str(r[1] or "").strip() for r in rows}
    partitions: list[str] = []
    in_partitions = False
    for r in rows:
        name = str(r[0]).strip()
        if name == "# Partition Information":
            in_partitions = True
        elif in_partitions and name.startswith("#"):
            continue
        elif in_partitions and name:
            partitions.append(name.lower())
        elif in_partitions:
            break
    location = info.get("Location")
    if not location or info.get("Type", "").upper() == "VIEW":
        raise CatalogError(f"{who}: table {table} has no files of its own (a view?); give a table or a path")
    provider = info.get("Provider", "").lower()
    if provider == "hive":
        serde = info.get("Serde Library", "").lower()  # a Hive table stored as parquet or ORC reads as such
        found = next((f for f in ("parquet", "orc") if f in serde), None)
    else:
        found = provider if provider in FILE_FORMATS else None
    return TableFiles(location, found, tuple(partitions))


class Catalog:
    """A set of named tables."""

    def __init__(self, tables: Mapping[str, TableSource], origin: str | None = None) -> None:
        self.tables = {name.lower(): table for name, table in tables.items()}
        self.origin = origin
        self._inferred: dict[str, dict[str, str]] = {}

    @classmethod
    def load(cls, path: str | Path) -> Catalog:
        document = load_yaml(path, CatalogError)
        if not isinstance(document.data, dict):
            raise CatalogError(f"{document.path}: a catalog is a mapping with a 'tables' key")
        try:
            model = _CatalogModel.model_validate(document.data)
        except ValidationError as error:
            raise CatalogError(document.validation_message(error)) from None
        base = document.path.resolve().parent
        tables = {}
        for name, entry in model.tables.items():
            location = ""  # a catalog table's: the catalog's (TableSource.located)
            if entry.path is not None:
                location = entry.path if _is_uri(entry.path) else str((base / entry.path).resolve())
            tables[name] = TableSource(
                name.lower(),
                location,
                entry.format,
                {k: str(v) for k, v in entry.options.items()},
                {c.lower(): t.lower() for c, t in entry.schema_.items()} if entry.schema_ else None,
                entry.table,
            )
        return cls(tables, origin=str(document.path))

    def table(self, name: str) -> TableSource:
        try:
            return self.tables[name.lower()]
        except KeyError:
            where = f" in {self.origin}" if self.origin else ""
            raise CatalogError(f"unknown table '{name}'{where}") from None

    @property
    def needs_spark_for_schemas(self) -> bool:
        """Whether some table declares no schema, so that Spark must read it from the files."""
        return any(t.schema is None and name not in self._inferred for name, t in self.tables.items())

    def schemas(self, spark: SparkSession | None = None) -> dict[str, dict[str, str]]:
        """Column types of every table: declared ones, else read from the files through Spark."""
        out: dict[str, dict[str, str]] = {}
        for name, table in self.tables.items():
            if table.schema is not None:
                out[name] = dict(table.schema)
            elif name in self._inferred:
                out[name] = self._inferred[name]
            elif spark is not None:
                df = table.reader(spark)
                self._inferred[name] = {f.name.lower(): f.dataType.simpleString() for f in df.schema.fields}
                out[name] = self._inferred[name]
            else:
                raise CatalogError(f"table '{name}' declares no schema; reading it needs a Spark session")
        return out

    def footer_schemas(self) -> tuple[dict[str, dict[str, str]], list[str]]:
        """Column types without Spark: declared ones, else read from a parquet footer
        (:func:`footer_schema`); and the tables whose types neither gives."""
        out: dict[str, dict[str, str]] = {}
        unread = []
        for name, table in self.tables.items():
            found = dict(table.schema) if table.schema is not None else self._inferred.get(name) or footer_schema(table)
            if found is None:
                unread.append(name)
            else:
                out[name] = found
        return out, unread

    def register(self, spark: SparkSession) -> None:
        """Make every table visible to Spark SQL under its name (a temporary view)."""
        for name, table in self.tables.items():
            table.reader(spark).createOrReplaceTempView(quote_identifier(name))


def footer_schema(table: TableSource) -> dict[str, str] | None:
    """The column types Spark would infer for a local parquet table, read from one data file's
    footer with pyarrow (types named as Spark names them); ``None`` when it cannot be read so:
    another format, a URI, no data file, or partition folders (``key=value``), whose columns
    only Spark's discovery knows."""
    if table.table is not None or table.format != "parquet" or _is_uri(table.path):
        return None
    root = Path(table.path)
    if root.is_dir():
        files = sorted(p for p in root.rglob("*.parquet")
                       if not any(part.startswith(("_", ".")) for part in p.relative_to(root).parts))
        if not files or any("=" in part for f in files for part in f.relative_to(root).parts[:-1]):
            return None
        first = files[0]
    elif root.is_file():
        first = root
    else:
        return None
    try:
        import pyarrow.parquet as pq
        from pyspark.sql.pandas.types import from_arrow_type

        schema = pq.read_schema(first)
        return {field.name.lower(): from_arrow_type(field.type).simpleString() for field in schema}
    except Exception as error:  # a damaged footer, or a type Spark has no name for
        raise CatalogError(f"{first}: cannot read the parquet footer: {error}".splitlines()[0]) from None


def local_data_files(table: TableSource) -> list[Path] | None:
    """The data files of a table at a local path, as Spark's readers find them: the file
    itself, or every file under the folder but hidden ones (a part of the path starting with
    ``.`` or ``_``: Spark's and Hadoop's markers); ``None`` for a catalog table or a URI."""
    if table.table is not None or _is_uri(table.path):
        return None
    root = Path(table.path)
    if root.is_file():
        return [root]
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*") if p.is_file()
                  and not any(part.startswith(("_", ".")) for part in p.relative_to(root).parts))


def parquet_footers(table: TableSource) -> list[tuple[Path, pq.FileMetaData]]:
    """The footer of every data file of a local parquet table (:func:`local_data_files`), read
    with pyarrow, no Spark; raises :class:`CatalogError` naming the first file whose footer
    cannot be read (a damaged or truncated file, or one of another format). Empty for another
    format, a catalog table or a URI."""
    if table.format != "parquet":
        return []
    import pyarrow.parquet as pq

    out = []
    for path in local_data_files(table) or []:
        try:
            out.append((path, pq.read_metadata(path)))
        except Exception as error:  # pyarrow's ArrowInvalid, OSError: the file is no parquet it can read
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise CatalogError(f"{path}: cannot read the parquet footer: {first}") from None
    return out


def column_minimum(footers: list[tuple[Path, pq.FileMetaData]], column: str) -> object | None:
    """The least value of ``column`` (case-insensitive) over every row group of ``footers``, from
    their statistics; ``None`` when a file lacks the column (a partition column) or a row group
    has no minimum recorded (statistics not written, or only nulls): then only the data can tell."""
    least: object | None = None
    for _, metadata in footers:
        names = [metadata.schema.column(i).path.lower() for i in range(metadata.num_columns)]
        if column.lower() not in names:
            return None
        index = names.index(column.lower())
        for group in range(metadata.num_row_groups):
            chunk = metadata.row_group(group)
            if chunk.num_rows == 0:
                continue
            stats = chunk.column(index).statistics
            if stats is None or not stats.has_min_max:
                return None
            found = stats.min
            if isinstance(found, dt.datetime) and found.tzinfo is not None:  # an instant: as Spark shows it, in UTC
                found = found.astimezone(dt.timezone.utc).replace(tzinfo=None)
            try:
                least = found if least is None or found < least else least
            except TypeError:
                return None
    return least
