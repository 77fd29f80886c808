"""TPC-H through tempura, checked against Spark's own answer (``tempura tpch-check``).

It generates TPC-H data (once) and its statistics, runs each of the 22 queries twice — through
tempura's cost-based plan (the memo's join order and algorithms, run with its join hints), and as
``spark.sql`` of the original text — and reports rows, times, the optimization time and memo
size, and whether the results are equal (see ``tempura.runtime.compare``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from tempura import tpch
from tempura.api import Session
from tempura.errors import TempuraError
from tempura.runtime import compare_results, execute, get_spark, spark_rows


@dataclass
class QueryRun:
    name: str
    rows: int
    tempura_seconds: float
    spark_seconds: float
    equal: bool
    detail: str = ""
    optimization_seconds: float = 0.0
    memo_groups: int = 0
    memo_expressions: int = 0


def run_tpch(session: Session, names: list[str], console: Console | None = None) -> list[QueryRun]:
    """Run TPC-H ``names`` through tempura's plans and through Spark, and compare each pair. The
    tempura time includes optimization, which is also reported on its own."""
    spark = session.spark
    runs = []
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("TPC-H", total=len(names))
        for name in names:
            progress.update(task, description=f"TPC-H {name}")
            text = tpch.query_text(name)
            started = time.perf_counter()
            expected = spark_rows(spark.sql(text))  # Spark's own planning, which each tempura run turns off
            spark_seconds = time.perf_counter() - started
            started = time.perf_counter()
            try:
                planned = session.optimize(text)
                actual = [tuple(r) for r in execute(planned.query, spark, planned.hints).collect()]
            except TempuraError as error:
                runs.append(QueryRun(name, 0, time.perf_counter() - started, spark_seconds, False, str(error)))
                progress.advance(task)
                continue
            tempura_seconds = time.perf_counter() - started
            query, report = planned.query, planned.report
            outcome = compare_results(expected, actual, query.ordered, query.order_keys)
            runs.append(QueryRun(name, len(actual), tempura_seconds, spark_seconds, outcome.equal, outcome.reason,
                                 report.seconds, report.groups, report.expressions))
            progress.advance(task)
    return runs


def summary_table(runs: list[QueryRun], title: str) -> Table:
    table = Table(title=title)
    table.add_column("query")
    table.add_column("rows", justify="right")
    table.add_column("tempura s", justify="right")
    table.add_column("spark s", justify="right")
    table.add_column("optimize ms", justify="right")
    table.add_column("memo groups/exprs", justify="right")
    table.add_column("equal to Spark")
    for run in runs:
        verdict = "[green]yes[/green]" if run.equal else f"[red]no[/red] {run.detail}"
        table.add_row(run.name, str(run.rows), f"{run.tempura_seconds:.2f}", f"{run.spark_seconds:.2f}",
                      f"{run.optimization_seconds * 1000:.0f}", f"{run.memo_groups}/{run.memo_expressions}", verdict)
    return table


def main(scale: float = 0.01, workdir: str | Path = ".tempura", queries: list[str] | None = None) -> int:
    """Run the demo; returns the number of queries whose results differ from Spark's."""
    console = Console()
    data_dir = Path(workdir) / "data" / f"tpch-sf{scale:g}"
    with console.status(f"TPC-H scale {scale:g}: generating data in {data_dir}"):
        catalog_path = tpch.generate(scale, data_dir)
    with console.status("starting Spark"):
        session = Session(catalog_path, spark=get_spark(), workdir=Path(workdir) / "tpch-check" / f"sf{scale:g}")
    known = [session.stats.lookup(table) for table in session.catalog.tables]
    if any(stats.source == "default" or stats.stale for stats in known):
        with console.status(f"TPC-H scale {scale:g}: collecting statistics"):
            session.analyze()
    names = queries or tpch.query_names()
    runs = run_tpch(session, names, console)
    console.print(summary_table(runs, f"TPC-H scale {scale:g}: tempura's plans against spark.sql"))
    equal = sum(r.equal for r in runs)
    slowest = max(runs, key=lambda r: r.optimization_seconds, default=None)
    if slowest is not None:
        console.print(f"longest optimization: {slowest.name}, {slowest.optimization_seconds * 1000:.0f} ms")
    console.print(f"{equal}/{len(runs)} queries equal to Spark")
    return len(runs) - equal
