"""The catalog: table name → files, format, options and schema; registering tables in Spark.

A catalog is a YAML file::

    tables:
      lineitem:
        path: lineitem.parquet        # relative to the catalog file, or any URI Spark reads
        format: parquet               # parquet | csv | json | orc
        options: {}                   # passed to Spark's reader
        schema: {l_orderkey: bigint}  # optional; read from the files through Spark if absent

Errors name the catalog file, the line, the table and the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tempura.errors import CatalogError
from tempura.sql.names import quote_identifier
from tempura.yamlfile import load_yaml

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Format = Literal["parquet", "csv", "json", "orc"]


class _TableModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str
    format: Format = "parquet"
    options: dict[str, str | int | float | bool] = {}
    schema_: dict[str, str] | None = Field(default=None, alias="schema")

    @field_validator("path")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("path must not be empty")
        return value


class _CatalogModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tables: dict[str, _TableModel]


def _is_uri(path: str) -> bool:
    return "://" in path or path.startswith("file:")


@dataclass(frozen=True)
class TableSource:
    """Where a table's data lives and how Spark reads it."""

    name: str
    path: str
    format: Format = "parquet"
    options: Mapping[str, str] = field(default_factory=dict)
    schema: Mapping[str, str] | None = None

    def reader(self, spark: SparkSession) -> DataFrame:
        if not _is_uri(self.path) and not Path(self.path).exists():
            raise CatalogError(f"table '{self.name}': path does not exist: {self.path}")
        reader = spark.read.format(self.format).options(**{k: str(v) for k, v in self.options.items()})
        if self.schema is not None and self.format in ("csv", "json"):
            reader = reader.schema(", ".join(f"{quote_identifier(c)} {t}" for c, t in self.schema.items()))
        try:
            return reader.load(self.path)
        except Exception as exc:  # Spark raises Py4J/Analysis errors with long JVM traces
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise CatalogError(f"table '{self.name}': cannot read {self.format} at {self.path}: {first}") from None


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
            location = entry.path if _is_uri(entry.path) else str((base / entry.path).resolve())
            tables[name] = TableSource(
                name.lower(),
                location,
                entry.format,
                {k: str(v) for k, v in entry.options.items()},
                {c.lower(): t.lower() for c, t in entry.schema_.items()} if entry.schema_ else None,
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
    if table.format != "parquet" or _is_uri(table.path):
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
