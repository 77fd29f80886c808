"""The ``tempura`` command line: a thin layer over the Python API.

User errors print one line (``error: …``) and exit with status 2. tempura's own faults print one
line (``internal error: …``) and exit with status 70.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any, Callable, TypeVar

import click

from tempura.errors import InternalError, TempuraError
from tempura.tvr.time import cycle_words, time_point_words

F = TypeVar("F", bound=Callable[..., Any])


METHOD_CHOICES = ["auto", "batch", "ivm", "streaming", "ojv", "higher-order"]


INTERNAL = 70
"""The exit status of tempura's own fault (``EX_SOFTWARE``), apart from a user's error (2)."""


def user_errors(fn: F) -> F:
    """Report :class:`TempuraError` as one line on stderr and exit 2; :class:`InternalError` as
    one line saying it is tempura's, and exit 70."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TempuraError as error:
            click.echo(f"error: {error}", err=True)
            sys.exit(2)
        except InternalError as error:
            click.echo(internal_line(error), err=True)
            sys.exit(INTERNAL)

    return wrapper  # type: ignore[return-value]


def internal_line(error: InternalError) -> str:
    return f"internal error: {error}; nothing was committed. Please report it with the spec."


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


class Commands(click.Group):
    """tempura's commands, and those other installed packages declare as ``tempura.commands``
    entry points (the benchmarks' ``bench``, ``demo`` and ``tpch-check``), loaded when asked
    for."""

    def _plugins(self) -> dict[str, Any]:
        from importlib.metadata import entry_points

        return {point.name: point for point in entry_points(group="tempura.commands") if point.name not in self.commands}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*self.commands, *self._plugins()])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = super().get_command(ctx, cmd_name)
        if found is None:
            point = self._plugins().get(cmd_name)
            found = point.load() if point is not None else None
        return found


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tempura")
def main() -> None:
    """tempura: a cost-based, incremental query optimizer for standing queries on Spark."""


@main.command()
@catalog_option
@dialect_option
@click.argument("sql")
@click.option("--out", type=click.Path(), help="Write the result to this folder instead of printing it (CSV: one file, part-00000.csv, with one header).")
@click.option("--format", "fmt", type=click.Choice(["csv", "parquet", "json"]), default="csv", show_default=True)
@click.option("--limit", default=50, show_default=True, help="Rows to print.")
@user_errors
def query(catalog: str, dialect: str, sql: str, out: str | None, fmt: str, limit: int) -> None:
    """Run SQL (or @file.sql) with tempura's plan."""
    from rich.console import Console
    from rich.table import Table

    from tempura.api import Session

    from tempura.runtime import run_with_fallback
    from tempura.runtime.outputs import write_output

    session = Session(catalog, dialect=dialect)
    planned = session.optimize(_read_sql(sql))
    if out:
        _, fallback = run_with_fallback(planned.query, session.spark, planned.hints,
                                        lambda frame: write_output(frame, out, fmt), session.spark_planning)
        if fallback is not None:
            click.echo(f"warning: {fallback.message}", err=True)
        click.echo(f"wrote {out} ({fmt})")
        return
    from tempura.runtime.executor import plan_failure, spark_errors

    try:
        (columns, rows), fallback = run_with_fallback(planned.query, session.spark, planned.hints,
                                                      lambda frame: (frame.columns, frame.limit(limit + 1).collect()),
                                                      session.spark_planning)
    except spark_errors() as error:
        raise plan_failure(error) from None
    if fallback is not None:
        click.echo(f"warning: {fallback.message}", err=True)
    table = Table()
    for name in columns:
        table.add_column(name)
    for row in rows[:limit]:
        table.add_row(*["NULL" if v is None else str(v) for v in row])
    Console().print(table)
    if len(rows) > limit:
        click.echo(f"(first {limit} rows shown)")


def _cost_pairs(values: tuple[str, ...]) -> dict[str, object]:
    """``--cost NAME=VALUE`` options as a mapping."""
    pairs: dict[str, object] = {}
    for item in values:
        if "=" not in item:
            raise TempuraError(f"--cost takes NAME=VALUE, got '{item}'")
        name, value = item.split("=", 1)
        pairs[name.strip()] = value.strip()
    return pairs


def _cost_constants(values: tuple[str, ...]) -> Any:
    """The cost constants: the defaults, then ``--cost``."""
    from tempura.cost import CostConstants

    return CostConstants.from_mapping(_cost_pairs(values))


workdir_option = click.option(
    "--workdir",
    default=".tempura",
    show_default=True,
    help="Where statistics and state are kept: a path, or a URI of a Hadoop file system.",
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
@click.option("--no-rule", "no_rules", multiple=True, metavar="NAME",
              help="Disable a rule or a phase by name (repeatable; tempura rules lists them).")
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
    from tempura.optimizer.explain import format_physical, format_trace, physical_json
    from tempura.sql import to_spark_sql

    session = Session(catalog, dialect=dialect, workdir=workdir, cost_constants=_cost_constants(cost))
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
            out["phases"] = [{"name": p.name, "ran": p.ran, "seconds": p.seconds, "note": p.note} for p in planned.phases]
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
    from tempura.optimizer.explain import format_count

    for name, stats in results.items():
        unique = ", ".join(c for c, s in stats.columns.items() if s.unique) or "-"
        summary.add_row(name, format_count(stats.rows), format_bytes(stats.bytes), str(len(stats.columns)), unique, stats.source)
    Console().print(summary)


@main.command("tpch-gen")
@click.option("--scale", default=0.01, show_default=True, type=float, help="TPC-H scale factor.")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Output folder.")
@user_errors
def tpch_gen(scale: float, out: str) -> None:
    """Write TPC-H parquet data and a catalog.yaml for it."""
    from tempura import tpch

    catalog = tpch.generate(scale, out)
    click.echo(f"wrote TPC-H scale {scale:g} to {out}; catalog: {catalog}")


@main.command("tpcds-gen")
@click.option("--scale", default=0.01, show_default=True, type=float, help="TPC-DS scale factor.")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Output folder.")
@user_errors
def tpcds_gen(scale: float, out: str) -> None:
    """Write TPC-DS parquet data and a catalog.yaml for it."""
    from tempura import tpcds

    catalog = tpcds.generate(scale, out)
    click.echo(f"wrote TPC-DS scale {scale:g} to {out}; catalog: {catalog}")


SELECTOR_CHOICES = ["auto", "greedy", "ilp", "off"]  # tempura.mqo.SELECTORS, without importing the planner


# -- standing queries: one spec, or a project of specs ---------------------------------------------

specs_argument = click.argument("specs", nargs=-1, required=True, type=click.Path(), metavar="SPEC_OR_DIR...")
select_option = click.option("--select", "select", multiple=True, metavar="NAME",
                             help="Only the specs of this name or shell pattern (repeatable).")
job_workdir_option = click.option("--workdir", default=None,
                                  help="Where jobs keep statistics, states, manifests and history: a path, or a "
                                       "URI of a Hadoop file system (hdfs://…, s3a://…, file://…)  [default: "
                                       ".tempura beside each spec file]")


def _each(specs: tuple[str, ...], select: tuple[str, ...], body: Callable[[Path], int | None]) -> None:
    """``body`` on every spec ``specs`` name (files, and every spec under folders), kept by
    ``--select``. One spec: its error ends the command as usual. Several: each is headed by its
    name, an error is one line and the others go on; the exit status is the worst."""
    from tempura.project import spec_files

    files = spec_files(specs, select)
    if len(files) == 1:
        code = body(files[0].path) or 0
        if code:
            sys.exit(code)
        return
    worst = failed = 0
    for file in files:
        click.echo(f"== {file.name} ({file.path})")
        try:
            worst = max(worst, body(file.path) or 0)
        except TempuraError as error:
            click.echo(f"error: {error}", err=True)
            failed += 1
        except InternalError as error:
            click.echo(internal_line(error), err=True)
            failed += 1
            worst = max(worst, INTERNAL)
    if failed:
        click.echo(f"error: {failed} of {len(files)} spec(s) failed", err=True)
        sys.exit(max(2, worst))
    if worst:
        sys.exit(worst)


@main.command()
@specs_argument
@select_option
@user_errors
def validate(specs: tuple[str, ...], select: tuple[str, ...]) -> None:
    """Check standing queries' spec files (keys, types, schedule, objective, paths, parquet
    footers, the query's tables and columns), without Spark; only a query calling a function
    sqlglot does not know starts Spark, to ask whether the function exists."""
    from tempura.standing import StandingQuery

    def one(path: Path) -> None:
        found = StandingQuery(path).validate()
        if not found.ok:
            raise TempuraError(found.describe())
        click.echo(f"{path}: ok — {found.describe()}")

    _each(specs, select, one)


@main.command("run")
@specs_argument
@select_option
@click.option("--simulate", is_flag=True, help="Run a whole cycle now, replaying the data's arrival.")
@click.option("--method", type=click.Choice(METHOD_CHOICES), default="auto", show_default=True,
              help="Force one incremental method (for comparison).")
@click.option("--daemon", is_flag=True, help="Keep running: wait for each time point (one spec only).")
@click.option("--now", "now_text", default=None, metavar="TIMESTAMP",
              help="Take this as the current time (ISO), instead of the wall clock; of a schedule of numbers, "
                   "the number to run up to.")
@job_workdir_option
@click.option("--from", "since_text", default=None, metavar="TIMESTAMP",
              help="Catch up on every cycle from the one under way at this time (ISO), past the spec's max_catch_up.")
@click.option("--wait", "wait", type=click.FloatRange(min=0), default=0.0, show_default=True, metavar="SECONDS",
              help="If another run holds the job's lock, wait this long for it instead of stopping.")
@click.option("--force-unlock", "force_unlock", is_flag=True,
              help="Remove the job's lock first, whoever holds it (only when its holder is known to be dead).")
@click.option("--verbose", "-v", is_flag=True, help="Progress also names the memo's forms of fragments (SS[2] of G6).")
@user_errors
def run_command(specs: tuple[str, ...], select: tuple[str, ...], simulate: bool, method: str, daemon: bool,
                now_text: str | None, workdir: str | None, since_text: str | None, wait: float, force_unlock: bool,
                verbose: bool) -> None:
    """Run standing queries: the time points due by the clock (then exit; idempotent), a whole
    cycle now (--simulate, afresh each time), or continuously (--daemon). One run at a time
    writes a job: a second one stops with the holder's name, or waits (--wait).

    --simulate delivers into the simulation's folder under the workdir, never to the spec's
    output."""
    from rich.console import Console

    from tempura.scheduler.progress import progress_bars
    from tempura.standing import StandingQuery

    if simulate and daemon:
        raise click.UsageError("--simulate runs one cycle now; --daemon follows the clock: choose one")
    now = _timestamp(now_text, "--now")
    since = _timestamp(since_text, "--from")
    if simulate and since is not None:
        raise click.UsageError("--simulate runs the first cycle afresh; --from is for runs by the clock")

    def one(path: Path) -> None:
        with progress_bars(Console(stderr=True)) as progress:
            query = StandingQuery(path, workdir, progress=progress, verbose=verbose)
            if force_unlock:
                _force_unlock(query, method if simulate else None)
            if simulate:
                simulated = query.simulate(method)
                results, skipped = simulated.results, 0
            elif daemon:
                _daemon(query, method, wait)
                return
            else:
                outcome = query.run_due(now, since=since, method=method, wait=wait)
                results, skipped = outcome.results, outcome.skipped
                if outcome.chose is not None:
                    click.echo(outcome.chose.text())
        if skipped:
            click.echo(f"{skipped} earlier cycle(s) not caught up (max_catch_up: {query.spec.max_catch_up}); "
                       f"run with --from TIMESTAMP to catch up on them")
        _echo_results(results)
        if simulate:
            click.echo(f"deliveries of this simulation: {query.job_folder(method)} (never the spec's output)")
        if not results:
            click.echo(_nothing_due(query, now))

    if daemon:
        from tempura.project import spec_files

        if len(spec_files(specs, select)) != 1:
            raise click.UsageError("--daemon follows one spec's clock: name one spec")
    _each(specs, select, one)


def _set_aside(run: dict[str, Any]) -> str:
    """What a run's line says of the rows it did not land as they came: set aside (late, or with
    no arrival) and malformed (as Spark reads them, NULL where a value did not parse)."""
    out = ""
    rejected = int(run.get("rejected_rows") or 0)
    if rejected:
        nulls = int(run.get("null_arrival_rows") or 0)
        parts = ([f"{rejected - nulls} late"] if rejected > nulls else []) + ([f"{nulls} with no arrival"] if nulls else [])
        out += f", {rejected} row(s) set aside ({', '.join(parts)})"
    malformed = int(run.get("malformed_rows") or 0)
    if malformed:
        out += (f", {malformed} malformed row(s) read with NULL where a value did not parse (first: "
                f"{run.get('malformed_example')})")
    return out


def _exists(folder: Any) -> bool:
    """Whether a job folder exists (a local path; one at a URI is taken to)."""
    return not isinstance(folder, Path) or folder.exists()


def _nothing_due(query: Any, now: Any) -> str:
    """``no time point is due``, and when the next one is (after ``now``, the wall clock when
    ``None``)."""
    import datetime as dt

    upcoming = query.status(now if isinstance(now, dt.datetime) else None).next
    if upcoming is None:
        return "no time point is due; the schedule has no time point left"
    if upcoming["due"]:  # due, but not run: a cycle further back than max_catch_up
        return f"no time point is due in the cycles a run catches up on; the earliest not committed is " \
               f"{time_point_words(upcoming['index'], upcoming['time'])} of the {cycle_words(upcoming['cycle'])}"
    return f"no time point is due; the next is {time_point_words(upcoming['index'], upcoming['time'])}"


def _daemon(query: Any, method: str, wait: float) -> None:
    """``run --daemon``: the line of each time point as ``run`` prints it, as it is taken; a
    failure's one line, then a retry; and one line when it stops (SIGTERM, SIGINT, or the
    schedule's end)."""
    from tempura.scheduler.stopping import Abandoned, Stopper

    stopper = Stopper()
    try:
        with stopper.installed():
            query.run_daemon(method, wait, stopper=stopper, on_point=lambda r: _echo_results([r]),
                             on_failure=lambda error: click.echo(f"error: {error} (tried again later)", err=True))
    except Abandoned as abandoned:
        click.echo(f"stopped by {abandoned.signal_name}: the time point in flight was abandoned, and nothing of it "
                   "committed; the next run takes it again")
        return
    if stopper.signal_name is not None:
        click.echo(f"stopped by {stopper.signal_name}: every time point taken was committed")
    else:
        click.echo("stopped: the schedule has no time point left")


def _timestamp(text: str | None, option: str) -> Any:
    """An ISO timestamp, or a finite number (a time point of a schedule of numbers)."""
    import datetime as dt
    import math

    if not text:
        return None
    for number in (int, float):
        try:
            value = number(text)
        except ValueError:
            continue
        if math.isfinite(value):
            return value
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        raise click.BadParameter(f"'{text}' is neither an ISO timestamp nor a number", param_hint=option) from None


def _force_unlock(query: Any, simulated: str | None) -> None:
    holder = query.force_unlock(simulated)
    if holder is not None:
        click.echo(f"warning: removed the lock of {query.job_folder(simulated)} held by {holder.describe()}; if that "
                   f"run is alive, two writers can commit a wrong result", err=True)


def _point(cycle: str, index: int, time: Any) -> str:
    """A time point of a cycle as a run's line names it: ``cycle of 2026-11-30 00:00, t2
    (2026-11-30 06:00)``."""
    return f"{cycle_words(cycle)}, {time_point_words(index, time)}"


def _echo_results(results: list[Any]) -> None:
    """One line per time point a run took: committed already, or what it ran and delivered."""
    for r in results:
        if r.skipped:
            click.echo(f"{_point(r.cycle, r.index, r.time)}: committed already")
            continue
        run = r.manifest["run"]
        fell: dict[str, list[str]] = {}  # why -> the fragments that ran another method than the forced one
        again = []  # fragments run again without join hints that did not fit
        for f in r.manifest["fragments"]:
            if f.get("fallback"):
                fell.setdefault(f["fallback"], []).append(f"{f['id']} ran {f['method']}")
            if f.get("broadcast_fallback"):
                fell_back = f["broadcast_fallback"]
                again.append(f"{f['id']} ran again without {fell_back['dropped_join_hints']} join hint(s) after "
                             f"{fell_back['error']}")
        click.echo(f"{_point(r.cycle, r.index, r.time)}: {run['method']}, {len(r.manifest['fragments'])} fragment(s), "
                   f"CPU {run['cpu_seconds']:.2f} s, wall {run['wall_seconds']:.2f} s, {run['rows_landed']} rows landed"
                   + _set_aside(run)
                   + "".join(f"; {', '.join(ran)}, not {run['method']}: {why}" for why, ran in fell.items())
                   + "".join(f"; {line}" for line in again)
                   + (f"; delivered {r.delivered}" if r.delivered else "")
                   + (f"; {r.reason}" if r.reason else ""))


@main.command("check")
@specs_argument
@select_option
@click.option("--simulate", "simulated", default=None, metavar="METHOD", help="Check a simulation's folder (of METHOD).")
@job_workdir_option
@user_errors
def check_command(specs: tuple[str, ...], select: tuple[str, ...], simulated: str | None, workdir: str | None) -> None:
    """Verify jobs' folders: the chain of manifests, every file they list (sizes, rows) and the
    newest delivery. Exits 1 and names each problem if anything is damaged."""
    from tempura.standing import StandingQuery

    def one(path: Path) -> int:
        query = StandingQuery(path, workdir)
        report = query.check(simulated)
        if report.lock:
            click.echo(f"locked by {report.lock}")
        for cycle in report.cycles:
            title = cycle_words(cycle.label)
            for leftover in cycle.leftovers:
                click.echo(f"{title}: {leftover} is an unfinished attempt's (the next run deletes it)")
            for problem in cycle.problems:
                click.echo(f"damaged: {problem}")
            for passed in cycle.passed:
                click.echo(f"{title}: {passed}")
            if cycle.problems:
                start = "its start" if cycle.intact == 0 else _known(cycle.intact, cycle.times)
                click.echo(f"{title}: the last time point to run on from is {start}; "
                           f"'tempura repair {path}' rebuilds from {_known(cycle.intact + 1, cycle.times)}")
        committed = sum(c.committed for c in report.cycles)
        if report.damaged:
            click.echo(f"{query.name}: {len(report.damaged)} of {len(report.cycles)} cycle(s) damaged")
            return 1
        if not report.cycles and not _exists(query.job_folder(simulated)):
            click.echo(f"{query.name}: no job folder at {query.job_folder(simulated)}: nothing has run with this "
                       f"workdir (give --workdir where the job runs)")
            return 0
        click.echo(f"{query.name}: ok — {len(report.cycles)} cycle(s), {committed} committed time point(s), every "
                   f"listed file verified")
        return 0

    _each(specs, select, one)


def _known(index: int, times: dict[int, str]) -> str:
    """``t3 (2026-11-20 18:00)``, or ``t3`` when no readable manifest gives its value."""
    return time_point_words(index, times[index]) if index in times else f"t{index}"


@main.command("repair")
@specs_argument
@select_option
@click.option("--from", "first", default=None, metavar="tN",
              help="Rebuild from this time point (its predecessor must be intact); default: after the last intact one.")
@click.option("--cycle", "cycle", default=None,
              help="Only this cycle: its origin as check names it (2026-11-30 00:00) or its folder's name; default: "
                   "every damaged one.")
@click.option("--method", type=click.Choice(METHOD_CHOICES), default="auto", show_default=True,
              help="The method the time points run again with (as the job's runs used).")
@job_workdir_option
@click.option("--wait", "wait", type=click.FloatRange(min=0), default=0.0, show_default=True, metavar="SECONDS",
              help="If another run holds the job's lock, wait this long for it.")
@click.option("--verbose", "-v", is_flag=True, help="Progress also names the memo's forms of fragments (SS[2] of G6).")
@user_errors
def repair_command(specs: tuple[str, ...], select: tuple[str, ...], first: str | None, cycle: str | None, method: str,
                   workdir: str | None, wait: float, verbose: bool) -> None:
    """Rebuild damaged jobs from their sources, from the last intact time point: later commits
    are taken back (their manifests kept aside under uncommitted/) and their time points run
    again."""
    from rich.console import Console

    from tempura.scheduler.progress import progress_bars
    from tempura.standing import StandingQuery

    start = None
    if first is not None:
        digits = first[1:] if first[:1] in ("t", "T") else first
        if not digits.isdigit() or int(digits) < 1:
            raise click.BadParameter(f"'{first}' is not a time point such as t3", param_hint="--from")
        start = int(digits)

    def one(path: Path) -> None:
        with progress_bars(Console(stderr=True)) as progress:
            query = StandingQuery(path, workdir, progress=progress, verbose=verbose)
            results = query.repair(start, _cycle_folder(cycle), method, wait).results
        _echo_results(results)
        click.echo(f"{query.name}: repaired {len(results)} time point(s)" if results else f"{query.name}: nothing to repair")

    _each(specs, select, one)


def _cycle_folder(text: str | None) -> str | None:
    """``repair --cycle``: a cycle's folder name, given as it or as its origin (``2026-11-30
    00:00``, ``2026-11-30``, or ``cycle of …`` as check prints it)."""
    import datetime as dt

    if text is None:
        return None
    origin = text.strip().removeprefix("the ").removeprefix("cycle of ").strip()
    if "-" not in origin:  # a folder's name (20261130T000000, 20261130, 00000)
        return text
    for parse, form in ((dt.date.fromisoformat, "%Y%m%d"), (dt.datetime.fromisoformat, "%Y%m%dT%H%M%S")):
        try:
            value = parse(origin)
        except ValueError:
            continue
        if parse is dt.date.fromisoformat and len(origin) != 10:
            continue
        return value.strftime(form)
    return text


def _console() -> Any:
    """A console for tables: at a terminal, its width; piped, wide enough that no row wraps."""
    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=1000)


@main.command("history")
@specs_argument
@select_option
@click.option("--fragments", is_flag=True, help="Also list every fragment: estimated against measured.")
@click.option("--simulate", "simulated", default=None, metavar="METHOD", help="Show a simulation's history (of METHOD).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@job_workdir_option
@user_errors
def history_command(specs: tuple[str, ...], select: tuple[str, ...], fragments: bool, simulated: str | None, fmt: str,
                    workdir: str | None) -> None:
    """The run history of standing queries: each committed time point, its work, and whether
    the plan changed afterwards and why."""
    from rich.table import Table

    from tempura.runtime.metrics import PURPOSES, UNTAGGED
    from tempura.scheduler.calibration import model_factor_words
    from tempura.scheduler.history import forecast_error, work_split
    from tempura.standing import StandingQuery

    def one(path: Path) -> None:
        query = StandingQuery(path, workdir)
        history = query.history(simulated)
        if fmt == "json":
            data = history.to_json()
            if not fragments:
                data.pop("fragments")
            click.echo(json.dumps({"name": query.name, **data}, indent=2, default=str))
            return
        if not history.runs:
            folder = query.job_folder(simulated)
            there = "" if _exists(folder) else f" (no job folder at {folder}: give --workdir where the job runs)"
            click.echo(f"{query.name}: no committed time point yet{there}")
            _echo_events(history.events)
            return
        table = Table(title=f"{query.name}: runs")
        for column in ("cycle", "time point", "method", "model est. (s)", "measured CPU (s)", "wall (s)", "rows in",
                       "landing CPU (s)", "overhead CPU (s)", "run wall (s)", "rows landed (forecast)", "late rows",
                       "re-planned, carried"):
            table.add_column(column)
        for r in history.runs:
            landing = r.get("landing_cpu_seconds")
            _, overhead = work_split(r)
            forecast = "; ".join(f"{name} {got} ({want:.0f})" for name, (want, got) in forecast_error(r).items())
            table.add_row(cycle_words(r["cycle"]), time_point_words(r["time_index"], r["time_value"]), r["method"],
                          f"{r['estimated_seconds']:.3g}",
                          f"{r['cpu_seconds']:.3g}", f"{r['wall_seconds']:.3g}", str(r["rows_landed"]),
                          "" if landing is None else f"{landing:.3g}", "" if overhead is None else f"{overhead:.3g}",
                          "" if r.get("run_wall_seconds") is None else f"{r['run_wall_seconds']:.3g}", forecast,
                          str((r["late_rows"] or 0) + (r["rejected_rows"] or 0)),
                          (r["reason"] or "") if r["replanned"] or r["method"] == "carry" else "")
        table.caption = model_factor_words(history.fragments)
        console = _console()
        console.print(table)
        worked = [r for r in history.runs if r.get("work")]
        if worked:
            purposes = [p for p in (*PURPOSES, UNTAGGED) if any(p in r["work"] for r in worked)]
            split = Table(title="measured CPU (s) and rows read, by purpose: the plan's work (fragment) and the run's "
                                "around it")
            for column in ("cycle", "time point", *purposes, "planning wall (s)"):
                split.add_column(column)
            for r in worked:
                work = r["work"]
                cells = [f"{work[p]['cpu_seconds']:.3g} ({work[p]['rows_in']})" if p in work else "" for p in purposes]
                split.add_row(cycle_words(r["cycle"]), time_point_words(r["time_index"], r["time_value"]), *cells,
                              "" if r.get("planning_seconds") is None else f"{r['planning_seconds']:.3g}")
            console.print(split)
        if fragments:
            detail = Table(title="fragments: the model's estimates against the measured")
            times = {(r["cycle"], r["time_index"]): r["time_value"] for r in history.runs}
            for column in ("cycle", "time point", "fragment", "method", "output", "model est. rows", "rows out", "rows in",
                           "model est. (s)", "measured CPU (s)", "wall (s)", "model est. stages", "stages", "bytes in",
                           "bytes out", "fallback"):
                detail.add_column(column)
            for f in history.fragments:
                when = times.get((f["cycle"], f["time_index"]))
                detail.add_row(cycle_words(f["cycle"]),
                               f"t{f['time_index']}" if when is None else time_point_words(f["time_index"], when),
                               f["fragment"],
                               f["method"] + (" (stream)" if f["streaming"] else ""), f["output"],
                               f"{f['estimated_rows']:.4g}", str(f["rows_out"]), str(f["rows_in"]),
                               f"{f['estimated_seconds']:.3g}", f"{f['cpu_seconds']:.3g}", f"{f['wall_seconds']:.3g}",
                               "" if f.get("estimated_stages") is None else f"{f['estimated_stages']:.0f}",
                               "" if f.get("stages") is None else str(f["stages"]), str(f["bytes_in"]),
                               str(f["bytes_out"]), f.get("fallback") or "")
            console.print(detail)
        _echo_events(history.events)
        click.echo(history.calibration)

    _each(specs, select, one)


EVENTS_SHOWN = 20  # the event log's last records ``history`` shows


def _echo_events(events: list[dict[str, Any]]) -> None:
    """The event log's last records: when, what came of the attempt, and its one line."""
    if not events:
        return
    from rich.table import Table

    table = Table(title=f"attempts (the last {min(len(events), EVENTS_SHOWN)} of {len(events)})")
    for column in ("at", "outcome", "time point", "message"):
        table.add_column(column)
    for e in events[-EVENTS_SHOWN:]:
        point = time_point_words(e["time_index"], e["time_value"]) if e.get("time_index") is not None else ""
        table.add_row(str(e["at"])[:19].replace("T", " "), e["outcome"], point, e.get("message") or "")
    _console().print(table)


@main.command("status")
@click.argument("specs", nargs=-1, type=click.Path(), metavar="[SPEC_OR_DIR...]")
@select_option
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@job_workdir_option
@user_errors
def status_command(specs: tuple[str, ...], select: tuple[str, ...], fmt: str, workdir: str | None) -> None:
    """Where each job stands: its last committed time point and when, the next one due, its lag
    behind the schedule, the method it ran, its last failure, and who holds its lock (the specs
    under the current folder when none is named)."""
    from rich.table import Table

    from tempura.project import spec_files
    from tempura.standing import StandingQuery

    found = [StandingQuery(f.path, workdir).status() for f in spec_files(specs or (".",), select)]
    if fmt == "json":
        click.echo(json.dumps({"jobs": [s.to_json() for s in found]}, indent=2, default=str))
        return
    table = Table(title="standing queries")
    for column in ("job", "last committed", "committed at", "method", "next", "lag", "last failure", "lock"):
        table.add_column(column)
    for s in found:
        last = time_point_words(s.last["index"], s.last["time"]) if s.last else "none yet"
        upcoming = "" if s.next is None else time_point_words(s.next["index"], s.next["time"]) + (" due" if s.next["due"] else "")
        failure = ""
        if s.last_failure is not None:
            failure = (f"{str(s.last_failure['at'])[:19].replace('T', ' ')}: {s.last_failure['message']}"
                       + (" (committed since)" if s.last_failure["recovered"] else ""))
        table.add_row(s.name, last, str(s.last["committed_at"])[:19].replace("T", " ") if s.last else "",
                      s.method or "", upcoming or "schedule done", _duration(s.lag_seconds), failure, s.lock or "free")
    _console().print(table)


def _duration(seconds: float) -> str:
    """``seconds`` as a user reads a lag: 0, 45 s, 12 min, 3.5 h, 2.0 d."""
    if seconds <= 0:
        return "0"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 36 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


@main.command("spec-reference")
def spec_reference_command() -> None:
    """Print the spec file's reference (docs/spec.md): every key, what it takes, its default and
    what it means, written from the spec's model."""
    from tempura.scheduler.spec.reference import reference

    click.echo(reference(), nl=False)


@main.command("submit-file")
def submit_file() -> None:
    """Print the file to give spark-submit: spark-submit [options] FILE run spec.yaml runs tempura
    with spark-submit's master and settings."""
    click.echo(Path(__file__).with_name("__main__.py"))


@main.command("rules")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--family", type=click.Choice(["normalize", "explore", "collapse", "implement", "enforce", "tvr"]), default=None,
              help="Only the rules of one family.")
def rules_command(fmt: str, family: str | None) -> None:
    """List the optimizer's phases and its rules: each rule's family, pattern and algebra, and for a
    TVR rule its operator family and method. Any of these names can be disabled with --no-rule."""
    from rich.table import Table

    from tempura.optimizer import ONE_OFF, STANDING
    from tempura.rules.registry import REGISTRY

    infos = REGISTRY.infos(family)
    pipelines = {"one-off": ONE_OFF, "standing": STANDING}
    if fmt == "json":
        click.echo(json.dumps({
            "phases": {name: [{"name": p.name, "doc": p.doc, "can_disable": not p.required} for p in pipe.phases]
                       for name, pipe in pipelines.items()},
            "rules": [i.to_json() for i in infos],
        }, indent=2))
        return
    console = _console()
    if family is None:
        phases = Table(title="phases")
        for column in ("query", "phase", "what it does", "disable"):
            phases.add_column(column)
        for name, pipe in pipelines.items():
            for phase in pipe.phases:
                phases.add_row(name, phase.name, phase.doc, "no" if phase.required else "yes")
        console.print(phases)
    table = Table(title="rules")
    for column in ("family", "rule", "pattern", "method", "algebra"):
        table.add_column(column)
    for info in infos:
        table.add_row(info.family if info.family != "tvr" else f"tvr: {info.group}", info.name, info.pattern, info.method,
                      info.summary)
    console.print(table)


@main.command("plan")
@specs_argument
@select_option
@click.option("--format", "fmt", type=click.Choice(["text", "json", "dot"]), default="text", show_default=True)
@click.option("--method", type=click.Choice(METHOD_CHOICES), default="auto", show_default=True,
              help="Force one incremental method (a selection of the TVR rules).")
@click.option("--output", "output", type=click.Choice(["snapshot", "delta"]), default=None,
              help="Deliver the result (snapshot) or its change since the previous time point (delta); "
                   "by default the spec's output mode, as tempura run delivers.")
@click.option("--no-rule", "no_rule", multiple=True, metavar="NAME",
              help="Disable a rule or a phase by name (repeatable; tempura rules lists them).")
@click.option("--sql", "show_sql", is_flag=True, help="Print each fragment's Spark SQL.")
@click.option("--verbose", "-v", is_flag=True, help="Also name the memo's forms and groups (SD[0,2] of G8).")
@click.option("--selector", type=click.Choice(SELECTOR_CHOICES), default="auto", show_default=True,
              help="What chooses the kept states: the ILP when small enough else the greedy (auto), one of them always, "
                   "or off (the memo search's own plan, sharing nothing).")
@click.option("--ilp-limit", type=click.IntRange(min=0), default=None,
              help="Under --selector auto, the most binary variables for which the ILP decides (default: the planner's).")
@click.option("--state-budget", "state_budget", default=None, metavar="SIZE",
              help="The most bytes of kept states alive at once (10GB, 512MB, 2GiB); overrides the spec's state_budget.")
@click.option("--cost", "cost", multiple=True, metavar="NAME=VALUE",
              help="Override a cost constant (repeatable); over the spec's cost key.")
@click.option("--workdir", default=".tempura", show_default=True,
              help="The workdir of tempura run: the job's statistics are read there (and collected where missing).")
@user_errors
def plan_command(specs: tuple[str, ...], select: tuple[str, ...], fmt: str, method: str, output: str | None,
                 no_rule: tuple[str, ...], show_sql: bool, verbose: bool, selector: str, ilp_limit: int | None, state_budget: str | None,
                 cost: tuple[str, ...], workdir: str | None) -> None:
    """The multi-time-point plan of standing queries: fragments per time point, methods, the kept
    states (when each is saved, who reads it, its size, what chose it), estimated rows and cost,
    and every method's cost vector and objective side by side."""
    from tempura.scheduler.spec import parse_size
    from tempura.standing import StandingQuery

    overrides = _cost_pairs(cost)
    try:
        budget = parse_size(state_budget) if state_budget is not None else None
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--state-budget") from None

    def one(path: Path) -> None:
        query = StandingQuery(path, workdir)
        chosen = query.plan(method, selector=selector, output=output, no_rules=no_rule, ilp_limit=ilp_limit,
                            state_budget=budget, cost=overrides)
        if fmt == "json":
            click.echo(json.dumps(chosen.to_json(verbose), indent=2, default=str))
        elif fmt == "dot":
            click.echo(chosen.dot(verbose))
        else:
            click.echo(chosen.text(sql=show_sql, verbose=verbose))

    _each(specs, select, one)


if __name__ == "__main__":
    main()
