"""``tempura bench shop``: the shop's four standing queries run by the clock, every delivery checked.

The ``shop_*`` scenarios (:mod:`scenarios.shop`) are a shop's own feeds: orders and their lines
placed by day only (the first 6-hour interval of each day is a quiet night), customers as a
change feed with their history, refunds that may be cancelled, and products. Their queries:

- ``shop_revenue_by_hour``: revenue per customer country and hour over a three-way join;
- ``shop_top_products``: the top ten products net of refunds through a LEFT JOIN;
- ``shop_customers``: a running distinct-customer count on an endless schedule;
- ``shop_country_rank``: the countries ranked by revenue with window functions.

Each runs **by the clock** for two days of 6-hour points under each method asked for
(``auto`` and every forced one by default): before time point ``T`` the source folders receive
the files of the interval ending at ``T`` (:func:`split_per_interval`), and a new
:class:`~tempura.scheduler.runner.Runner`, knowing only what is on disk, runs what is due at
``T``. Every delivery is compared with ``spark.sql(query)`` over that instant's snapshot of the
data, computed here from the generated files alone (:func:`snapshot_result`): rows that arrived
by ``T``, a change feed's deletions taken out. Nothing of tempura's takes part in the expected
result.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from scenarios import prepared_scenario
from tempura.runtime import compare_results
from tempura.scheduler import load_spec
from tempura.scheduler.spec import Spec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SCENARIOS = ("shop_revenue_by_hour", "shop_top_products", "shop_customers", "shop_country_rank")
START = dt.datetime(2026, 11, 30)
STEP = dt.timedelta(hours=6)
POINTS = 8  # two days of 6-hour points


def instants() -> list[dt.datetime]:
    """The time points of the two days, in order."""
    return [START + STEP * (k + 1) for k in range(POINTS)]


def split_per_interval(spark: SparkSession, spec: Spec, out: Path) -> None:
    """Write each source's generated rows apart under ``out/<source>/k=NN/``: ``k = 0`` the rows at
    or before :data:`START`, ``k`` the rows of the interval ending at the ``k``-th instant; a
    source arriving by file goes whole to ``k = 1``."""
    bounds = [START, *instants()]
    for name, source in spec.sources.items():
        frame = spark.read.parquet(spec.location(name))
        target = out / name
        shutil.rmtree(target, ignore_errors=True)
        column = source.arrival.column
        if column is None:
            frame.coalesce(1).write.parquet(str(target / "k=01"))
            continue
        for k, upper in enumerate(bounds):
            low = f"`{column}` > TIMESTAMP '{bounds[k - 1]}' AND " if k > 0 else ""
            frame.where(f"{low}`{column}` <= TIMESTAMP '{upper}'").coalesce(1).write.parquet(str(target / f"k={k:02d}"))


def snapshot_result(spark: SparkSession, spec: Spec, data: Path, at: dt.datetime
                    ) -> tuple[list[tuple[Any, ...]], list[tuple[str, str]]]:
    """``spark.sql`` of the spec's query over the generated data as it stood at ``at``: each
    source's rows that arrived by then (a change feed: its insertions less its deletions, as
    multisets, matched on every column but the operation and the arrival time); returns the rows
    and the result's columns, each its name and Spark type (:func:`columns_of`)."""
    for name, source in spec.sources.items():
        frame = spark.read.parquet(str(data / name))
        column = source.arrival.column
        if column is not None:
            frame = frame.where(f"`{column}` <= TIMESTAMP '{at}'")
        if source.changes is not None:
            op = source.changes.op_column
            kept = [c for c in frame.columns if c not in (op, column)]  # a deletion repeats the values, not the time
            frame = frame.where(f"`{op}` = 'I'").select(*kept).exceptAll(frame.where(f"`{op}` = 'D'").select(*kept))
        frame.createOrReplaceTempView(name)
    result = spark.sql(spec.sql)
    return [tuple(r) for r in result.collect()], columns_of(result)


def columns_of(frame: DataFrame) -> list[tuple[str, str]]:
    """A frame's columns: each its name and Spark type (``decimal(20,2)``, ``timestamp``)."""
    return [(f.name, f.dataType.simpleString()) for f in frame.schema.fields]


@dataclass
class Delivery:
    """One time point a method ran by the clock, and its check."""

    scenario: str
    method: str
    at: dt.datetime
    cycle: str
    index: int
    rows: int
    correct: bool
    detail: str
    seconds: float
    fragment_cpu_seconds: float

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "at": self.at.isoformat(sep=" ")}


def by_clock(spark: SparkSession, spec_path: Path, staged: Path, folder: Path, method: str) -> list[Delivery]:
    """Run ``spec_path``'s job by the clock in ``folder`` under ``method``: at each instant the
    interval's files are copied in (as new files) and a new runner runs what is due; every
    delivery is checked against :func:`snapshot_result` over the generated data."""
    from tempura.scheduler.runner import Runner

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for path in spec_path.parent.iterdir():
        if path.suffix in (".yaml", ".sql"):
            shutil.copyfile(path, folder / path.name)
    spec = load_spec(folder / "spec.yaml")
    for name in spec.sources:
        (folder / "data" / name).mkdir(parents=True)
    deliveries: list[Delivery] = []
    for k, at in enumerate(instants(), start=1):
        for name in spec.sources:
            for j in ((0, 1) if k == 1 else (k,)):
                for part in (staged / name / f"k={j:02d}").glob("*.parquet"):
                    shutil.copyfile(part, folder / "data" / name / f"k{j:02d}-{part.name}")
        began = time.perf_counter()
        runner = Runner(load_spec(folder / "spec.yaml"), spark, folder / "work", method)
        done = runner.run_due(now=at)
        seconds = time.perf_counter() - began
        for result in done:
            if result.delivered is None:
                continue
            expected, columns = snapshot_result(spark, spec, spec_path.parent / "data", at)
            delivered = spark.read.parquet(result.delivered)
            got = [tuple(r) for r in delivered.collect()]
            outcome = compare_results(expected, got)
            if outcome.equal and columns_of(delivered) != columns:  # the same rows, and the same names and types
                outcome = dataclasses.replace(outcome, equal=False,
                                              reason=f"columns {columns_of(delivered)}, not spark.sql's {columns}")
            work = result.manifest.get("run", {}).get("work", {})
            deliveries.append(Delivery(spec.name, method, at, result.cycle, result.index, len(got), outcome.equal,
                                       outcome.reason or "", round(seconds, 2),
                                       float(work.get("fragment", {}).get("cpu_seconds", 0.0))))
    return deliveries


def run(spark: SparkSession, folder: Path, scale: float, methods: Sequence[str],
        scenarios: Sequence[str] = SCENARIOS) -> list[Delivery]:
    """Every scenario under every method by the clock in ``folder`` (data at ``scale``)."""
    found: list[Delivery] = []
    for name in scenarios:
        spec_path = prepared_scenario(spark, name, folder / "scenarios", scale)
        staged = folder / "staged" / name
        split_per_interval(spark, load_spec(spec_path), staged)
        for method in methods:
            found.extend(by_clock(spark, spec_path, staged, folder / "runs" / name / method, method))
    return found


def write_report(deliveries: Sequence[Delivery], out: Path) -> Path:
    """``shop.json`` in ``out``: every delivery and its check."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "shop.json"
    path.write_text(json.dumps([d.to_json() for d in deliveries], indent=1) + "\n")
    return path
