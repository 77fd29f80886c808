"""TPC-DS through tempura, checked against Spark's own answer (``tempura tpcds-check``).

It generates TPC-DS data (once) and the statistics of the tables the chosen queries read, runs
each of the 99 queries (or those chosen) twice — through tempura's cost-based plan (the one-off
path: ``Session.optimize``, run with its join hints), and as ``spark.sql`` of the original text —
and sorts every query into one of four outcomes:

* ``equal``: tempura's result is Spark's (``tempura.runtime.compare``: the same rows as
  multisets, floating point within a relative tolerance, in Spark's order where the query orders);
* ``refused``: tempura declines the query with a :class:`~tempura.errors.TempuraError` naming an
  unsupported construct (its one-line message is kept);
* ``wrong``: tempura runs the query and its result differs (the first difference is kept);
* ``error``: anything else raised, by tempura or by Spark (the exception's type and first line),
  or a run longer than the time limit (its Spark jobs are cancelled).

It prints a line ``N equal, N refused, N wrong, N error; N non-empty results`` (queries whose
Spark result has rows) and writes the per-query outcomes, messages and row counts as JSON. A
query whose pinned broadcast failed in Spark and that ran again without it
(:func:`tempura.runtime.run_with_fallback`) gets a warning line and its ``fallback`` in the JSON.
With ``--no-analyze`` the tables are planned on file-size defaults (no ``tempura analyze``).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlglot
from rich.console import Console
from rich.progress import Progress
from rich.table import Table
from sqlglot import exp

from tempura import tpcds
from tempura.api import Session
from tempura.errors import TempuraError, UnsupportedQuery
from tempura.runtime import compare_results, get_spark, run_with_fallback
from tempura.runtime.executor import spark_own_planning

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

STATUSES = ("equal", "refused", "wrong", "error")

REPORT_FILE = "report.json"

TIMEOUT_SECONDS = 120.0  # per run of a query, Spark's or tempura's (each takes seconds at scale 0.01)


@dataclass
class QueryOutcome:
    """How one query fared: its status, the message that explains it, and the row counts."""

    name: str
    status: str
    message: str = ""
    spark_rows: int | None = None
    tempura_rows: int | None = None
    spark_seconds: float = 0.0
    tempura_seconds: float = 0.0
    optimization_seconds: float = 0.0
    fallback: str = ""  # a pinned broadcast failed in Spark and the plan ran again without it


def query_names(queries: tuple[str, ...] | list[str]) -> list[str] | None:
    """``--query`` values as TPC-DS query names (``1``, ``q1`` and ``Q01`` are ``q01``); None when
    none is given."""
    if not queries:
        return None
    names = []
    for q in queries:
        digits = q[1:] if q[:1] in ("q", "Q") else q
        if not digits.isdigit() or not 1 <= int(digits) <= tpcds.QUERY_COUNT:
            raise TempuraError(f"--query {q}: not a TPC-DS query name (known: q01 … q{tpcds.QUERY_COUNT})")
        names.append(f"q{int(digits):02d}")
    return names


def tables_read(names: list[str]) -> list[str]:
    """The TPC-DS tables queries ``names`` read (only theirs need statistics)."""
    found: set[str] = set()
    for name in names:
        tree = sqlglot.parse_one(tpcds.query_text(name), read="spark")
        found.update(table.name for table in tree.find_all(exp.Table))
    return [t for t in tpcds.TABLES if t in found]


def first_line(error: BaseException) -> str:
    """The first non-empty line of ``error``'s message."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else ""


def is_refusal(error: TempuraError) -> bool:
    """Whether ``error`` says that tempura does not support a construct of the query."""
    text = str(error).lower()
    return isinstance(error, UnsupportedQuery) or "unsupported" in text or "not supported" in text


class QueryTimeout(Exception):
    """A run took longer than the time limit and its Spark jobs were cancelled."""


def collect_within(frame: DataFrame, seconds: float, group: str) -> list[tuple[Any, ...]]:
    """The rows of ``frame``, or :class:`QueryTimeout` once its Spark jobs have run ``seconds``
    (they are cancelled then, so that one slow plan does not hold up the rest of the check)."""
    context = frame.sparkSession.sparkContext
    context.setJobGroup(group, group, interruptOnCancel=True)
    timer = threading.Timer(seconds, context.cancelJobGroup, (group,))
    timer.start()
    try:
        return [tuple(r) for r in frame.collect()]
    except Exception:
        if not timer.is_alive():
            raise QueryTimeout(f"timed out after {seconds:g} s (Spark jobs cancelled)") from None
        raise
    finally:
        timer.cancel()
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]


def check_query(session: Session, name: str, timeout: float = TIMEOUT_SECONDS) -> QueryOutcome:
    """Run TPC-DS query ``name`` through Spark and through tempura's plan, and classify it; a run
    longer than ``timeout`` seconds is an error. Spark's run plans by Spark's own settings (its join
    reordering and adaptive execution, which a tempura run before it turned off)."""
    spark = session.spark
    text = tpcds.query_text(name)
    started = time.perf_counter()
    try:
        with spark_own_planning(spark):
            expected = collect_within(spark.sql(text), timeout, f"tpcds-check {name} spark")
    except Exception as error:  # Spark itself cannot run the text: nothing to compare with
        return QueryOutcome(name, "error", f"spark: {type(error).__name__}: {first_line(error)}",
                            spark_seconds=time.perf_counter() - started)
    spark_seconds = time.perf_counter() - started
    started = time.perf_counter()
    try:
        planned = session.optimize(text)
        actual, fallback = run_with_fallback(planned.query, spark, planned.hints,
                                             lambda frame: collect_within(frame, timeout, f"tpcds-check {name} tempura"))
    except TempuraError as error:
        status = "refused" if is_refusal(error) else "error"
        message = first_line(error) if status == "refused" else f"{type(error).__name__}: {first_line(error)}"
        return QueryOutcome(name, status, message, len(expected), None, spark_seconds, time.perf_counter() - started)
    except Exception as error:
        return QueryOutcome(name, "error", f"{type(error).__name__}: {first_line(error)}", len(expected), None,
                            spark_seconds, time.perf_counter() - started)
    tempura_seconds = time.perf_counter() - started
    outcome = compare_results(expected, actual, planned.query.ordered, planned.query.order_keys)
    return QueryOutcome(name, "equal" if outcome.equal else "wrong", outcome.reason, len(expected), len(actual),
                        spark_seconds, tempura_seconds, planned.report.seconds,
                        fallback.message if fallback is not None else "")


def run_tpcds(session: Session, names: list[str], console: Console | None = None,
              timeout: float = TIMEOUT_SECONDS) -> list[QueryOutcome]:
    """:func:`check_query` for each of ``names``, with a progress bar and a line per query."""
    outcomes = []
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("TPC-DS", total=len(names))
        for name in names:
            progress.update(task, description=f"TPC-DS {name}")
            outcome = check_query(session, name, timeout)
            outcomes.append(outcome)
            progress.console.print(f"{name} {outcome.status} ({rows_text(outcome)} rows) {outcome.message}".rstrip(),
                                   markup=False, highlight=False, soft_wrap=True)
            if outcome.fallback:
                progress.console.print(f"{name} warning: {outcome.fallback}", markup=False, highlight=False,
                                       soft_wrap=True)
            progress.advance(task)
    return outcomes


def rows_text(outcome: QueryOutcome) -> str:
    """``spark rows/tempura rows``, ``-`` for a side that has none."""
    spark_rows = "-" if outcome.spark_rows is None else str(outcome.spark_rows)
    return f"{spark_rows}/{'-' if outcome.tempura_rows is None else outcome.tempura_rows}"


def summary_line(outcomes: list[QueryOutcome]) -> str:
    """``N equal, N refused, N wrong, N error; N non-empty results``."""
    counts = {status: sum(o.status == status for o in outcomes) for status in STATUSES}
    non_empty = sum(bool(o.spark_rows) for o in outcomes)
    return ", ".join(f"{counts[s]} {s}" for s in STATUSES) + f"; {non_empty} non-empty results"


def report(outcomes: list[QueryOutcome], scale: float) -> dict[str, Any]:
    """The JSON report: the summary counts and every query's outcome."""
    counts = {status: sum(o.status == status for o in outcomes) for status in STATUSES}
    return {
        "scale": scale,
        "summary": {**counts, "non_empty": sum(bool(o.spark_rows) for o in outcomes), "queries": len(outcomes),
                    "fallbacks": sum(bool(o.fallback) for o in outcomes)},
        "queries": [asdict(o) for o in outcomes],
    }


def outcome_table(outcomes: list[QueryOutcome], title: str) -> Table:
    table = Table(title=title)
    table.add_column("query")
    table.add_column("status")
    table.add_column("rows (spark/tempura)", justify="right")
    table.add_column("spark s", justify="right")
    table.add_column("tempura s", justify="right")
    table.add_column("message")
    colours = {"equal": "green", "refused": "yellow", "wrong": "red", "error": "red"}
    for o in outcomes:
        table.add_row(o.name, f"[{colours[o.status]}]{o.status}[/{colours[o.status]}]", rows_text(o),
                      f"{o.spark_seconds:.2f}", f"{o.tempura_seconds:.2f}", o.message)
    return table


def prepare(console: Console, scale: float, workdir: str | Path, names: list[str], analyze: bool) -> tuple[Session, Path]:
    """TPC-DS data at ``scale`` under ``workdir`` (generated once), a session on it whose
    statistics live in the check's folder (collected for the tables ``names`` read unless
    stored already or not ``analyze``), and that folder."""
    data_dir = Path(workdir) / "data" / f"tpcds-sf{scale:g}"
    with console.status(f"TPC-DS scale {scale:g}: generating data in {data_dir}"):
        catalog_path = tpcds.generate(scale, data_dir)
    check_dir = Path(workdir) / "tpcds-check" / f"sf{scale:g}"
    with console.status("starting Spark"):
        session = Session(catalog_path, spark=get_spark(), workdir=check_dir)
    missing = [t for t in tables_read(names) if (s := session.stats.lookup(t)).source == "default" or s.stale]
    if missing and analyze:
        with console.status(f"TPC-DS scale {scale:g}: collecting statistics of {len(missing)} tables"):
            session.analyze(missing)
    return session, check_dir


def main(scale: float = 0.01, workdir: str | Path = ".tempura", queries: list[str] | None = None,
         timeout: float = TIMEOUT_SECONDS, analyze: bool = True) -> int:
    """Run the check; returns the number of queries that are wrong or failed with an error.
    Without ``analyze``, tables without stored statistics are planned on file-size defaults."""
    console = Console()
    names = queries or tpcds.query_names()
    session, check_dir = prepare(console, scale, workdir, names, analyze)
    outcomes = run_tpcds(session, names, console, timeout)
    failed = [o for o in outcomes if o.status != "equal"]
    if failed:
        console.print(outcome_table(failed, f"TPC-DS scale {scale:g}: queries not equal to spark.sql"))
    path = check_dir / REPORT_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report(outcomes, scale), indent=2) + "\n", encoding="utf-8")
    console.print(summary_line(outcomes))
    console.print(f"wrote {path}")
    return sum(o.status in ("wrong", "error") for o in outcomes)
