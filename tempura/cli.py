"""The ``tempura`` command line: a thin layer over the Python API.

User errors print one line (``error: …``) and exit with status 2.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
from pathlib import Path
from typing import Any, Callable, Mapping, TypeVar

import click

from tempura.errors import TempuraError

F = TypeVar("F", bound=Callable[..., Any])


METHOD_CHOICES = ["auto", "batch", "ivm", "streaming", "ojv", "higher-order"]


def user_errors(fn: F) -> F:
    """Report :class:`TempuraError` as one line on stderr and exit 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TempuraError as error:
            click.echo(f"error: {error}", err=True)
            sys.exit(2)

    return wrapper  # type: ignore[return-value]


def _query_names(queries: tuple[str, ...], extra: tuple[str, ...] = ()) -> list[str] | None:
    """``--query`` values as TPC-H query names (``1``, ``q1`` and ``Q01`` are ``q01``), or the
    ``extra`` names as they are; None when none is given."""
    if not queries:
        return None
    names = []
    for q in queries:
        if q in extra:
            names.append(q)
            continue
        digits = q[1:] if q[:1] in ("q", "Q") else q
        if not digits.isdigit() or not 1 <= int(digits) <= 22:
            known = ", ".join([*extra, "q01 … q22"])
            raise TempuraError(f"--query {q}: not a query name (known: {known})")
        names.append(f"q{int(digits):02d}")
    return names


def _read_sql(sql: str) -> str:
    """SQL given inline, or ``@file.sql`` to read it from a file."""
    if sql.startswith("@"):
        path = Path(sql[1:])
        try:
            return path.read_text(encoding="utf-8")
        except OSError as error:
            raise TempuraError(f"{path}: cannot read SQL file: {error.strerror}") from None
    return sql


catalog_option = click.option(
    "--catalog", "catalog", required=True, type=click.Path(dir_okay=False), help="Catalog YAML file."
)
dialect_option = click.option("--dialect", default="spark", show_default=True, help="sqlglot dialect of the SQL.")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tempura")
def main() -> None:
    """tempura: a cost-based, incremental query optimizer for standing queries on Spark."""


@main.command()
@catalog_option
@dialect_option
@click.argument("sql")
@click.option("--out", type=click.Path(), help="Write the result here instead of printing it.")
@click.option("--format", "fmt", type=click.Choice(["csv", "parquet", "json"]), default="csv", show_default=True)
@click.option("--limit", default=50, show_default=True, help="Rows to print.")
@user_errors
def query(catalog: str, dialect: str, sql: str, out: str | None, fmt: str, limit: int) -> None:
    """Run SQL (or @file.sql) with tempura's plan."""
    from rich.console import Console
    from rich.table import Table

    from tempura.api import Session

    session = Session(catalog, dialect=dialect)
    frame = session.sql(_read_sql(sql))
    if out:
        from tempura.runtime.outputs import write_output

        write_output(frame, out, fmt)
        click.echo(f"wrote {out} ({fmt})")
        return
    rows = frame.limit(limit + 1).collect()
    table = Table()
    for name in frame.columns:
        table.add_column(name)
    for row in rows[:limit]:
        table.add_row(*["NULL" if v is None else str(v) for v in row])
    Console().print(table)
    if len(rows) > limit:
        click.echo(f"(first {limit} rows shown)")


def _cost_constants(values: tuple[str, ...], base: Mapping[str, object] | None = None) -> tuple[Any, set[str]]:
    """The cost constants — the defaults, then ``base`` (a spec's ``cost``), then ``--cost`` —
    and the names ``base`` and ``--cost`` set."""
    from tempura.cost import CostConstants

    pairs: dict[str, object] = dict(base or {})
    for item in values:
        if "=" not in item:
            raise TempuraError(f"--cost takes NAME=VALUE, got '{item}'")
        name, value = item.split("=", 1)
        pairs[name.strip()] = value.strip()
    return CostConstants.from_mapping(pairs), set(pairs)


workdir_option = click.option(
    "--workdir",
    default=".tempura",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Where statistics and state are kept.",
)


@main.command()
@catalog_option
@dialect_option
@workdir_option
@click.argument("sql")
@click.option("--sql", "show_sql", is_flag=True, help="Also print the Spark SQL tempura runs.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--stats", "with_stats", is_flag=True, help="The logical plan with estimated rows, size and cost of every operator.")
@click.option("--logical", is_flag=True, help="The bound logical plan, before optimization.")
@click.option("--trace", is_flag=True, help="Also print the rule firings and the search's numbers.")
@click.option("--memo", "show_memo", is_flag=True, help="Also print the explored memo.")
@click.option("--no-rule", "no_rules", multiple=True, metavar="NAME", help="Disable an optimizer rule (repeatable).")
@click.option("--cost", "cost", multiple=True, metavar="NAME=VALUE", help="Override a cost constant (repeatable).")
@user_errors
def explain(
    catalog: str,
    dialect: str,
    workdir: str,
    sql: str,
    show_sql: bool,
    as_json: bool,
    with_stats: bool,
    logical: bool,
    trace: bool,
    show_memo: bool,
    no_rules: tuple[str, ...],
    cost: tuple[str, ...],
) -> None:
    """Print the plan tempura runs for SQL (or @file.sql): the physical plan with join
    algorithms, estimated rows and cost."""
    from tempura.api import Session
    from tempura.explain import format_physical, format_trace, physical_json
    from tempura.sql import to_spark_sql

    session = Session(catalog, dialect=dialect, workdir=workdir, cost_constants=_cost_constants(cost)[0])
    text = _read_sql(sql)
    bound = session.plan(text)
    if with_stats:
        explainer = session.explainer()
        if as_json:
            report = explainer.json(bound)
            if show_sql:
                report["spark_sql"] = to_spark_sql(bound)
            click.echo(json.dumps(report, indent=2))
        else:
            click.echo(explainer.text(bound))
            if show_sql:
                click.echo("")
                click.echo(to_spark_sql(bound, pretty=True))
        return
    if logical:
        if as_json:
            payload: dict[str, object] = {"plan": str(bound.plan).splitlines(), "columns": list(bound.names)}
            if show_sql:
                payload["spark_sql"] = to_spark_sql(bound)
            click.echo(json.dumps(payload, indent=2))
            return
        click.echo(str(bound.plan))
        if show_sql:
            click.echo("")
            click.echo(to_spark_sql(bound, pretty=True))
        return
    planned = session.optimize(text, disabled=no_rules, trace=trace)
    if as_json:
        out: dict[str, object] = {
            "plan": physical_json(planned.physical),
            "columns": list(bound.names),
            "search": planned.report.to_json(),
        }
        if trace:
            out["normalization"] = planned.normalization
            out["firings"] = [str(f) for f in planned.trace.firings] if planned.trace else []
        if show_sql:
            out["spark_sql"] = to_spark_sql(planned.query, hints=planned.hints)
        if show_memo:
            out["memo"] = planned.memo.format().splitlines()
        click.echo(json.dumps(out, indent=2))
        return
    click.echo(format_physical(planned.physical))
    if trace:
        click.echo("")
        click.echo(format_trace(planned))
    if show_memo:
        click.echo("")
        click.echo(planned.memo.format())
    if show_sql:
        click.echo("")
        click.echo(to_spark_sql(planned.query, pretty=True, hints=planned.hints))


@main.command()
@catalog_option
@workdir_option
@click.argument("tables", nargs=-1)
@click.option("--histograms/--no-histograms", default=True, show_default=True, help="Collect equi-height histograms.")
@user_errors
def analyze(catalog: str, workdir: str, tables: tuple[str, ...], histograms: bool) -> None:
    """Collect statistics of the catalog's tables (all, or TABLES) and keep them in the workdir."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from tempura.api import Session

    session = Session(catalog, workdir=workdir)
    for table in tables:
        session.catalog.table(table)  # unknown names fail before Spark starts
    console = Console(stderr=True)
    with Progress(
        TextColumn("[bold]analyze[/bold] {task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=console,
    ) as bar:
        task = bar.add_task("starting Spark", total=len(tables) or len(session.catalog.tables))

        def progress(table: str, done: int, total: int) -> None:
            bar.update(task, completed=done, total=total, description=table or "done")

        results = session.analyze(list(tables) or None, histograms=histograms, progress=progress)
    summary = Table(title=f"statistics in {session.workdir / 'stats'}")
    for column in ("table", "rows", "size", "columns", "unique columns", "method"):
        summary.add_column(column)
    from tempura.cost.model import format_bytes
    from tempura.explain import format_count

    for name, stats in results.items():
        unique = ", ".join(c for c, s in stats.columns.items() if s.unique) or "-"
        summary.add_row(name, format_count(stats.rows), format_bytes(stats.bytes), str(len(stats.columns)), unique, stats.source)
    Console().print(summary)


@main.group()
def bench() -> None:
    """Benchmarks (results as JSON and PNG charts)."""


@bench.command("cardinality")
@click.option("--scale", default=0.1, show_default=True, type=float, help="TPC-H scale factor.")
@click.option("--workdir", default=".tempura/bench", show_default=True, type=click.Path(file_okay=False))
@click.option("--out", default="benchmarks/results", show_default=True, type=click.Path(file_okay=False))
@click.option("--query", "queries", multiple=True, help="Only these queries (q01 … q22).")
@user_errors
def bench_cardinality(scale: float, workdir: str, out: str, queries: tuple[str, ...]) -> None:
    """Estimated vs true rows of every subplan of the TPC-H queries, beside Spark's CBO."""
    from rich.console import Console
    from rich.table import Table

    from benchmarks import cardinality

    console = Console(stderr=True)
    names = _query_names(queries)
    report = cardinality.run(scale, Path(workdir), Path(out), names, lambda message: console.log(message))
    table = Table(title=f"q-error, TPC-H scale {scale:g} ({report['nodes']} subplans)")
    for column in ("estimator", "nodes", "median", "p90", "p95", "max"):
        table.add_column(column)
    for label, key in (
        ("tempura, all subplans", "tempura_all"),
        ("tempura, without cross joins", "tempura_without_cross_joins"),
        ("tempura, comparable", "tempura_comparable"),
        ("Spark CBO, comparable", "spark_comparable"),
    ):
        row = report[key]
        table.add_row(label, str(row["count"]), *(f"{row[k]:.2f}" for k in ("median", "p90", "p95", "max")))
    Console().print(table)
    ops = Table(title="by operator (tempura | Spark)")
    for column in ("operator", "nodes", "median", "p95", "max", "Spark p95"):
        ops.add_column(column)
    for op, row in report["by_operator"].items():
        t, sp = row["tempura"], row["spark"]
        ops.add_row(op, str(t["count"]), f"{t['median']:.2f}", f"{t['p95']:.2f}", f"{t['max']:.2f}", f"{sp['p95']:.2f}" if sp.get("count") else "-")
    Console().print(ops)
    click.echo("wrote " + ", ".join(report["files"]))


@main.command("tpch-gen")
@click.option("--scale", default=0.01, show_default=True, type=float, help="TPC-H scale factor.")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Output folder.")
@user_errors
def tpch_gen(scale: float, out: str) -> None:
    """Write TPC-H parquet data and a catalog.yaml for it."""
    from tempura import tpch

    catalog = tpch.generate(scale, out)
    click.echo(f"wrote TPC-H scale {scale:g} to {out}; catalog: {catalog}")


@main.command("tpch-check")
@click.option("--scale", default=0.01, show_default=True, type=float, help="TPC-H scale factor.")
@click.option("--workdir", default=".tempura", show_default=True, type=click.Path(file_okay=False))
@click.option("--query", "queries", multiple=True, help="Run only these queries (q01 … q22).")
@user_errors
def tpch_check(scale: float, workdir: str, queries: tuple[str, ...]) -> None:
    """Generate TPC-H data, run the 22 queries through tempura's plans and compare with Spark."""
    from tempura import tpch_check as job

    names = _query_names(queries)
    failures = job.main(scale, workdir, names)
    sys.exit(1 if failures else 0)


@main.command()
@click.option("--scale", default=0.01, show_default=True, type=float,
              help="Data scale of every scenario (TPC-H's scale factor; sales_returns: millions of sales).")
@click.option("--workdir", default=".tempura", show_default=True, type=click.Path(file_okay=False))
@click.option("--scenario", "scenarios", multiple=True, help="Run these scenarios (default: sales_returns, tpch_q03).")
@click.option("--method", "methods", multiple=True, type=click.Choice(METHOD_CHOICES),
              help="Run these methods (default: auto and every forced method).")
@click.option("--chart", "chart_path", default=None, type=click.Path(dir_okay=False),
              help="Where to write the PNG chart (default: WORKDIR/demo/demo.png).")
@user_errors
def demo(scale: float, workdir: str, scenarios: tuple[str, ...], methods: tuple[str, ...], chart_path: str | None) -> None:
    """Standing queries simulated under auto and every forced method: objective, work per time
    point, and every delivered result checked against recompute; writes a PNG chart."""
    from scenarios import names as scenario_names
    from tempura import demo as demo_job

    known = scenario_names()
    for name in scenarios:
        if name not in known:
            raise click.BadParameter(f"unknown scenario '{name}' (one of {', '.join(known)})", param_hint="--scenario")
    from tempura.runtime import get_spark

    failures = demo_job.main(get_spark(), scale, workdir, scenarios or demo_job.SCENARIOS, methods or demo_job.METHODS,
                             chart_path)
    sys.exit(1 if failures else 0)


@bench.command("join-order")
@click.option("--scale", default=0.1, show_default=True, type=float, help="TPC-H scale factor.")
@click.option("--workdir", default=".tempura/bench", show_default=True, type=click.Path(file_okay=False))
@click.option("--out", default="benchmarks/results", show_default=True, type=click.Path(file_okay=False))
@click.option("--query", "queries", multiple=True, help="Only these queries (q02, q03, …).")
@click.option("--repeat", default=3, show_default=True, type=click.IntRange(min=3), help="Measured rounds per query.")
@click.option("--timeout", default=600.0, show_default=True, type=float, help="Seconds before a run is cancelled.")
@user_errors
def bench_join_order(scale: float, workdir: str, out: str, queries: tuple[str, ...], repeat: int, timeout: float) -> None:
    """TPC-H queries in an adversarial join order: Spark as written, Spark's rules, Spark's CBO and tempura."""
    from rich.console import Console
    from rich.table import Table

    from benchmarks import join_order

    unknown = [q for q in queries if q not in join_order.QUERIES]
    if unknown:
        raise TempuraError(f"unknown join-order query: {', '.join(unknown)} (known: {', '.join(join_order.QUERIES)})")
    console = Console(stderr=True)
    report = join_order.run(scale, Path(workdir), Path(out), list(queries) or None, repeat, timeout, lambda m: console.log(m))
    table = Table(title=f"join order, TPC-H scale {scale:g}, median of {repeat} alternating runs")
    for column in ("query", "written s", "Spark rules s", "Spark CBO s", "tempura s", "written/tempura", "rules/tempura",
                   "CBO/tempura", "opt ms", "memo", "equal"):
        table.add_column(column)
    for q in report["queries"]:
        m, cancelled = q["median"], q.get("timed_out", {})
        mark = {c: ">" if cancelled.get(c) else "" for c in join_order.CONTENDERS}  # cancelled at the timeout: a lower bound
        table.add_row(
            q["query"] + (" **" if q["written_order_bad"] else " *" if q["written_order_cross_product"] else ""),
            *(f"{mark[c]}{m[c]:.2f}" for c in join_order.CONTENDERS),
            *(f"{mark[c] or ('<' if cancelled.get('tempura') else '')}{q[f'ratio_{short}_to_tempura']:.2f}"
              for short, c in join_order.RATIOS.items()),
            f"{q['optimization_seconds'] * 1000:.0f}", f"{q['memo_groups']}/{q['memo_expressions']}",
            "yes" if all(q["equal_to_spark"].values()) else "NO",
        )
    Console().print(table)
    click.echo(
        f"geometric mean ratio: written/tempura {report['geomean_ratio_written_to_tempura']:.2f}, "
        f"Spark rules/tempura {report['geomean_ratio_rules_to_tempura']:.2f}, "
        f"CBO/tempura {report['geomean_ratio_cbo_to_tempura']:.2f}; "
        f"*: written order has a cross product; **: one that multiplies rows, a bad order (there: geomean "
        f"written/tempura {report['geomean_ratio_written_to_tempura_bad_order']:.2f}, least "
        f"{report['min_ratio_written_to_tempura_bad_order']:.2f}); '>': cancelled at the timeout, a lower bound"
    )
    click.echo("wrote " + ", ".join(report["files"]))


SELECTOR_CHOICES = ["auto", "greedy", "ilp", "off"]  # tempura.mqo.SELECTORS, without importing the planner


@bench.command("tvr-planning")
@click.option("--repeat", default=3, show_default=True, type=int, help="Runs per measurement (median).")
@click.option("--out", default="benchmarks/results", show_default=True, type=click.Path(file_okay=False))
@click.option("--stats", "stats_file", default=None, type=click.Path(dir_okay=False),
              help="TPC-H statistics JSON (default: scale 0.01, shipped with the benchmark).")
@click.option("--query", "queries", multiple=True, help="Only these queries (q01 … q22).")
@user_errors
def bench_tvr_planning(repeat: int, out: str, stats_file: str | None, queries: tuple[str, ...]) -> None:
    """Planning time over 4 time points, memo sizes, memo copy against full expansion at 8."""
    from rich.console import Console

    from benchmarks import tvr_planning

    console = Console(stderr=True)
    names = _query_names(queries)
    stats = Path(stats_file) if stats_file else tvr_planning.STATS
    report = tvr_planning.run(Path(out), repeat, stats, names, lambda m: console.log(m))
    click.echo(json.dumps(report["summary"], indent=2))


@bench.command("incremental")
@click.option("--scale", default=0.1, show_default=True, type=float, help="Data scale of every scenario.")
@click.option("--repeat", default=3, show_default=True, type=click.IntRange(min=1), help="Cycles per contender (medians).")
@click.option("--scenario", "scenarios", multiple=True, help="Only these scenarios (default: all).")
@click.option("--contender", "contenders", multiple=True, type=click.Choice(["batch", "ivm", "spark-streaming", "auto"]),
              help="Only these contenders (default: all four).")
@click.option("--out", default="benchmarks/results", show_default=True, type=click.Path(file_okay=False))
@click.option("--workdir", default=".tempura/bench", show_default=True, type=click.Path(file_okay=False))
@user_errors
def bench_incremental(scale: float, repeat: int, scenarios: tuple[str, ...], contenders: tuple[str, ...], out: str,
                      workdir: str) -> None:
    """Standing queries on Spark: batch, ivm, native Structured Streaming and auto, alternating;
    executor CPU and wall per time point, the objective, auto's ratios; every result checked."""
    from rich.console import Console
    from rich.table import Table

    from benchmarks import incremental
    from scenarios import names as scenario_names
    from tempura.runtime import get_spark

    known = scenario_names()
    for name in scenarios:
        if name not in known:
            raise click.BadParameter(f"unknown scenario '{name}' (one of {', '.join(known)})", param_hint="--scenario")
    console = Console(stderr=True)
    report = incremental.run(get_spark(), Path(out), Path(workdir), scale, repeat,
                             scenarios or incremental.DEFAULT_SCENARIOS, contenders or incremental.CONTENDERS,
                             lambda m: console.log(m))
    table = Table(title=f"bench incremental, scale {scale:g}, {repeat} runs each (median executor CPU s)")
    for column in ("scenario", "contender", "CPU per time point", "objective", "correct"):
        table.add_column(column)
    for name, result in report["scenarios"].items():
        for contender, found in result["contenders"].items():
            if "unsupported" in found:
                table.add_row(name, contender, "unsupported: " + found["unsupported"][:80], "-", "-")
                continue
            table.add_row(name, contender, " / ".join(f"{c:.2f}" for c in found["cpu_median"]),
                          f"{found['objective']:.3g}", "yes" if found["correct"] else "NO")
        verdict = result["verdict"]
        if verdict.get("comparable"):
            same = verdict.get("same_plan_as", [])
            same_last = [n for n in verdict.get("same_last_point_as", []) if n not in same]
            table.add_row(name, "auto / best", f"last point vs batch: {verdict.get('ratio_last_point_auto_to_batch', 0):.2f}",
                          f"{verdict['ratio_objective_auto_to_best_other']:.2f} ({verdict['best_other']})",
                          ("targets met" if verdict["objective_target_met"] and verdict["last_point_target_met"] else "targets missed")
                          + ("; same plan as " + ", ".join(same) if same else "")
                          + ("; same last point as " + ", ".join(same_last) if same_last else ""))
    Console().print(table)
    click.echo("wrote " + ", ".join(report["files"]))


@bench.command("mqo")
@click.option("--repeat", default=3, show_default=True, type=int, help="Runs of each selector per instance (median).")
@click.option("--out", default="benchmarks/results", show_default=True, type=click.Path(file_okay=False))
@click.option("--stats", "stats_file", default=None, type=click.Path(dir_okay=False),
              help="TPC-H statistics JSON (default: scale 0.01, shipped with the benchmark).")
@click.option("--query", "queries", multiple=True, help="Only these standing queries (golden, q01 … q22).")
@click.option("--points", "points", multiple=True, type=click.IntRange(2, 8), help="Time points per standing query (default 2, 4, 8).")
@click.option("--random", "random_count", default=120, show_default=True, type=click.IntRange(min=0),
              help="How many random synthetic instances.")
@click.option("--time-limit", default=30.0, show_default=True, type=float, help="Seconds the ILP may take per instance.")
@user_errors
def bench_mqo(repeat: int, out: str, stats_file: str | None, queries: tuple[str, ...], points: tuple[int, ...],
              random_count: int, time_limit: float) -> None:
    """The greedy state selection against the exact ILP: gap, times and states kept, on the golden
    example, the TPC-H queries over 2–8 time points and random instances."""
    from rich.console import Console

    from benchmarks import mqo

    console = Console(stderr=True)
    names = _query_names(queries, ("golden",))
    stats = Path(stats_file) if stats_file else mqo.STATS
    report = mqo.run(Path(out), repeat, stats, names, random_count, time_limit, tuple(points) or mqo.POINTS,
                     lambda m: console.log(m))
    click.echo(json.dumps(report["summary"], indent=2))


@bench.command("faults")
@click.option("--kills", default=200, show_default=True, type=click.IntRange(min=0), help="Random kill points.")
@click.option("--pairs", default=20, show_default=True, type=click.IntRange(min=0), help="Pairs of runs started at once.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the random kill points and pairs.")
@click.option("--scale", default=0.002, show_default=True, type=float, help="Data scale of the scenarios.")
@click.option("--scenario", "scenarios", multiple=True, help="Only these scenarios (default: sales_returns, stock_cdc).")
@click.option("--out", default="benchmarks/results", show_default=True, type=click.Path(file_okay=False))
@click.option("--workdir", default=".tempura/bench/faults", show_default=True, type=click.Path(file_okay=False))
@click.option("--matrix", is_flag=True, help="First kill at every phase under every planned method of every scenario (at t2).")
@user_errors
def bench_faults(kills: int, pairs: int, seed: int, scale: float, scenarios: tuple[str, ...], out: str, workdir: str,
                 matrix: bool) -> None:
    """tempura run killed (kill -9) at random phases and time points, then run again, and pairs of
    runs on one job at once: every delivery checked against the reference; wrong and lost results
    counted."""
    from rich.console import Console
    from rich.table import Table

    from benchmarks import faults
    from scenarios import names as scenario_names
    from tempura.runtime import get_spark

    known = scenario_names()
    for name in scenarios:
        if name not in known:
            raise click.BadParameter(f"unknown scenario '{name}' (one of {', '.join(known)})", param_hint="--scenario")
    console = Console(stderr=True)
    report = faults.run(get_spark(), Path(out), Path(workdir).resolve(), kills, pairs, seed,
                        scenarios or faults.SCENARIOS, scale, lambda m: console.log(m), matrix)
    table = Table(title=f"bench faults, seed {seed}: {report['summary']['kills']} kills, {pairs} pairs ({report['seconds']:.0f} s)")
    for column in ("phase", "kills", "fired", "wrong", "lost", "rerun failed"):
        table.add_column(column)
    for phase, row in [*report["by_phase"].items(), ("all", report["summary"])]:
        table.add_row(phase, str(row["kills"]), str(row["fired"]), str(row["wrong"]), str(row["lost"]),
                      str(row["rerun_failed"]))
    Console().print(table)
    totals = report["summary"]
    click.echo(f"pairs: {totals['pairs']}, failed {totals['pairs_failed']}, wrong {totals['pairs_wrong']}, "
               f"lost {totals['pairs_lost']}")
    click.echo("wrote " + ", ".join(report["files"]))
    failed = totals["wrong"] + totals["lost"] + totals["rerun_failed"] + totals["pairs_failed"]
    sys.exit(1 if failed else 0)


@main.command()
@click.argument("spec", type=click.Path(dir_okay=False))
@user_errors
def validate(spec: str) -> None:
    """Check a standing query's spec file (keys, types, schedule, objective)."""
    from tempura.scheduler import load_spec

    loaded = load_spec(spec)
    missing = loaded.missing_paths()
    if missing:
        raise TempuraError(missing[0] + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    tp = loaded.time_points()
    click.echo(f"{spec}: ok — {loaded.name}: {len(loaded.sources)} source(s), {tp.k} time point(s), deliver {', '.join(f't{i}' for i in tp.deliver)}")


def _spark_for(spec: Any) -> Any:
    """The session a spec's job runs on: its ``spark`` section (master, settings)."""
    from tempura.runtime import get_spark

    return get_spark(spec.model.spark.master, dict(spec.model.spark.conf))


@main.command("run")
@click.argument("spec", type=click.Path(dir_okay=False))
@click.option("--simulate", is_flag=True, help="Run a whole cycle now, replaying the data's arrival.")
@click.option("--method", type=click.Choice(METHOD_CHOICES), default="auto", show_default=True,
              help="Force one incremental method (for comparison).")
@click.option("--daemon", is_flag=True, help="Keep running: wait for each time point.")
@click.option("--now", "now_text", default=None, metavar="TIMESTAMP",
              help="Take this as the current time (ISO), instead of the wall clock.")
@click.option("--workdir", default=".tempura", show_default=True, help="Where jobs keep states, manifests and history.")
@click.option("--from", "since_text", default=None, metavar="TIMESTAMP",
              help="Catch up on every cycle from the one under way at this time (ISO), past the spec's max_catch_up.")
@click.option("--wait", "wait", type=click.FloatRange(min=0), default=0.0, show_default=True, metavar="SECONDS",
              help="If another run holds the job's lock, wait this long for it instead of stopping.")
@click.option("--force-unlock", "force_unlock", is_flag=True,
              help="Remove the job's lock first, whoever holds it (only when its holder is known to be dead).")
@user_errors
def run_command(spec: str, simulate: bool, method: str, daemon: bool, now_text: str | None, workdir: str,
                since_text: str | None, wait: float, force_unlock: bool) -> None:
    """Run a standing query: the time points due by the clock (then exit; idempotent), a whole
    cycle now (--simulate, afresh each time), or continuously (--daemon). One run at a time
    writes a job: a second one stops with the holder's name, or waits (--wait)."""
    import datetime as dt

    from rich.console import Console

    from tempura.scheduler import load_spec
    from tempura.scheduler.progress import progress_bars
    from tempura.scheduler.runner import Runner, job_folder

    loaded = load_spec(spec)
    if simulate and daemon:
        raise click.UsageError("--simulate runs one cycle now; --daemon follows the clock: choose one")
    now = _timestamp(now_text, "--now")
    since = _timestamp(since_text, "--from")
    if simulate and since is not None:
        raise click.UsageError("--simulate runs cycle 0 afresh; --from is for runs by the clock")
    if force_unlock:
        _force_unlock(job_folder(workdir, loaded, method if simulate else None))
    console = Console(stderr=True)
    with progress_bars(console) as progress:
        runner = Runner(loaded, _spark_for(loaded), workdir, method, simulate, progress, wait=wait)
        if simulate:
            with runner.lock_held():  # a simulation starts afresh: the last one's folder goes first
                runner.clear()
                results = runner.run_cycle()
        elif daemon:
            runner.daemon()
            return
        else:
            results = runner.run_due(now, since)
    if runner.skipped:
        click.echo(f"{runner.skipped} earlier cycle(s) not caught up (max_catch_up: {loaded.max_catch_up}); "
                   f"run with --from TIMESTAMP to catch up on them")
    _echo_results(results)
    if not results:
        click.echo("no time point is due")


def _timestamp(text: str | None, option: str) -> Any:
    import datetime as dt

    try:
        return dt.datetime.fromisoformat(text) if text else None
    except ValueError:
        raise click.BadParameter(f"'{text}' is not an ISO timestamp", param_hint=option) from None


def _force_unlock(folder: Path) -> None:
    from tempura.runtime.lock import force_unlock

    holder = force_unlock(folder)
    if holder is not None:
        click.echo(f"warning: removed the lock of {folder} held by {holder.describe()}; if that run is alive, "
                   f"two writers can commit a wrong result", err=True)


def _echo_results(results: list[Any]) -> None:
    """One line per time point a run took: committed already, or what it ran and delivered."""
    for r in results:
        if r.skipped:
            click.echo(f"{r.cycle} t{r.index} ({r.time}): committed already")
            continue
        run = r.manifest["run"]
        fell: dict[str, list[str]] = {}  # why -> the fragments that ran another method than the forced one
        for f in r.manifest["fragments"]:
            if f.get("fallback"):
                fell.setdefault(f["fallback"], []).append(f"{f['id']} ran {f['method']}")
        click.echo(f"{r.cycle} t{r.index} ({r.time}): {run['method']}, {len(r.manifest['fragments'])} fragment(s), "
                   f"cpu {run['cpu_seconds']:.2f}s, wall {run['wall_seconds']:.2f}s, {run['rows_landed']} rows landed"
                   + (f", {run['rejected_rows']} late rows rejected" if run["rejected_rows"] else "")
                   + "".join(f"; {', '.join(ran)}, not {run['method']}: {why}" for why, ran in fell.items())
                   + (f"; delivered {r.delivered}" if r.delivered else "")
                   + (f"; {r.reason}" if r.replanned else ""))


@main.command("check")
@click.argument("spec", type=click.Path(dir_okay=False))
@click.option("--simulate", "simulated", default=None, metavar="METHOD", help="Check a simulation's folder (of METHOD).")
@click.option("--workdir", default=".tempura", show_default=True)
@user_errors
def check_command(spec: str, simulated: str | None, workdir: str) -> None:
    """Verify a job's folder: the chain of manifests, every file they list (sizes, rows) and the
    newest delivery. Exits 1 and names each problem if anything is damaged."""
    from tempura.runtime.store import JobStore
    from tempura.scheduler import load_spec
    from tempura.scheduler.check import check_job
    from tempura.scheduler.planning import job_folder

    loaded = load_spec(spec)
    report = check_job(JobStore(job_folder(workdir, loaded, simulated)))
    if report.lock:
        click.echo(f"locked by {report.lock}")
    for cycle in report.cycles:
        for leftover in cycle.leftovers:
            click.echo(f"cycle {cycle.label}: {leftover} is an unfinished attempt's (the next run deletes it)")
        for problem in cycle.problems:
            click.echo(f"damaged: {problem}")
        if cycle.problems:
            click.echo(f"cycle {cycle.label}: the last intact time point is t{cycle.intact}; "
                       f"'tempura repair {spec}' rebuilds from t{cycle.intact + 1}")
    committed = sum(c.committed for c in report.cycles)
    damaged = report.damaged
    if damaged:
        click.echo(f"{loaded.name}: {len(damaged)} of {len(report.cycles)} cycle(s) damaged")
        sys.exit(1)
    click.echo(f"{loaded.name}: ok — {len(report.cycles)} cycle(s), {committed} committed time point(s), every listed file "
               f"verified")


@main.command("repair")
@click.argument("spec", type=click.Path(dir_okay=False))
@click.option("--from", "first", default=None, metavar="tN",
              help="Rebuild from this time point (its predecessor must be intact); default: after the last intact one.")
@click.option("--cycle", "cycle", default=None, help="Only this cycle (its folder's name); default: every damaged one.")
@click.option("--method", type=click.Choice(METHOD_CHOICES), default="auto", show_default=True,
              help="The method the time points run again with (as the job's runs used).")
@click.option("--workdir", default=".tempura", show_default=True)
@click.option("--wait", "wait", type=click.FloatRange(min=0), default=0.0, show_default=True, metavar="SECONDS",
              help="If another run holds the job's lock, wait this long for it.")
@user_errors
def repair_command(spec: str, first: str | None, cycle: str | None, method: str, workdir: str, wait: float) -> None:
    """Rebuild a damaged job from its sources, from the last intact time point: later commits are
    taken back (their manifests kept aside under uncommitted/) and their time points run again."""
    from rich.console import Console

    from tempura.scheduler import load_spec
    from tempura.scheduler.progress import progress_bars
    from tempura.scheduler.runner import Runner

    loaded = load_spec(spec)
    start = None
    if first is not None:
        digits = first[1:] if first[:1] in ("t", "T") else first
        if not digits.isdigit() or int(digits) < 1:
            raise click.BadParameter(f"'{first}' is not a time point such as t3", param_hint="--from")
        start = int(digits)
    with progress_bars(Console(stderr=True)) as progress:
        runner = Runner(loaded, _spark_for(loaded), workdir, method, progress=progress, wait=wait)
        results = runner.repair(cycle, start)
    _echo_results(results)
    click.echo(f"{loaded.name}: repaired {len(results)} time point(s)" if results else f"{loaded.name}: nothing to repair")


@main.command("history")
@click.argument("spec", type=click.Path(dir_okay=False))
@click.option("--fragments", is_flag=True, help="Also list every fragment: estimated against measured.")
@click.option("--simulate", "simulated", default=None, metavar="METHOD", help="Show a simulation's history (of METHOD).")
@click.option("--workdir", default=".tempura", show_default=True)
@user_errors
def history_command(spec: str, fragments: bool, simulated: str | None, workdir: str) -> None:
    """The run history of a standing query: each committed time point, its work, and whether
    the plan changed afterwards and why."""
    from rich.console import Console
    from rich.table import Table

    from tempura.scheduler import load_spec
    from tempura.scheduler.calibration import for_job
    from tempura.scheduler.history import History
    from tempura.scheduler.runner import job_folder

    loaded = load_spec(spec)
    history = History(job_folder(workdir, loaded, simulated) / "history.sqlite", read_only=True)
    runs = history.runs()
    if not runs:
        click.echo(f"{loaded.name}: no committed time point yet")
        return
    table = Table(title=f"{loaded.name}: runs")
    for column in ("cycle", "t", "time", "method", "est. s", "cpu s", "wall s", "rows in", "late", "re-planned"):
        table.add_column(column)
    for r in runs:
        table.add_row(r["cycle"], str(r["time_index"]), r["time_value"], r["method"], f"{r['estimated_seconds']:.3g}",
                      f"{r['cpu_seconds']:.3g}", f"{r['wall_seconds']:.3g}", str(r["rows_landed"]),
                      str((r["late_rows"] or 0) + (r["rejected_rows"] or 0)),
                      (r["reason"] or "") if r["replanned"] else "")
    console = Console()
    console.print(table)
    if fragments:
        detail = Table(title="fragments: estimated against measured")
        for column in ("cycle", "t", "fragment", "method", "output", "est. rows", "rows out", "rows in", "est. s", "cpu s",
                       "wall s", "est. stages", "stages", "bytes in", "bytes out", "fallback"):
            detail.add_column(column)
        for f in history.fragments():
            detail.add_row(f["cycle"], str(f["time_index"]), f["fragment"], f["method"] + (" (stream)" if f["streaming"] else ""),
                           f["output"], f"{f['estimated_rows']:.4g}", str(f["rows_out"]), str(f["rows_in"]),
                           f"{f['estimated_seconds']:.3g}", f"{f['cpu_seconds']:.3g}", f"{f['wall_seconds']:.3g}",
                           "" if f.get("estimated_stages") is None else f"{f['estimated_stages']:.0f}",
                           "" if f.get("stages") is None else str(f["stages"]), str(f["bytes_in"]), str(f["bytes_out"]),
                           f.get("fallback") or "")
        console.print(detail)
    _, calibration = for_job(loaded.cost_constants, loaded.model.cost, Path(workdir), history.path)
    click.echo(calibration.describe(loaded.cost_constants.stage) if calibration is not None
               else f"stage cost set by the spec: {loaded.cost_constants.stage / 1e9:.3g} s per stage")


@main.command("plan")
@click.argument("spec", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "dot"]), default="text", show_default=True)
@click.option("--method", type=click.Choice(METHOD_CHOICES), default="auto", show_default=True,
              help="Force one incremental method (a selection of the TVR rules).")
@click.option("--output", "output", type=click.Choice(["snapshot", "delta"]), default=None,
              help="Deliver the result (snapshot) or its change since the previous time point (delta); "
                   "by default the spec's output mode, as tempura run delivers.")
@click.option("--no-rule", "no_rule", multiple=True, help="Disable a rule by name (repeatable).")
@click.option("--sql", "show_sql", is_flag=True, help="Print each fragment's Spark SQL.")
@click.option("--selector", type=click.Choice(SELECTOR_CHOICES), default="auto", show_default=True,
              help="What chooses the kept states: the ILP when small enough else the greedy (auto), one of them always, "
                   "or off (the memo search's own plan, sharing nothing).")
@click.option("--ilp-limit", type=click.IntRange(min=0), default=None,
              help="Under --selector auto, the most binary variables for which the ILP decides (default: the planner's).")
@click.option("--state-budget", "state_budget", default=None, metavar="SIZE",
              help="The most bytes of kept states alive at once (10GB, 512MB, 2GiB); overrides the spec's state_budget.")
@click.option("--cost", "cost", multiple=True, metavar="NAME=VALUE",
              help="Override a cost constant (repeatable); over the spec's cost key.")
@click.option("--workdir", default=".tempura", show_default=True, help="The workdir of tempura run: the job's statistics are read there (and collected where missing).")
@user_errors
def plan_command(spec: str, fmt: str, method: str, output: str | None, no_rule: tuple[str, ...], show_sql: bool, selector: str,
                 ilp_limit: int | None, state_budget: str | None, cost: tuple[str, ...], workdir: str) -> None:
    """The multi-time-point plan of a standing query: fragments per time point, methods, the kept
    states (when each is saved, who reads it, its size, what chose it), estimated rows and cost,
    and every method's cost vector and objective side by side."""
    from tempura.mqo import MqoOptions
    from tempura.runtime.store import JobStore
    from tempura.scheduler import load_spec
    from tempura.scheduler.calibration import for_job
    from tempura.scheduler.planning import (analyze_sources, for_cycle, job_folder, needs_spark, output_mode, plan_spec, prepare,
                                            stale_sources)
    from tempura.scheduler.spec import parse_size
    from tempura.stats.store import file_state
    from tempura.tvr.render import alternatives_text, plan_dot, plan_text

    loaded = load_spec(spec)
    try:
        budget = parse_size(state_budget) if state_budget is not None else None
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--state-budget") from None
    constants, pinned = _cost_constants(cost, loaded.model.cost)  # before any statistics are collected
    # the statistics the job plans with: collected as 'tempura run' would, where the sources'
    # files have none yet (or changed since)
    stats_root = job_folder(workdir, loaded)
    # and the stage cost its run history supports, unless the spec or --cost sets it
    constants, calibration = for_job(constants, pinned, Path(workdir), JobStore(stats_root).history_path)
    readable = [name for name, table in loaded.catalog().tables.items() if file_state(table) is not None]
    stale = [name for name in stale_sources(loaded, stats_root) if name in readable]
    spark = None
    if needs_spark(loaded) or stale:
        from tempura.runtime import get_spark

        spark = get_spark()
        analyze_sources(spark, loaded, stats_root, stale)
    cycle = loaded.cycle(0)
    assert cycle is not None
    prepared, _ = for_cycle(prepare(loaded, spark, stats_root), cycle)  # what tempura run plans its first time point with
    output = output or output_mode(loaded)
    errors: dict[str, TempuraError] = {}
    options = MqoOptions(selector=selector, budget=budget)
    if ilp_limit is not None:
        options = dataclasses.replace(options, ilp_limit=ilp_limit)
    plans = plan_spec(prepared, METHOD_CHOICES, no_rule, output, constants=constants, mqo=options, errors=errors)
    if method not in plans:
        if method in errors:
            raise errors[method]
        raise TempuraError(f"method {method} has no plan for this query and output ({output})")
    chosen = plans[method]
    if calibration is not None and (calibration.stage is not None or calibration.fragments > 0):
        chosen.notes.append(calibration.describe(loaded.cost_constants.stage))
    if fmt == "json":
        data = chosen.to_json()
        data["alternatives"] = {m: p.summary() for m, p in plans.items()}
        click.echo(json.dumps(data, indent=2, default=str))
    elif fmt == "dot":
        click.echo(plan_dot(chosen))
    else:
        click.echo(plan_text(chosen, sql=show_sql))
        click.echo("")
        click.echo("methods (* = this plan):")
        click.echo(alternatives_text(plans, method))


if __name__ == "__main__":
    main()
