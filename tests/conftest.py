"""Shared fixtures: one SparkSession for the whole run (and its settings for tiny data), TPC-H at
scale 0.01, the --rewrite flag."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

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

    # The JIT's first tier only: the suite runs thousands of small, different Spark queries, and on
    # two cores the optimizing compiler's work costs more than its faster code saves.
    session = get_spark(master="local[2]", conf={"spark.sql.shuffle.partitions": "2",
                                                 "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"})
    yield session
    session.stop()


FAST = {
    "spark.sql.shuffle.partitions": "1",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}


@pytest.fixture(scope="module")
def fast_spark(spark: Any) -> Iterator[Any]:
    """The session with settings for tiny data (one shuffle partition, no code generation: several
    times faster on a few thousand rows), restored after the module."""
    before = {key: spark.conf.get(key, None) for key in FAST}
    for key, value in FAST.items():
        spark.conf.set(key, value)
    yield spark
    for key, value in before.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


@pytest.fixture(scope="session")
def tpch_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tempura import tpch

    return tpch.generate(0.01, tmp_path_factory.mktemp("tpch") / "sf0.01")
