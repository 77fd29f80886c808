"""Shared fixtures: one SparkSession for the whole run (and its settings for tiny data), TPC-H at
scale 0.01, the --rewrite flag; no JVM under ``-m "not spark"``; and the order test files run in: the longest first, by the seconds
each took when last measured (``file_seconds.json``, rewritten by ``--record-file-seconds``), so
that parallel workers finish together instead of one running a long file at the end."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--rewrite", action="store_true", default=False, help="rewrite data-driven test expectations"
    )
    parser.addoption(
        "--record-file-seconds", action="store_true", default=False,
        help=f"write each test file's seconds (setup, call and teardown) to tests/{FILE_SECONDS.name}",
    )


FILE_SECONDS = Path(__file__).with_name("file_seconds.json")
_measured: defaultdict[str, float] = defaultdict(float)


SPARK_FIXTURES = ("spark", "fast_spark")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test that uses the session (through any fixture) marked ``spark``, so that ``-m "not
    spark"`` leaves it out whether or not its file says so. Tests marked ``cluster`` left out unless ``-m`` names that marker; then the longest files
    first (a file not measured yet last), each file's tests in their own order: the sort is
    stable and a file's tests share one key."""
    for item in items:
        uses = getattr(item, "fixturenames", ())
        if any(name in uses for name in SPARK_FIXTURES) and item.get_closest_marker("spark") is None:
            item.add_marker(pytest.mark.spark)
    if "cluster" not in (config.getoption("markexpr", "") or ""):
        left_out = [item for item in items if item.get_closest_marker("cluster") is not None]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = [item for item in items if item.get_closest_marker("cluster") is None]
    if not FILE_SECONDS.exists():
        return
    seconds = json.loads(FILE_SECONDS.read_text())
    items.sort(key=lambda item: -float(seconds.get(item.path.name, 0.0)))


def pytest_configure(config: pytest.Config) -> None:
    """Under ``-m "not spark"`` no JVM may start: a test that reaches Spark without the marker
    (through a helper rather than a fixture) fails, naming the cause, instead of quietly
    starting one."""
    markexpr = (config.getoption("markexpr", "") or "").replace(" ", "")
    if "notspark" not in markexpr:
        return
    import pyspark.core.context as context

    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError('a test run with -m "not spark" started a JVM: mark the test spark')

    context.launch_gateway = refuse


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _measured[report.nodeid.split("::", 1)[0].rsplit("/", 1)[-1]] += report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    # Only where reports are gathered: the single process, or the parallel run's controller.
    if config.getoption("--record-file-seconds") and not hasattr(config, "workerinput") and _measured:
        ranked = sorted(_measured.items(), key=lambda kv: (-kv[1], kv[0]))
        FILE_SECONDS.write_text(json.dumps({name: round(sec, 1) for name, sec in ranked}, indent=1) + "\n")


@pytest.fixture(scope="session")
def rewrite(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--rewrite"))


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from tempura.runtime import get_spark

    # The JIT's first tier only: the suite runs thousands of small, different Spark queries, and on
    # two cores the optimizing compiler's work costs more than its faster code saves.
    session = get_spark(master="local[2]", conf={"spark.sql.shuffle.partitions": "2",
                                                 "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m"})
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
