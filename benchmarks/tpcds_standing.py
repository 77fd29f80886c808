"""TPC-DS as standing queries, checked against Spark (``tempura tpcds-check --standing``).

The fact tables (``*_sales``, ``*_returns``, ``inventory``) arrive by their date key over 4 time
points: the date keys of the sales span one calendar, cut into 4 equal ranges, and a fact row
lands at the time point whose range holds its date key (a row without one lands at the first).
The dimensions land whole at the first time point. Each query is planned as a standing query
under every method (``plan_methods``: the forced methods and ``auto``), each distinct plan runs
on Spark time point by time point, and every delivered result is compared with ``spark.sql`` of
the query over that time point's snapshot. A query's outcome is

* ``equal``: every method's result equals Spark's at every time point;
* ``refused``: tempura declines the query (its one-line reason is kept);
* ``wrong``: some method's result differs at some time point (the first difference is kept);
* ``error``: anything else raised.

For each query the report lists the methods planned, how many distinct plans they make, the
methods ``auto`` mixes, and each forced method's one-line note where it cannot apply.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from rich.console import Console
from rich.progress import Progress

from benchmarks.tpcds_check import STATUSES, prepare, tables_read
from tempura import tpcds
from tempura.cost.vector import Objective
from tempura.errors import TempuraError
from tempura.optimizer import METHODS, Arrival, Optimizer, plan_methods
from tempura.runtime import compare_results
from tempura.runtime.multitime import PlanExecutor, reference
from tempura.runtime.sources import SourceData
from tempura.sql import parse_query
from tempura.stats import Estimator
from tempura.tvr import TimePoints

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tempura.stats.estimate import TableLookup

TIMES = (1, 2, 3, 4)

STANDING_REPORT = "standing-report.json"

ARRIVAL = "tempura_arrival"
"""The hidden column holding each row's time point."""

FACT_DATE_KEYS = {
    "store_sales": "ss_sold_date_sk",
    "store_returns": "sr_returned_date_sk",
    "catalog_sales": "cs_sold_date_sk",
    "catalog_returns": "cr_returned_date_sk",
    "web_sales": "ws_sold_date_sk",
    "web_returns": "wr_returned_date_sk",
    "inventory": "inv_date_sk",
}


@dataclass
class StandingOutcome:
    """How one query fared as a standing query."""

    name: str
    status: str
    message: str = ""
    methods: list[str] = field(default_factory=list)
    distinct_plans: int = 0
    auto_methods: list[str] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)
    non_empty: bool = False
    seconds: float = 0.0


def calendar(spark: SparkSession, catalog_dir: Path) -> tuple[int, int]:
    """The range of the sales' date keys: the calendar the facts arrive over."""
    frame = spark.read.parquet(str(catalog_dir / "store_sales.parquet"))
    low, high = frame.selectExpr("min(ss_sold_date_sk)", "max(ss_sold_date_sk)").first()  # type: ignore[misc]
    return int(low), int(high)


def sources(spark: SparkSession, catalog_dir: Path, tables: list[str]) -> dict[str, SourceData]:
    """Each table as a source whose rows arrive over :data:`TIMES` (see the module docstring)."""
    low, high = calendar(spark, catalog_dir)
    width = max((high - low + 1) / len(TIMES), 1.0)
    out = {}
    for table in tables:
        frame = spark.read.parquet(str(catalog_dir / f"{table}.parquet"))
        key = FACT_DATE_KEYS.get(table)
        if key is None:
            at = "1"
        else:
            at = (f"CASE WHEN {key} IS NULL THEN 1 "
                  f"ELSE LEAST({len(TIMES)}, GREATEST(1, CAST(FLOOR(({key} - {low}) / {width}) AS INT) + 1)) END")
        out[table] = SourceData(table, frame.selectExpr("*", f"{at} AS {ARRIVAL}"), ARRIVAL, time_values=TIMES,
                                hidden=(ARRIVAL,))
    return out


def arrival() -> Arrival:
    """Facts spread evenly over the time points; dimensions whole at the first."""

    def fraction(table: str, start: int, end: int) -> float:
        if table.lower() in FACT_DATE_KEYS:
            return (end - start) / len(TIMES)
        return 1.0 if start == 0 else 0.0

    return Arrival(fraction, lambda _table: True)


def _plan_key(plan: Any) -> tuple[Any, ...]:
    return (plan.output, tuple((f.time, f.delivers, f.keeps, f.sql()) for f in plan.fragments))


def check_standing(spark: SparkSession, catalog_dir: Path, lookup: TableLookup, name: str,
                   methods: Iterable[str] = tuple(METHODS)) -> StandingOutcome:
    """Plan TPC-DS query ``name`` as a standing query under ``methods``, run every distinct plan
    and compare each delivered result with ``spark.sql`` on its snapshot."""
    started = time.perf_counter()
    text = tpcds.query_text(name)
    outcome = StandingOutcome(name, "equal")
    try:
        query = parse_query(text, tpcds.SCHEMA)
        optimizer = Optimizer(Estimator(lookup), arrival())
        errors: dict[str, TempuraError] = {}
        plans = plan_methods(optimizer, query, text, TimePoints(TIMES, TIMES), Objective.deadline(len(TIMES)), methods,
                             errors=errors)
    except TempuraError as error:
        outcome.status, outcome.message = "refused", str(error).splitlines()[0]
        outcome.seconds = time.perf_counter() - started
        return outcome
    outcome.methods = list(plans)
    outcome.notes = {m: p.notes[-1] for m, p in plans.items() if m != "auto" and p.notes}
    outcome.notes.update({m: str(e).splitlines()[0] for m, e in errors.items()})
    if "auto" in plans:
        outcome.auto_methods = list(plans["auto"].methods)
    data = sources(spark, catalog_dir, tables_read([name]))
    try:
        expected = {v: reference(spark, text, data, v) for v in TIMES}
        outcome.non_empty = any(expected.values())
        runs: dict[tuple[Any, ...], Any] = {}
        with PlanExecutor(spark, data) as executor:
            for method, plan in plans.items():
                key = _plan_key(plan)
                if key not in runs:
                    runs[key] = executor.run(plan)
                for v in TIMES:
                    result = compare_results(expected[v], runs[key].results[v], query.ordered, query.order_keys)
                    if not result.equal:
                        outcome.status = "wrong"
                        outcome.message = f"{method} at t{v}: {result.reason}"
                        break
                if outcome.status == "wrong":
                    break
        outcome.distinct_plans = len(runs)
    except TempuraError as error:
        outcome.status, outcome.message = "error", f"{type(error).__name__}: {str(error).splitlines()[0]}"
    except Exception as error:  # Spark failures: kept as the outcome's first line (the JVM's own)
        java = getattr(error, "java_exception", None)
        lines = [line for line in str(java if java is not None else error).splitlines() if line.strip()]
        outcome.status, outcome.message = "error", f"{type(error).__name__}: {lines[0] if lines else ''}"
    outcome.seconds = time.perf_counter() - started
    return outcome


def summary_line(outcomes: list[StandingOutcome]) -> str:
    """``N equal, N refused, N wrong, N error; N non-empty results``."""
    counts = {status: sum(o.status == status for o in outcomes) for status in STATUSES}
    non_empty = sum(o.non_empty for o in outcomes)
    return ", ".join(f"{counts[s]} {s}" for s in STATUSES) + f"; {non_empty} non-empty results"


def main(scale: float = 0.01, workdir: str | Path = ".tempura", queries: list[str] | None = None,
         analyze: bool = True) -> int:
    """Run the standing check; returns the number of queries that are wrong or failed."""
    console = Console()
    names = queries or tpcds.query_names()
    session, check_dir = prepare(console, scale, workdir, names, analyze)
    catalog_dir = Path(workdir) / "data" / f"tpcds-sf{scale:g}"
    outcomes = []
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("TPC-DS standing", total=len(names))
        for name in names:
            progress.update(task, description=f"TPC-DS standing {name}")
            outcome = check_standing(session.spark, catalog_dir, session.stats.lookup, name)
            outcomes.append(outcome)
            mixed = f" auto: {'+'.join(outcome.auto_methods)}" if outcome.auto_methods else ""
            progress.console.print(
                f"{name} {outcome.status} ({len(outcome.methods)} methods, {outcome.distinct_plans} distinct plans"
                f"{mixed}; {outcome.seconds:.0f} s) {outcome.message}".rstrip(),
                markup=False, highlight=False, soft_wrap=True)
            progress.advance(task)
    path = check_dir / STANDING_REPORT
    path.parent.mkdir(parents=True, exist_ok=True)
    counts = {status: sum(o.status == status for o in outcomes) for status in STATUSES}
    document = {"scale": scale, "time_points": len(TIMES),
                "summary": {**counts, "non_empty": sum(o.non_empty for o in outcomes), "queries": len(outcomes)},
                "queries": [asdict(o) for o in outcomes]}
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    console.print(summary_line(outcomes))
    console.print(f"wrote {path}")
    return sum(o.status in ("wrong", "error") for o in outcomes)
