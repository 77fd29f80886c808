"""Source input that is wrong, on Spark: a corrupt parquet file, a CSV file among parquet ones, or
a source none of whose files can be read stops ``tempura run`` with one line naming the source
and the file (exit 2, nothing committed); a backtick in a column or a table name reads as
itself; rows whose arrival is NULL are counted and set aside instead of vanishing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tempura.cli import main
from tempura.scheduler import load_spec
from tempura.scheduler.reference import reference
from tempura.scheduler.runner import Runner
from tempura.sql.names import quote_identifier

from test_runner_inputs import add_file

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("fast_spark")]

SCHEDULE = "schedule:\n  start: '2026-01-01T00:00:00'\n  every: 6h\n  points: 2\n  deliver: every\n"
ROWS = [("a", 1, "2026-01-01 01:00:00"), ("b", 2, "2026-01-01 07:00:00"), ("a", 4, "2026-01-01 08:00:00")]


def write_spec(folder: Path, query: str, source: str = "sales") -> Path:
    path = folder / "spec.yaml"
    path.write_text(f"name: bad\nquery: {query}\nsources:\n  {source!r}:\n    path: data/sales\n"
                    f"    arrival: {{column: arrived_at}}\n{SCHEDULE}")
    return path


def manifests(workdir: Path) -> list[str]:
    return sorted(p.name for p in workdir.rglob("t[0-9][0-9][0-9].json"))


def unreadable(folder: Path, kind: str) -> str:
    """Put an unreadable file of ``kind`` into the parquet source folder; its name."""
    if kind == "corrupt":
        (folder / "b.parquet").write_bytes(b"PAR1 not really a parquet file PAR1")
        return "b.parquet"
    if kind == "csv":
        (folder / "b.csv").write_text("category,price,arrived_at\nz,1,2026-01-01 02:00:00\n")
        return "b.csv"
    (folder / "a.parquet").write_bytes(b"garbage where the only file was")  # the whole source
    return "a.parquet"


@pytest.mark.parametrize("kind", ["corrupt", "csv", "only"])
def test_an_unreadable_file_is_one_line_naming_the_source_and_the_file(kind: str, spark: Any, tmp_path: Path) -> None:
    add_file(spark, tmp_path / "data" / "sales", "a.parquet", ROWS)
    bad = unreadable(tmp_path / "data" / "sales", kind)
    spec = write_spec(tmp_path, "SELECT category, SUM(price) AS total FROM sales GROUP BY category")
    result = CliRunner().invoke(main, ["run", str(spec), "--simulate", "--workdir", str(tmp_path / "work")])
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert "source 'sales'" in lines[0] and bad in lines[0] and "Traceback" not in result.output, lines[0]
    assert manifests(tmp_path / "work") == []


def test_an_unreadable_file_found_later_stops_that_time_point_only(spark: Any, tmp_path: Path) -> None:
    folder = tmp_path / "data" / "sales"
    add_file(spark, folder, "a.parquet", ROWS[:1])
    spec = load_spec(write_spec(tmp_path, "SELECT category, SUM(price) AS total FROM sales GROUP BY category"))
    runner = Runner(spec, spark, tmp_path / "work", "batch", simulate=True)
    cycle = spec.cycle(0)
    assert cycle is not None
    runner.run_point(cycle, 1)
    unreadable(folder, "corrupt")
    result = CliRunner().invoke(main, ["run", str(spec.path), "--simulate", "--workdir", str(tmp_path / "other")])
    assert result.exit_code == 2 and "b.parquet" in result.output, result.output
    with pytest.raises(Exception) as caught:
        runner.run_point(cycle, 2)
    assert "b.parquet" in str(caught.value) and "\n" not in str(caught.value)
    assert manifests(tmp_path / "work") == ["t001.json"]


def test_a_backtick_in_a_column_name_reads_as_itself(spark: Any, tmp_path: Path) -> None:
    add_file(spark, tmp_path / "data" / "sales", "a.parquet", ROWS, "`cat``egory` string, price int, arrived_at string")
    column = quote_identifier("cat`egory")
    spec = load_spec(write_spec(tmp_path, f'"SELECT {column}, SUM(price) AS total FROM sales GROUP BY {column}"'))
    results = Runner(spec, spark, tmp_path / "work", "ivm", simulate=True).run_cycle()
    expected = {1: [("a", 1)], 2: [("a", 5), ("b", 2)]}
    for r in results:
        assert r.delivered is not None
        assert sorted(tuple(row) for row in spark.read.parquet(r.delivered).collect()) == expected[r.index], r.index


def test_a_backtick_in_a_table_name_makes_a_view_name(spark: Any, tmp_path: Path) -> None:
    """The reference registers each source under its table name, the catalog each table: any name
    is a view name."""
    from tempura.catalog import Catalog

    add_file(spark, tmp_path / "data" / "sales", "a.parquet", ROWS, "`cat``egory` string, price int, arrived_at string")
    table, column = quote_identifier("sa`les"), quote_identifier("cat`egory")
    query = f"SELECT {column}, SUM(price) AS total FROM {table} GROUP BY {column}"
    spec = load_spec(write_spec(tmp_path, f'"{query}"', source="sa`les"))
    cycle = spec.cycle(0)
    assert cycle is not None
    assert sorted(tuple(r) for r in reference(spark, spec, cycle, 2).collect()) == [("a", 5), ("b", 2)]
    results = Runner(spec, spark, tmp_path / "work", "ivm", simulate=True).run_cycle()  # statistics, plans, views
    assert sorted(tuple(r) for r in spark.read.parquet(results[-1].delivered).collect()) == [("a", 5), ("b", 2)]
    (tmp_path / "catalog.yaml").write_text("tables:\n  'or`ders':\n    path: data/sales\n")
    Catalog.load(tmp_path / "catalog.yaml").register(spark)
    assert spark.sql(f"SELECT COUNT(*) FROM {quote_identifier('or`ders')}").collect()[0][0] == 3


def test_rows_whose_arrival_is_null_are_counted_and_set_aside(spark: Any, tmp_path: Path) -> None:
    folder = tmp_path / "data" / "sales"
    add_file(spark, folder, "a.parquet", ROWS + [("n", 100, None), ("n", 200, None)])
    spec = load_spec(write_spec(tmp_path, "SELECT category, SUM(price) AS total FROM sales GROUP BY category"))
    runner = Runner(spec, spark, tmp_path / "work", "batch", simulate=True)
    cycle = spec.cycle(0)
    assert cycle is not None
    first = runner.run_point(cycle, 1)
    assert first.manifest["landed"]["sales"]["null_arrival"] == 2
    assert first.manifest["landed"]["sales"]["rejected"] == 2 and first.manifest["run"]["rejected_rows"] == 2
    aside = runner.store.cycle_dir(cycle.label) / "rejected" / "sales" / "i=001"
    assert sorted(tuple(r) for r in spark.read.parquet(str(aside)).select("category", "price").collect()) == [
        ("n", 100), ("n", 200)]
    # counted once, when their file is first found: not again at t2
    second = runner.run_point(cycle, 2)
    assert second.manifest["landed"]["sales"]["null_arrival"] == 0 and second.manifest["run"]["rejected_rows"] == 0
    assert second.delivered is not None
    assert sorted(tuple(r) for r in spark.read.parquet(second.delivered).collect()) == [("a", 5), ("b", 2)]
