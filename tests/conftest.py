"""Shared fixtures: one SparkSession for the whole run, TPC-H at scale 0.01, the --rewrite flag."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--rewrite", action="store_true", default=False, help="rewrite data-driven test expectations"
    )


@pytest.fixture(scope="session")
def rewrite(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--rewrite"))


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from tempura.runtime import get_spark

    session = get_spark(master="local[2]", conf={"spark.sql.shuffle.partitions": "2"})
    yield session
    session.stop()


@pytest.fixture(scope="session")
def tpch_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tempura import tpch

    return tpch.generate(0.01, tmp_path_factory.mktemp("tpch") / "sf0.01")
