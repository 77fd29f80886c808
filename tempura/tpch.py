"""Built-in TPC-H data and queries: generation through ``tpchgen-cli`` and a catalog for it.

The 22 queries ship with the package (``data/tpch/queries``). Data is written by the
``tpchgen-cli`` package into a temporary folder that is renamed into place only when complete,
so an interrupted generation never leaves a half-written data set behind.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

import yaml

from tempura.errors import TempuraError

TABLES = ("customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier")

# Column types as tpchgen-cli writes them to parquet (checked against the files by the tests).
SCHEMA: dict[str, dict[str, str]] = {
    "customer": {
        "c_custkey": "bigint", "c_name": "string", "c_address": "string", "c_nationkey": "bigint",
        "c_phone": "string", "c_acctbal": "decimal(15,2)", "c_mktsegment": "string", "c_comment": "string",
    },
    "lineitem": {
        "l_orderkey": "bigint", "l_partkey": "bigint", "l_suppkey": "bigint", "l_linenumber": "int",
        "l_quantity": "decimal(15,2)", "l_extendedprice": "decimal(15,2)", "l_discount": "decimal(15,2)",
        "l_tax": "decimal(15,2)", "l_returnflag": "string", "l_linestatus": "string", "l_shipdate": "date",
        "l_commitdate": "date", "l_receiptdate": "date", "l_shipinstruct": "string", "l_shipmode": "string",
        "l_comment": "string",
    },
    "nation": {"n_nationkey": "bigint", "n_name": "string", "n_regionkey": "bigint", "n_comment": "string"},
    "orders": {
        "o_orderkey": "bigint", "o_custkey": "bigint", "o_orderstatus": "string", "o_totalprice": "decimal(15,2)",
        "o_orderdate": "date", "o_orderpriority": "string", "o_clerk": "string", "o_shippriority": "int",
        "o_comment": "string",
    },
    "part": {
        "p_partkey": "bigint", "p_name": "string", "p_mfgr": "string", "p_brand": "string", "p_type": "string",
        "p_size": "int", "p_container": "string", "p_retailprice": "decimal(15,2)", "p_comment": "string",
    },
    "partsupp": {
        "ps_partkey": "bigint", "ps_suppkey": "bigint", "ps_availqty": "int", "ps_supplycost": "decimal(15,2)",
        "ps_comment": "string",
    },
    "region": {"r_regionkey": "bigint", "r_name": "string", "r_comment": "string"},
    "supplier": {
        "s_suppkey": "bigint", "s_name": "string", "s_address": "string", "s_nationkey": "bigint",
        "s_phone": "string", "s_acctbal": "decimal(15,2)", "s_comment": "string",
    },
}

CATALOG_FILE = "catalog.yaml"


class DataGenerationError(TempuraError):
    """TPC-H data could not be generated."""


def query_names() -> list[str]:
    """``q01`` … ``q22``."""
    return [f"q{i:02d}" for i in range(1, 23)]


def query_text(name: str) -> str:
    """The text of TPC-H query ``name`` (``q01`` … ``q22``, or ``1`` … ``22``)."""
    key = f"q{int(name.lstrip('qQ')):02d}" if name.lstrip("qQ").isdigit() else name
    if key not in query_names():
        raise TempuraError(f"unknown TPC-H query '{name}' (expected q01 … q22)")
    return resources.files("tempura").joinpath(f"data/tpch/queries/{key}.sql").read_text(encoding="utf-8")


def _tpchgen() -> str:
    beside_python = Path(sys.executable).with_name("tpchgen-cli")
    if beside_python.exists():
        return str(beside_python)
    found = shutil.which("tpchgen-cli")
    if found is None:
        raise DataGenerationError("tpchgen-cli is not installed (pip install tpchgen-cli)")
    return found


def write_catalog(directory: Path) -> Path:
    """Write ``catalog.yaml`` for the parquet files in ``directory``."""
    tables = {
        name: {"path": f"{name}.parquet", "format": "parquet", "schema": SCHEMA[name]} for name in TABLES
    }
    path = directory / CATALOG_FILE
    path.write_text(yaml.safe_dump({"tables": tables}, sort_keys=False), encoding="utf-8")
    return path


def generate(scale: float, out: str | Path) -> Path:
    """TPC-H at ``scale`` as parquet in ``out`` with a catalog; returns the catalog's path.

    Existing complete data in ``out`` is kept.
    """
    target = Path(out)
    if (target / CATALOG_FILE).exists() and all((target / f"{t}.parquet").exists() for t in TABLES):
        return target / CATALOG_FILE
    if scale <= 0:
        raise DataGenerationError(f"scale must be positive, got {scale}")
    if target.exists() and any(target.iterdir()):
        raise DataGenerationError(f"{target} exists and is not a TPC-H data folder; choose an empty or new folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        command = [_tpchgen(), "parquet", "-s", f"{scale:g}", "--output-dir", str(staging)]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            detail = (result.stderr or result.stdout).strip().splitlines()
            raise DataGenerationError(f"tpchgen-cli failed: {detail[-1] if detail else result.returncode}")
        write_catalog(staging)
        if target.exists():
            target.rmdir()
        os.replace(staging, target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target / CATALOG_FILE
