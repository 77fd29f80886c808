"""TPC-DS: the declared schema against generated parquet files, every query through tempura's SQL
front end (bound, or refused with a clean error), ``tempura tpcds-gen``, and a small
``tpcds-check`` run on Spark."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner

from tempura import tpcds
from tempura.errors import TempuraError, UnsupportedQuery
from tempura.sql import parse_query


@pytest.fixture(scope="module")
def tpcds_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TPC-DS at scale 0.01, generated once for the module; the catalog's path."""
    return tpcds.generate(0.01, tmp_path_factory.mktemp("tpcds") / "sf0.01")


def spark_type_name(kind: pa.DataType) -> str:
    """The Spark SQL name of a parquet column's arrow type, for the types TPC-DS uses."""
    if pa.types.is_int32(kind):
        return "int"
    if pa.types.is_int64(kind):
        return "bigint"
    if pa.types.is_decimal(kind):
        return f"decimal({kind.precision},{kind.scale})"
    if pa.types.is_date32(kind):
        return "date"
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return "string"
    return str(kind)


def test_tables_and_queries_are_complete() -> None:
    assert len(tpcds.TABLES) == 24
    assert tpcds.query_names() == [f"q{i:02d}" for i in range(1, 100)]
    assert tpcds.query_text("7") == tpcds.query_text("q07")
    with pytest.raises(TempuraError, match="unknown TPC-DS query"):
        tpcds.query_text("q100")


def test_declared_schema_matches_generated_files(tpcds_data: Path) -> None:
    catalog = yaml.safe_load(tpcds_data.read_text(encoding="utf-8"))
    assert list(catalog["tables"]) == list(tpcds.TABLES)
    for name in tpcds.TABLES:
        entry = catalog["tables"][name]
        schema = pq.read_schema(tpcds_data.parent / entry["path"])
        actual = {field.name: spark_type_name(field.type) for field in schema}
        assert actual == tpcds.SCHEMA[name], name
        assert entry["schema"] == tpcds.SCHEMA[name], name


def test_generated_tables_have_rows(tpcds_data: Path) -> None:
    for name in ("store_sales", "date_dim", "item", "customer"):
        assert pq.read_metadata(tpcds_data.parent / f"{name}.parquet").num_rows > 0, name


def test_generate_keeps_complete_data_and_refuses_a_foreign_folder(tpcds_data: Path, tmp_path: Path) -> None:
    assert tpcds.generate(0.01, tpcds_data.parent) == tpcds_data
    foreign = tmp_path / "other"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("x", encoding="utf-8")
    with pytest.raises(tpcds.DataGenerationError, match="not a TPC-DS data folder"):
        tpcds.generate(0.01, foreign)
    with pytest.raises(tpcds.DataGenerationError, match="scale must be positive"):
        tpcds.generate(0, tmp_path / "none")


@pytest.mark.parametrize("name", tpcds.query_names())
def test_query_binds_or_is_refused_cleanly(name: str) -> None:
    """Every query binds against the declared schema without Spark, or is refused as an
    unsupported construct in one located line; never a bind error nor another exception."""
    text = tpcds.query_text(name)
    try:
        query = parse_query(text, tpcds.SCHEMA)
    except UnsupportedQuery as error:
        assert str(error).startswith("unsupported: ") and "\n" not in str(error).strip(), f"{name}: {error!r}"
        return
    assert query.names


def test_tpcds_gen_command_writes_a_catalog(tmp_path: Path) -> None:
    from tempura.cli import main

    out = tmp_path / "data"
    result = CliRunner().invoke(main, ["tpcds-gen", "--scale", "0.01", "--out", str(out)])
    assert result.exit_code == 0, result.output
    catalog = yaml.safe_load((out / tpcds.CATALOG_FILE).read_text(encoding="utf-8"))
    assert set(catalog["tables"]) == set(tpcds.TABLES)
    assert all((out / f"{t}.parquet").is_file() for t in tpcds.TABLES)
    assert "wrote TPC-DS scale 0.01" in result.output


@pytest.mark.spark
def test_tpcds_check_runs_queries_equal_to_spark(spark: Any, tmp_path: Path, tpcds_data: Path) -> None:
    """Three queries tempura plans (over three tables, the only ones analysed), each equal to
    Spark's non-empty result at scale 0.01."""
    from benchmarks.cli import tpcds_check

    data = tmp_path / "data" / "tpcds-sf0.01"
    data.parent.mkdir()
    data.symlink_to(tpcds_data.parent, target_is_directory=True)
    result = CliRunner().invoke(
        tpcds_check, ["--scale", "0.01", "--workdir", str(tmp_path), "--query", "q42", "--query", "52",
                      "--query", "Q55"],
    )
    assert result.exit_code == 0, result.output
    work = tmp_path / "tpcds-check" / "sf0.01"
    report = json.loads((work / "report.json").read_text(encoding="utf-8"))
    assert [(q["name"], q["status"]) for q in report["queries"]] == [("q42", "equal"), ("q52", "equal"),
                                                                      ("q55", "equal")]
    assert all(q["spark_rows"] and q["spark_rows"] == q["tempura_rows"] for q in report["queries"])
    assert "3 equal, 0 refused, 0 wrong, 0 error; 3 non-empty results" in result.output
    assert sorted(p.stem for p in (work / "stats").glob("*.json")) == ["date_dim", "item", "store_sales"]
