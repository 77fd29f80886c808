"""The ``tempura`` command line: a thin layer over the Python API.

User errors print one line (``error: …``) and exit with status 2.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any, Callable, TypeVar

import click

from tempura.errors import TempuraError

F = TypeVar("F", bound=Callable[..., Any])


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
        frame.write.mode("overwrite").format(fmt).option("header", "true").save(out)
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


@main.command()
@catalog_option
@dialect_option
@click.argument("sql")
@click.option("--sql", "show_sql", is_flag=True, help="Also print the Spark SQL tempura runs.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@user_errors
def explain(catalog: str, dialect: str, sql: str, show_sql: bool, as_json: bool) -> None:
    """Print the logical plan of SQL (or @file.sql)."""
    from tempura.api import Session
    from tempura.sql import to_spark_sql

    session = Session(catalog, dialect=dialect)
    bound = session.plan(_read_sql(sql))
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


@main.command("tpch-gen")
@click.option("--scale", default=0.01, show_default=True, type=float, help="TPC-H scale factor.")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Output folder.")
@user_errors
def tpch_gen(scale: float, out: str) -> None:
    """Write TPC-H parquet data and a catalog.yaml for it."""
    from tempura import tpch

    catalog = tpch.generate(scale, out)
    click.echo(f"wrote TPC-H scale {scale:g} to {out}; catalog: {catalog}")


@main.command()
@click.option("--scale", default=0.01, show_default=True, type=float, help="TPC-H scale factor.")
@click.option("--workdir", default=".tempura", show_default=True, type=click.Path(file_okay=False))
@click.option("--query", "queries", multiple=True, help="Run only these queries (q01 … q22).")
@user_errors
def demo(scale: float, workdir: str, queries: tuple[str, ...]) -> None:
    """Generate TPC-H data, run the 22 queries through tempura and compare with Spark."""
    from tempura import demo as demo_job

    names = [f"q{int(q.lstrip('qQ')):02d}" for q in queries] if queries else None
    failures = demo_job.main(scale, workdir, names)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
