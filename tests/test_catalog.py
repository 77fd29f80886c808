"""Catalog files: good ones load; bad ones get errors naming the file, the line and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from tempura.catalog import Catalog
from tempura.errors import CatalogError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "catalog.yaml"
    path.write_text(text)
    return path


def test_loads_relative_paths_and_schemas(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "tables:\n  Sales:\n    path: data/sales\n    format: csv\n    options: {header: true}\n"
        "    schema: {O_ID: string, price: bigint}\n",
    )
    catalog = Catalog.load(path)
    sales = catalog.table("sales")
    assert sales.path == str((tmp_path / "data" / "sales").resolve())
    assert sales.format == "csv"
    assert sales.options == {"header": "True"}
    assert catalog.schemas() == {"sales": {"o_id": "string", "price": "bigint"}}


def test_uri_paths_are_kept(tmp_path: Path) -> None:
    catalog = Catalog.load(write(tmp_path, "tables:\n  t: {path: 's3a://bucket/t', schema: {a: int}}\n"))
    assert catalog.table("t").path == "s3a://bucket/t"


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("tables:\n  t:\n    path: x\n    formt: csv\n", [":4:", "tables.t.formt", "unknown key"]),
        ("tables:\n  t:\n    path: x\n    format: 'a vro'\n", [":4:", "tables.t.format", "not the name of a Spark reader"]),
        ("tables:\n  t:\n    format: csv\n", [":2:", "tables.t", "either path"]),
        ("tables:\n  t:\n    table: db.t\n    format: csv\n", [":2:", "tables.t", "format is for a path"]),
        ("tables:\n  t: {path: x}\n  u: [1, 2\n", ["invalid YAML"]),
        ("- just\n- a list\n", ["mapping"]),
    ],
)
def test_bad_catalogs(tmp_path: Path, text: str, fragments: list[str]) -> None:
    path = write(tmp_path, text)
    with pytest.raises(CatalogError) as error:
        Catalog.load(path)
    message = str(error.value)
    assert str(path) in message
    for fragment in fragments:
        assert fragment in message, message


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="file not found"):
        Catalog.load(tmp_path / "nope.yaml")


def test_unknown_table(tmp_path: Path) -> None:
    catalog = Catalog.load(write(tmp_path, "tables:\n  t: {path: x, schema: {a: int}}\n"))
    with pytest.raises(CatalogError, match="unknown table 'zz'"):
        catalog.table("zz")


def test_schema_inference_needs_spark(tmp_path: Path) -> None:
    catalog = Catalog.load(write(tmp_path, "tables:\n  t: {path: x}\n"))
    assert catalog.needs_spark_for_schemas
    with pytest.raises(CatalogError, match="declares no schema"):
        catalog.schemas()


@pytest.mark.spark
def test_missing_data_path_is_named(tmp_path: Path, spark: object) -> None:
    catalog = Catalog.load(write(tmp_path, "tables:\n  t: {path: nowhere}\n"))
    with pytest.raises(CatalogError, match="table 't': path does not exist"):
        catalog.register(spark)  # type: ignore[arg-type]
