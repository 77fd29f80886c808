"""The commands of the benchmarks and the demo: ``tempura bench …``, ``tempura demo`` and
``tempura tpch-check``. They live beside the benchmarks, not in the library: the ``tempura``
command finds them through the ``tempura.commands`` entry points this distribution declares.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from tempura.cli import METHOD_CHOICES, user_errors
from tempura.errors import TempuraError


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


def _known_scenarios(*chosen: str) -> None:
    """Stop with a usage error naming ``--scenario`` unless every one of ``chosen`` is a scenario."""
    from scenarios import names as scenario_names

    known = scenario_names()
    for name in chosen:
        if name not in known:
            raise click.BadParameter(f"unknown scenario '{name}' (one of {', '.join(known)})", param_hint="--scenario")


@click.group()
def bench() -> None:
    """Benchmarks (results as JSON and PNG charts)."""


SUITE_OPTION = click.option("--suite", default="tpch", show_default=True, type=click.Choice(["tpch", "tpcds"]),
                            help="TPC-H or TPC-DS tables and queries.")
DATA_OPTION = click.option("--data", default=None, type=click.Path(file_okay=False, exists=True),
                           help="Read the suite's data from this folder (its catalog.yaml; --scale labels it) "
                                "instead of generating it into the workdir.")


@bench.command("cardinality")
@click.option("--scale", default=0.1, show_default=True, type=float, help="Scale factor.")
@SUITE_OPTION
@DATA_OPTION
@click.option("--workdir", default=".tempura/bench", show_default=True, type=click.Path(file_okay=False))
@click.option("--out", default="benchmarks/results", show_default=True, type=click.Path(file_okay=False))
@click.option("--query", "queries", multiple=True, help="Only these queries (TPC-H q01 … q22, TPC-DS q01 … q99).")
@click.option("--node-timeout", default=120.0, show_default=True, type=float,
              help="Seconds one subplan's count may run before it is cancelled and skipped.")
@click.option("--query-timeout", default=600.0, show_default=True, type=float,
              help="Seconds one query's counts may take; its nodes left then are skipped.")
@click.option("--budget", default=None, type=float,
              help="Seconds the whole run may take; queries not started by then are listed as not reached.")
@user_errors
def bench_cardinality(scale: float, suite: str, data: str | None, workdir: str, out: str, queries: tuple[str, ...],
                      node_timeout: float, query_timeout: float, budget: float | None) -> None:
    """Estimated vs true rows of every subplan of the TPC-H or TPC-DS queries, beside Spark's CBO."""
    from rich.console import Console
    from rich.table import Table

    from benchmarks import cardinality

    console = Console(stderr=True)
    if suite == "tpcds":
        from benchmarks.tpcds_check import query_names as tpcds_names

        names = tpcds_names(queries)
    else:
        names = _query_names(queries)
    report = cardinality.run(scale, Path(workdir), Path(out), names, lambda message: console.log(message), suite,
                             Path(data) if data else None, node_timeout, query_timeout, budget)
    title = cardinality.SUITES[suite].title
    table = Table(title=f"q-error, {title} scale {scale:g} ({report['nodes']} subplans)")
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
    if report["refused_queries"]:
        click.echo(f"skipped {len(report['refused_queries'])} queries tempura refuses: "
                   + "; ".join(f"{q}: {m}" for q, m in report["refused_queries"].items()))
    if report["not_reached"]:
        click.echo(f"not reached within the budget: {', '.join(report['not_reached'])}")
    if report["skipped_nodes"]:
        click.echo(f"skipped {report['skipped_nodes']} subplans: "
                   + ", ".join(f"{n} {reason}" for reason, n in report["skipped_by_reason"].items()))
    click.echo("wrote " + ", ".join(report["files"]))


@click.command("tpch-check")
@click.option("--scale", default=0.01, show_default=True, type=float, help="TPC-H scale factor.")
@click.option("--workdir", default=".tempura", show_default=True, type=click.Path(file_okay=False))
@click.option("--query", "queries", multiple=True, help="Run only these queries (q01 … q22).")
@user_errors
def tpch_check(scale: float, workdir: str, queries: tuple[str, ...]) -> None:
    """Generate TPC-H data, run the 22 queries through tempura's plans and compare with Spark."""
    from benchmarks import tpch_check as job

    names = _query_names(queries)
    failures = job.main(scale, workdir, names)
    sys.exit(1 if failures else 0)


@click.command("tpcds-check")
@click.option("--scale", default=0.01, show_default=True, type=float, help="TPC-DS scale factor.")
@click.option("--workdir", default=".tempura", show_default=True, type=click.Path(file_okay=False))
@click.option("--query", "queries", multiple=True, help="Run only these queries (q01 … q99).")
@click.option("--standing", is_flag=True, default=False,
              help="Plan each query as a standing query (facts arriving by date over 4 time points) under every "
                   "method and compare every delivered time point with Spark.")
@click.option("--no-analyze", is_flag=True,
              help="Plan without statistics (file-size defaults) instead of analyzing the tables first.")
@click.option("--timeout", default=None, type=click.FloatRange(min=1.0),
              help="Seconds each run of a query may take (default: 120).")
@user_errors
def tpcds_check(scale: float, workdir: str, queries: tuple[str, ...], standing: bool, no_analyze: bool,
                timeout: float | None) -> None:
    """Generate TPC-DS data, run the 99 queries through tempura's plans and compare with Spark:
    each is equal, refused, wrong or an error; writes a JSON report."""
    from benchmarks import tpcds_check as job

    if standing:
        from benchmarks import tpcds_standing

        failures = tpcds_standing.main(scale, workdir, job.query_names(queries), analyze=not no_analyze)
    else:
        failures = job.main(scale, workdir, job.query_names(queries), timeout=timeout or job.TIMEOUT_SECONDS,
                            analyze=not no_analyze)
    sys.exit(1 if failures else 0)


@click.command()
@click.option("--scale", default=0.01, show_default=True, type=float,
              help="Data scale of every scenario (TPC-H's scale factor; sales_returns: millions of sales).")
@click.option("--workdir", default=".tempura", show_default=True, type=click.Path(file_okay=False))
@click.option("--scenario", "scenarios", multiple=True, help="Run these scenarios (default: sales_returns, tpch_q03).")
@click.option("--method", "methods", multiple=True, type=click.Choice(METHOD_CHOICES),
              help="Run these methods (default: auto and every forced method).")
@click.option("--chart", "chart_path", default=None, type=click.Path(dir_okay=False),
              help="Where to write the PNG chart (default: WORKDIR/demo/demo.png).")
@click.option("--by-clock", is_flag=True,
              help="Run each method the way cron runs it, a new process per time point with only that point's files "
                   "there, measured whole (every Spark job, the process's CPU), beside a plain spark.sql recompute.")
@user_errors
def demo(scale: float, workdir: str, scenarios: tuple[str, ...], methods: tuple[str, ...], chart_path: str | None,
         by_clock: bool) -> None:
    """Standing queries simulated under auto and every forced method: objective, work per time
    point, and every delivered result checked against recompute; writes a PNG chart. With
    --by-clock, each method by the clock instead, one cycle each, whole runs."""
    from benchmarks import demo as demo_job

    _known_scenarios(*scenarios)
    from tempura.runtime import get_spark

    if by_clock:
        from benchmarks import by_clock as clock

        contenders = [*(methods or demo_job.METHODS), "spark-sql"]
        correct = True
        for name in scenarios or demo_job.SCENARIOS:
            result = clock.run(get_spark(), Path(workdir) / "demo", Path(workdir).resolve() / "demo", name, scale, 1,
                               contenders, "demo-clock")
            summary = result["summary"]
            correct = correct and all(summary[c]["correct"] for c in contenders)
            _wide().print(clock_table(f"{name}, scale {scale:g}, by the clock, whole runs (one cycle each)", contenders,
                                        summary))
        sys.exit(0 if correct else 1)

    failures = demo_job.main(get_spark(), scale, workdir, scenarios or demo_job.SCENARIOS, methods or demo_job.METHODS,
                             chart_path)
    sys.exit(1 if failures else 0)


@bench.command("join-order")
@click.option("--scale", default=0.1, show_default=True, type=float, help="Scale factor.")
@SUITE_OPTION
@DATA_OPTION
@click.option("--workdir", default=".tempura/bench", show_default=True, type=click.Path(file_okay=False))
@click.option("--out", default="benchmarks/results", show_default=True, type=click.Path(file_okay=False))
@click.option("--query", "queries", multiple=True, help="Only these queries (TPC-H q02, q03, …; TPC-DS q13, q17, …).")
@click.option("--repeat", default=3, show_default=True, type=click.IntRange(min=3), help="Measured rounds per query.")
@click.option("--timeout", default=600.0, show_default=True, type=float, help="Seconds before a run is cancelled.")
@click.option("--max-cross-rows", default=1e10, show_default=True, type=float,
              help="Spark's written order is not run when one of its cross products would make more rows (estimated).")
@user_errors
def bench_join_order(scale: float, suite: str, data: str | None, workdir: str, out: str, queries: tuple[str, ...],
                     repeat: int, timeout: float, max_cross_rows: float) -> None:
    """TPC-H or TPC-DS queries in an adversarial join order: Spark as written, Spark's rules, Spark's CBO and tempura."""
    from rich.console import Console
    from rich.table import Table

    from benchmarks import join_order

    known = join_order.SUITE_QUERIES[suite]
    unknown = [q for q in queries if q not in known]
    if unknown:
        raise TempuraError(f"unknown join-order query: {', '.join(unknown)} (known: {', '.join(known)})")
    console = Console(stderr=True)
    report = join_order.run(scale, Path(workdir), Path(out), list(queries) or None, repeat, timeout, lambda m: console.log(m),
                            suite, Path(data) if data else None, max_cross_rows)
    table = Table(title=f"join order, {report['suite']} scale {scale:g}, median of {repeat} alternating runs")
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
        f"{report['min_ratio_written_to_tempura_bad_order']:.2f}); '>': cancelled at the timeout, not run or "
        f"failed (below), a lower bound"
    )
    for key, label in (("not_run", "not run, "), ("failed", "failed: ")):
        for name, reasons in report[key].items():
            for contender, reason in reasons.items():
                click.echo(f"{name} {contender}: {label}{reason}")
    click.echo("wrote " + ", ".join(report["files"]))


@bench.command("analysis-time")
@click.option("--repeat", default=5, show_default=True, type=click.IntRange(min=3), help="Alternating rounds per contender.")
@click.option("--out", default="benchmarks/results", show_default=True, type=click.Path(file_okay=False))
@user_errors
def bench_analysis_time(repeat: int, out: str) -> None:
    """What Spark's analysis adds to planning the 22 TPC-H queries (with it and without, alternating)."""
    from rich.console import Console

    from benchmarks import analysis_time

    console = Console(stderr=True)
    report = analysis_time.run(Path(out), repeat, lambda m: console.log(m))
    for label in ("front end", "planning"):
        part = report[label]
        click.echo(f"{label}: ratio with/without Spark's analysis {part['ratio_with_to_without']:.2f} "
                   f"(+{part['added_ms_per_query']:.0f} ms a query)")
    click.echo(f"Spark's analysis alone: {report['spark analysis alone']['ms_per_query']:.0f} ms a query")
    click.echo(f"wrote {Path(out) / 'analysis-time.json'}")


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


CLOCK_CONTENDERS = ("batch", "ivm", "spark-sql", "sdp-streaming", "auto")
SIMULATED_ONLY = ("spark-streaming", "floor")


@bench.command("incremental")
@click.option("--scale", default=0.1, show_default=True, type=float, help="Data scale of every scenario.")
@click.option("--repeat", default=3, show_default=True, type=click.IntRange(min=1), help="Cycles per contender (medians).")
@click.option("--scenario", "scenarios", multiple=True, help="Only these scenarios (default: all).")
@click.option("--contender", "contenders", multiple=True,
              type=click.Choice([*METHOD_CHOICES, "spark-sql", "sdp-streaming", "sdp-mv", "spark-streaming", "floor"]),
              help="Only these contenders (default by the clock: batch, ivm, spark-sql, sdp-streaming, auto; with "
                   "--simulate: batch, ivm, spark-streaming, auto, and floor, the query over the last interval alone, a "
                   "bound on the last point, only when named).")
@click.option("--simulate", is_flag=True,
              help="The labelled variant: every interval's files staged first and the cycle replayed in this process, "
                   "the fragments' executor CPU per point (landing apart), not whole runs.")
@click.option("--out", default="benchmarks/results", show_default=True, type=click.Path(file_okay=False))
@click.option("--workdir", default=".tempura/bench", show_default=True, type=click.Path(file_okay=False))
@user_errors
def bench_incremental(scale: float, repeat: int, scenarios: tuple[str, ...], contenders: tuple[str, ...], simulate: bool,
                      out: str, workdir: str) -> None:
    """Standing queries on Spark, contender against contender, every result checked. By the clock
    (the default): each time point's files land at that point and a new process runs it, measured
    whole (every Spark job, the process's CPU), tempura's methods against plain spark.sql and SDP's
    streaming tables. With --simulate: replayed in this process, the fragments' CPU per point."""
    _known_scenarios(*scenarios)
    if not simulate:
        wrong = [c for c in contenders if c in SIMULATED_ONLY]
        if wrong:
            raise TempuraError(f"contender {wrong[0]} runs only with --simulate (by the clock, Structured Streaming "
                               f"is sdp-streaming: SDP's streaming tables, availableNow at each time point)")
        _incremental_by_clock(scale, repeat, list(scenarios), list(contenders) or list(CLOCK_CONTENDERS), out, workdir)
        return
    from benchmarks import incremental

    wrong = [c for c in contenders if c not in (*incremental.CONTENDERS, incremental.FLOOR)]
    if wrong:
        raise TempuraError(f"contender {wrong[0]} runs only by the clock (without --simulate)")
    _incremental_simulated(scale, repeat, scenarios, contenders, out, workdir)


def _incremental_by_clock(scale: float, repeat: int, scenarios: list[str], contenders: list[str], out: str,
                          workdir: str) -> None:
    """``bench incremental`` by the clock: :mod:`benchmarks.by_clock` per scenario, one table each."""
    from benchmarks import by_clock, incremental
    from tempura.runtime import get_spark

    correct = True
    for name in scenarios or list(incremental.DEFAULT_SCENARIOS):
        result = by_clock.run(get_spark(), Path(out), Path(workdir).resolve(), name, scale, repeat, contenders,
                              "incremental-clock")
        summary = result["summary"]
        correct = correct and all(summary[c]["correct"] for c in contenders)
        _wide().print(clock_table(f"{name}, scale {scale:g}, by the clock, whole runs (medians of {repeat})",
                                    contenders, summary))
        for other, ratio in summary.get("auto_ratios", {}).items():
            click.echo(f"auto / {other}: whole-run executor CPU per point "
                       f"{' '.join('-' if v is None else f'{v:.2f}' for v in ratio['cpu_seconds'])} (summed "
                       f"{ratio['cpu_seconds_summed']:.2f}), wall {' '.join('-' if v is None else f'{v:.2f}' for v in ratio['wall_seconds'])}")
        click.echo(f"wrote {Path(out) / f'incremental-clock-{name}.json'}")
    sys.exit(0 if correct else 1)


def _wide() -> Any:
    """A console for the tables by the clock: the terminal's width, or 160 columns into a file."""
    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=160)


def clock_table(title: str, contenders: list[str], summary: dict[str, Any]) -> Any:
    """Per contender of a run by the clock: the whole runs' figures per time point, and tempura's
    fragments' executor CPU beside them, labelled partial."""
    from rich.table import Table

    table = Table(title=title)
    for column in ("contender", "executor CPU s per point", "records read", "process CPU s", "wall s",
                   "fragments CPU s (partial)", "next cycle's t1: CPU s, wall s", "correct"):
        table.add_column(column)
    for contender in contenders:
        s = summary[contender]
        tempura_run = contender in METHOD_CHOICES
        following = s.get("next_cycle_t1")
        table.add_row(contender, " ".join(f"{v:.2f}" for v in s["cpu_seconds"]),
                      " ".join(f"{v / 1e6:.2f}M" for v in s["records_read"]),
                      " ".join(f"{v:.1f}" for v in s["process_cpu_seconds"]),
                      " ".join(f"{v:.1f}" for v in s["wall_seconds"]),
                      " ".join(f"{v:.2f}" for v in s["fragments_cpu_seconds (partial)"]) if tempura_run else "-",
                      f"{following['cpu_seconds']:.2f}, {following['wall_seconds']:.1f}" if following else "-",
                      "yes" if s["correct"] else "NO")
    return table


def _incremental_simulated(scale: float, repeat: int, scenarios: tuple[str, ...], contenders: tuple[str, ...], out: str,
                           workdir: str) -> None:
    """``bench incremental --simulate``: :mod:`benchmarks.incremental`, one table of every scenario."""
    from rich.console import Console
    from rich.table import Table

    from benchmarks import incremental
    from tempura.runtime import get_spark

    console = Console(stderr=True)
    report = incremental.run(get_spark(), Path(out), Path(workdir), scale, repeat,
                             scenarios or incremental.DEFAULT_SCENARIOS, contenders or incremental.CONTENDERS,
                             lambda m: console.log(m))
    table = Table(title=f"bench incremental --simulate, scale {scale:g}, {repeat} runs each (median executor CPU s of "
                        f"the fragments: partial, landing apart)")
    for column in ("scenario", "contender", "CPU per time point", "objective", "correct"):
        table.add_column(column)
    for name, result in report["scenarios"].items():
        for contender, found in result["contenders"].items():
            if "unsupported" in found:
                table.add_row(name, contender, "unsupported: " + found["unsupported"][:80], "-", "-")
                continue
            table.add_row(name, contender, " / ".join(f"{c:.2f}" for c in found["cpu_median"]),
                          "-" if "bound" in found else f"{found['objective']:.3g}",
                          "a bound" if "bound" in found else "yes" if found["correct"] else "NO")
        verdict = result["verdict"]
        if verdict.get("comparable"):
            same = verdict.get("same_plan_as", [])
            same_last = [n for n in verdict.get("same_last_point_as", []) if n not in same]
            table.add_row(name, "auto / best", f"last point vs batch: {verdict.get('ratio_last_point_auto_to_batch', 0):.2f}",
                          f"{verdict['ratio_objective_auto_to_best_other']:.2f} ({verdict['best_other']})",
                          ("targets met" if verdict["objective_target_met"] and verdict["last_point_target_met"] else "targets missed")
                          + ("; same plan as " + ", ".join(same) if same else "")
                          + ("; same last point as " + ", ".join(same_last) if same_last else ""))
            if verdict.get("ratio_last_point_auto_to_floor") is not None:
                floor_to_batch = verdict.get("ratio_last_point_floor_to_batch")
                table.add_row(name, "auto / floor", f"last point: {verdict['ratio_last_point_auto_to_floor']:.2f}",
                              "-", "" if floor_to_batch is None else f"floor / batch: {floor_to_batch:.2f}")
            if "last_point_bytes" in verdict:
                b = verdict["last_point_bytes"]
                table.add_row(name, "auto bytes", f"last point read {b['read'] / 1e6:.2f} MB, delta + touched "
                              f"{b['delta_and_touched'] / 1e6:.2f} MB", f"{b['ratio'] or 0:.2f}",
                              "met" if verdict.get("bytes_target_met") else "missed")
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


@bench.command("cluster")
@click.option("--scenario", default="sales_returns", show_default=True, help="The scenario whose cycle runs.")
@click.option("--scale", default=0.01, show_default=True, type=float, help="Data scale of the scenario.")
@click.option("--repeat", default=3, show_default=True, type=click.IntRange(min=1), help="Rounds per contender (medians).")
@click.option("--method", default="auto", show_default=True, type=click.Choice(METHOD_CHOICES))
@click.option("--out", default="benchmarks/results", show_default=True, type=click.Path(file_okay=False))
@click.option("--workdir", default=".tempura/bench/cluster", show_default=True, type=click.Path(file_okay=False))
@user_errors
def bench_cluster(scenario: str, scale: float, repeat: int, method: str, out: str, workdir: str) -> None:
    """One scenario's cycle on a local master and on a Spark standalone cluster started here (one
    worker with the same cores, bound to 127.0.0.1), alternating: wall time, executor CPU and
    whether every time point equals the local reference, side by side."""
    from rich.console import Console
    from rich.table import Table

    from benchmarks import cluster
    from tempura.runtime import get_spark

    _known_scenarios(scenario)
    console = Console(stderr=True)
    report = cluster.bench(get_spark(), Path(out), Path(workdir).resolve(), scenario, scale, repeat, method,
                           lambda m: console.log(m))
    table = Table(title=f"bench cluster: {scenario} at scale {scale}, {method}, medians of {repeat} ({report['seconds']:.0f} s)")
    for column in ("contender", "run (s)", "time points (s)", "executor CPU (s)", "equal to the reference"):
        table.add_column(column)
    for name, row in report["summary"].items():
        table.add_row(name, f"{row['seconds']:.1f}", f"{row['time_point_wall']:.1f}", f"{row['executor_cpu']:.1f}",
                      "yes" if row["correct"] else "NO")
    ratio = report["cluster_over_local"]
    table.add_row("cluster / local", *(f"{ratio[k]:.2f}" if ratio[k] is not None else "-"
                                       for k in ("seconds", "time_point_wall", "executor_cpu")), "")
    Console().print(table)
    click.echo("wrote " + ", ".join(report["files"]))
    sys.exit(0 if all(row["correct"] for row in report["summary"].values()) else 1)


@bench.command("clock")
@click.option("--scenario", "name", default="daily_revenue", show_default=True, help="The scenario.")
@click.option("--scale", default=1.0, show_default=True, type=float, help="Its data scale.")
@click.option("--repeat", default=3, show_default=True, type=click.IntRange(min=1), help="Cycles per contender (medians).")
@click.option("--contender", "contenders", multiple=True, type=click.Choice([*METHOD_CHOICES, "spark-sql"]),
              help="Only these contenders (default: auto, batch, spark-sql; any method of tempura's).")
@click.option("--out", default="benchmarks/results", show_default=True, type=click.Path(file_okay=False))
@click.option("--workdir", default=".tempura/bench", show_default=True, type=click.Path(file_okay=False))
@user_errors
def bench_clock(name: str, scale: float, repeat: int, contenders: tuple[str, ...], out: str, workdir: str) -> None:
    """A scenario run by the clock, each time point in a new process as cron runs it, measured
    whole (every Spark job, the process's CPU): auto, batch and plain spark.sql, alternating."""
    from benchmarks import by_clock
    from tempura.runtime import get_spark

    _known_scenarios(name)
    chosen = list(contenders) or list(by_clock.CONTENDERS)
    result = by_clock.run(get_spark(), Path(out), Path(workdir).resolve(), name, scale, repeat, chosen)
    summary = result["summary"]
    for contender in chosen:
        s = summary[contender]
        click.echo(f"{contender:9} whole-run executor CPU s per point {[round(v, 2) for v in s['cpu_seconds']]}, "
                   f"process CPU s {[round(v, 1) for v in s['process_cpu_seconds']]}, wall s "
                   f"{[round(v, 1) for v in s['wall_seconds']]}, records {[int(v) for v in s['records_read']]}"
                   f"{'' if s['correct'] else ', WRONG RESULTS'}")
    if "auto" in summary:
        auto = summary["auto"]
        click.echo(f"auto's fragments (partial) {[round(v, 2) for v in auto['fragments_cpu_seconds (partial)']]}, landing "
                   f"(partial) {[round(v, 2) for v in auto['landing_cpu_seconds (partial)']]}, whole run over both "
                   f"{[None if v is None else round(v, 2) for v in auto['overhead']]}")
        for other, ratio in summary["auto_ratios"].items():
            click.echo(f"auto / {other}: executor CPU {[None if v is None else round(v, 2) for v in ratio['cpu_seconds']]}"
                       f" (summed {ratio['cpu_seconds_summed']:.2f}), wall "
                       f"{[None if v is None else round(v, 2) for v in ratio['wall_seconds']]}")
    click.echo(f"wrote {Path(out) / f'clock-{name}.json'}")


@bench.command("sdp")
@click.option("--scenario", "scenarios", multiple=True, help="Scenarios (default: daily_revenue and sales_returns).")
@click.option("--scale", default=1.0, show_default=True, type=float, help="Their data scale.")
@click.option("--repeat", default=3, show_default=True, type=click.IntRange(min=1), help="Cycles per contender (medians).")
@click.option("--design", "designs", multiple=True, type=click.Choice(["sdp-streaming", "sdp-mv"]),
              help="Only these SDP designs (default: both).")
@click.option("--out", default="benchmarks/results", show_default=True, type=click.Path(file_okay=False))
@click.option("--workdir", default=".tempura/bench", show_default=True, type=click.Path(file_okay=False))
@user_errors
def bench_sdp(scenarios: tuple[str, ...], scale: float, repeat: int, designs: tuple[str, ...], out: str,
              workdir: str) -> None:
    """tempura's auto against Spark Declarative Pipelines (streaming tables and a materialized
    view over them; one materialized view over the files), by the clock: each time point a new
    process of each, alternating, measured whole, every result checked."""
    from benchmarks import by_clock
    from benchmarks.sdp import DESIGNS
    from tempura.runtime import get_spark

    chosen = list(scenarios) or ["daily_revenue", "sales_returns"]
    _known_scenarios(*chosen)
    contenders = ["auto", *(designs or DESIGNS)]
    correct = True
    for name in chosen:
        result = by_clock.run(get_spark(), Path(out), Path(workdir).resolve(), name, scale, repeat, contenders, "sdp")
        summary = result["summary"]
        correct = correct and all(summary[c]["correct"] for c in contenders)
        _wide().print(clock_table(f"{name}, by the clock, whole runs (medians of {repeat})", contenders, summary))
        versus = summary["against_sdp"]
        for design in contenders[1:]:
            v = versus[design]
            best = " (SDP's best design)" if design == versus["best"] else ""
            last = "-" if v["last_cpu_ratio"] is None else f"{v['last_cpu_ratio']:.2f}"
            walls = " ".join("-" if w is None else f"{w:.2f}" for w in v["wall_ratio"])
            click.echo(f"auto / {design}{best}: executor CPU at the last point {last}, summed "
                       f"{v['summed_cpu_ratio']:.2f} (with the next cycle's t1 {v['summed_with_next_cpu_ratio']:.2f}); "
                       f"wall per point {walls}; process CPU summed {v['process_cpu_ratio_summed']:.2f}")
        click.echo(f"wrote {Path(out) / f'sdp-{name}.json'}")
    sys.exit(0 if correct else 1)


@bench.command("replanning")
@click.option("--scenario", "name", default="sales_returns", show_default=True, help="The scenario.")
@click.option("--scale", default=1.0, show_default=True, type=float, help="Its data scale.")
@click.option("--repeat", default=2, show_default=True, type=click.IntRange(min=1), help="Cycles of each (medians).")
@click.option("--out", default="benchmarks/results", show_default=True, type=click.Path(file_okay=False))
@click.option("--workdir", default=".tempura/bench", show_default=True, type=click.Path(file_okay=False))
@user_errors
def bench_replanning(name: str, scale: float, repeat: int, out: str, workdir: str) -> None:
    """What reusing plannings saves by the clock: every planning's wall time per time point
    (partial: planning only), with plannings reused and with every one made, alternating."""
    from benchmarks import replanning
    from tempura.runtime import get_spark

    _known_scenarios(name)
    result = replanning.run(get_spark(), Path(out), Path(workdir).resolve(), name, scale, repeat)
    summary = result["summary"]
    for mode, values in summary["planning_seconds (partial)"].items():
        click.echo(f"{mode:8} planning wall s per time point (partial) {[round(v, 2) for v in values]}")
    click.echo("reused / planned " + str([None if v is None else round(v, 2) for v in summary["ratio reused / planned"]])
               + ("" if summary["correct"] else ", WRONG RESULTS"))
    click.echo(f"wrote {Path(out) / f'replanning-{name}.json'}")
    sys.exit(0 if summary["correct"] else 1)


@bench.command("floor")
@click.option("--scenario", "name", default="sales_returns_seed", show_default=True, help="The scenario.")
@click.option("--scale", default=1.0, show_default=True, type=float, help="Its data scale.")
@click.option("--repeat", default=5, show_default=True, type=click.IntRange(min=1), help="Runs of each (medians).")
@click.option("--out", default="benchmarks/results", show_default=True, type=click.Path(file_okay=False))
@click.option("--workdir", default=".tempura/bench/floor", show_default=True, type=click.Path(file_okay=False))
@user_errors
def bench_floor(name: str, scale: float, repeat: int, out: str, workdir: str) -> None:
    """How low a scenario's last time point can go: its query over the last interval's rows alone
    (what any plan must read then) against the query over the whole snapshot, alternating."""
    from rich.console import Console

    from benchmarks import floor
    from tempura.runtime import get_spark

    _known_scenarios(name)
    console = Console(stderr=True)
    report = floor.run(get_spark(), Path(out), Path(workdir).resolve(), name, scale, repeat, lambda m: console.log(m))
    m = report["medians"]
    click.echo(f"{name} at scale {scale:g}, medians of {repeat}: snapshot at t{report['time_points']} "
               f"{m['snapshot']['cpu']:.3f} s CPU, {m['snapshot']['rows']:,.0f} rows read; its last interval alone "
               f"{m['floor']['cpu']:.3f} s CPU, {m['floor']['rows']:,.0f} rows; floor / snapshot: CPU "
               f"{report['floor_over_snapshot_cpu']:.2f}, rows {report['floor_over_snapshot_rows']:.2f}; Spark's own "
               f"planning of the last interval {m['floor-spark']['cpu']:.3f} s CPU"
               + ("" if report["floor_rows_as_spark"] else "; tempura's plan over the last interval did NOT give "
                  "Spark's rows"))
    click.echo("wrote " + ", ".join(report["files"]))


@bench.command("endless")
@click.option("--days", default=14, show_default=True, type=click.IntRange(min=2), help="Daily cycles to run.")
@click.option("--per-day", default=50_000, show_default=True, type=click.IntRange(min=1), help="Sales arriving a day.")
@click.option("--out", default="benchmarks/results", show_default=True, type=click.Path(file_okay=False))
@click.option("--workdir", default=".tempura/bench/endless", show_default=True, type=click.Path(file_okay=False))
@user_errors
def bench_endless(days: int, per_day: int, out: str, workdir: str) -> None:
    """A view kept forever: gross per category to date on an endless schedule of daily cycles,
    auto (states carried from cycle to cycle) against batch (recompute), alternating, each
    cycle in a new runner; every cycle's result checked against spark.sql over all history."""
    from rich.console import Console
    from rich.table import Table

    from benchmarks import endless
    from tempura.runtime import get_spark

    console = Console(stderr=True)
    report = endless.run(get_spark(), Path(out), Path(workdir).resolve(), days, per_day, lambda m: console.log(m))
    table = Table(title=f"bench endless: {days} daily cycles of 4 time points, {per_day:,} sales a day "
                        f"({report['seconds']:.0f} s)")
    for column in ("contender", "last point CPU (s)", "last point wall (s)", "rows read", "carry CPU (s)",
                   "compactions", "CPU growth"):
        table.add_column(column)
    for name, row in report["summary"].items():
        table.add_row(name, f"{row['last_cpu_late']:.2f}", f"{row['last_wall_late']:.2f}",
                      f"{row['last_rows_read_late']:,.0f}", f"{row['carry_cpu_late']:.2f}", str(row["compactions"]),
                      f"{row['growth']:.2f}")
    Console().print(table)
    click.echo(f"medians over the second half of the cycles; history grew {report['history_growth']:.1f}x from cycle 1; "
               f"auto / batch at the last time point: CPU {report['auto_over_batch_last_cpu']:.2f}, wall "
               f"{report['auto_over_batch_last_wall']:.2f}; CPU growth: the last two cycles' last point over cycles 1-2's; "
               f"every result equal to spark.sql: "
               f"{'yes' if report['correct'] else 'NO'}")
    click.echo("wrote " + ", ".join(report["files"]))
    sys.exit(0 if report["correct"] else 1)


@bench.command("shop")
@click.option("--scale", default=0.01, show_default=True, type=float, help="Of the shop's data (1: 100,000 orders).")
@click.option("--scenario", "scenarios", multiple=True, help="A shop_* scenario (default: the four).")
@click.option("--method", "methods", multiple=True, help="A method (default: auto and every forced one).")
@click.option("--out", default="benchmarks/results", show_default=True, type=click.Path(file_okay=False))
@click.option("--workdir", default=".tempura/bench/shop", show_default=True, type=click.Path(file_okay=False))
@user_errors
def bench_shop(scale: float, scenarios: tuple[str, ...], methods: tuple[str, ...], out: str, workdir: str) -> None:
    """The shop's four standing queries by the clock for two days of 6-hour points, quiet nights
    included, under auto and every forced method; every delivery checked against spark.sql over
    its snapshot (benchmarks.shop)."""
    from rich.console import Console
    from rich.table import Table

    from benchmarks import shop
    from tempura.runtime import get_spark
    from tempura.standing import METHODS

    chosen = scenarios or shop.SCENARIOS
    unknown = sorted(set(chosen) - set(shop.SCENARIOS))
    if unknown:
        raise click.UsageError(f"unknown shop scenario {unknown[0]} (known: {', '.join(shop.SCENARIOS)})")
    began = time.perf_counter()
    deliveries = shop.run(get_spark(), Path(workdir).resolve(), scale, methods or METHODS, chosen)
    table = Table(title=f"bench shop, scale {scale:g}: deliveries equal to spark.sql, by the clock "
                        f"({time.perf_counter() - began:.0f} s)")
    table.add_column("scenario")
    used = list(dict.fromkeys(d.method for d in deliveries))
    for method in used:
        table.add_column(method)
    for name in chosen:
        cells = []
        for method in used:
            mine = [d for d in deliveries if d.scenario == name and d.method == method]
            cells.append(f"{sum(d.correct for d in mine)}/{len(mine)}")
        table.add_row(name, *cells)
    Console().print(table)
    for wrong in (d for d in deliveries if not d.correct):
        click.echo(f"wrong: {wrong.scenario} under {wrong.method} at {wrong.at:%Y-%m-%d %H:%M}: {wrong.detail}")
    click.echo(f"wrote {shop.write_report(deliveries, Path(out))}")
    sys.exit(0 if deliveries and all(d.correct for d in deliveries) else 1)


@bench.command("freshness")
@click.option("--scale", default=0.01, show_default=True, type=float, help="Of the shop's data (1: 100,000 orders).")
@click.option("--rounds", default=1, show_default=True, type=click.IntRange(min=1), help="Cycles per contender, alternating.")
@click.option("--out", default="benchmarks/results", show_default=True, type=click.Path(file_okay=False))
@click.option("--workdir", default=".tempura/bench/freshness", show_default=True, type=click.Path(file_okay=False))
@user_errors
def bench_freshness(scale: float, rounds: int, out: str, workdir: str) -> None:
    """A target_lag schedule (tempura chooses the points) against fixed schedules of 2, 4, 8 and
    16 points, each run by the clock in a process per time point: the objective the choice
    weighs, measured (the processes' seconds plus lag_weight times the seconds results were
    older than the target), beside the model's; every delivery checked against spark.sql
    (benchmarks.freshness)."""
    from rich.console import Console
    from rich.table import Table

    from benchmarks import freshness
    from tempura.runtime import get_spark

    console = Console(stderr=True)
    report = freshness.run(get_spark(), Path(workdir).resolve(), scale, rounds, lambda m: console.log(m))
    table = Table(title=f"bench freshness, {report['scenario']} at scale {scale:g}, {rounds} round(s), "
                        f"medians ({report['seconds']:.0f} s)")
    for column in ("contender", "points", "work (s)", "process CPU (s)", "past target (s)", "objective",
                   "÷ target_lag", "model's objective", "equal to spark.sql"):
        table.add_column(column, justify="left" if column == "contender" else "right")
    for row in report["summary"]:
        table.add_row(row["contender"], str(row["points"]), f"{row['median_work_seconds']:.1f}",
                      f"{row['median_process_cpu_seconds']:.1f}", f"{row['median_past_target_seconds']:.1f}",
                      f"{row['median_objective']:.1f}", f"{row['ratio_to_target_lag']:.2f}",
                      "" if row["model_objective"] is None else f"{row['model_objective']:.1f}",
                      row["deliveries_equal_to_spark_sql"])
    Console(width=150).print(table)
    if report["choice"] is not None:
        from tempura.scheduler.freshness import FreshnessChoice

        click.echo(FreshnessChoice.from_json(report["choice"]).text())
    click.echo(f"wrote {freshness.write_report(report, Path(out))}")
    wrong = [w for c in report["cycles"] for w in c["wrong"]]
    for line in wrong:
        click.echo(f"wrong: {line}")
    sys.exit(1 if wrong else 0)


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
    from tempura.runtime import get_spark

    _known_scenarios(*scenarios)
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


@bench.command("fidelity")
@click.option("--queries", default=1000, show_default=True, type=click.IntRange(min=1), help="Random queries.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the schemas, data and queries.")
@click.option("--out", default="benchmarks/results", show_default=True, type=click.Path(file_okay=False))
@click.option("--workdir", default=".tempura/bench/fidelity", show_default=True, type=click.Path(file_okay=False))
@click.option("--standing", is_flag=True, help="Standing queries instead: the random tables arrive over 3 time "
              "points, each query simulated under every method, every delivery checked.")
@user_errors
def bench_fidelity(queries: int, seed: int, out: str, workdir: str, standing: bool) -> None:
    """Random schemas, data and queries, each run by tempura and by spark.sql: equal, wrong, crash
    and refused per construct (names, types and the bag of rows compared). Exits 1 on a wrong
    answer or a crash."""
    from benchmarks import fidelity

    summary = fidelity.bench(queries, seed, Path(out), Path(workdir).resolve(), standing)
    click.echo(f"wrote {Path(out) / ('fidelity-standing.json' if standing else 'fidelity.json')}")
    sys.exit(1 if summary["outcomes"]["wrong"] or summary["outcomes"]["crash"] else 0)
