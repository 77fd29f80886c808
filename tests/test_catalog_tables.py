"""Tables of Spark's catalog as sources and outputs, on Spark (the session's catalog; an embedded
Hive metastore in ``tests/test_metastore.py``): a standing query over a partitioned fact table
that grows between time points and a dimension table delivers ``spark.sql`` over each time
point's snapshot, by arrival column and by new files, into a table replaced at each delivery
(never seen half-written, even when the run dies before its switch) or one gaining a partition
per time point (added once when a time point runs again); a one-off query reads a catalog YAML's
``table:`` and a format passed through to Spark's reader (xml); a missing table, a table
another job owns, a spec naming both a path and a table, and a format no jar provides are each
one line."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tempura.cli import main
from tempura.errors import TempuraError
from tempura.runtime import compare_results
from tempura.scheduler import load_spec
from tempura.scheduler.runner import Runner

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("fast_spark")]

QUERY = ("SELECT i.colour, s.day, SUM(s.price) AS total, COUNT(*) AS n FROM sales s JOIN items i "
         "ON s.item = i.item GROUP BY i.colour, s.day")
SCHEDULE = "schedule:\n  start: '2026-03-01T00:00:00'\n  every: 6h\n  points: 2\n  deliver: every\n"
T = [dt.datetime(2026, 3, 1, h) for h in (0, 6, 12)]
# (item, price, arrived_at, day): the rows written before each time point, by interval
BATCHES = [
    [(1, 10, "2026-03-01 01:00:00", "d1"), (2, 5, "2026-03-01 02:00:00", "d1")],
    [(1, 7, "2026-03-01 07:00:00", "d2"), (3, 1, "2026-03-01 08:00:00", "d1"), (2, 2, "2026-03-01 11:00:00", "d3")],
]


@pytest.fixture(scope="module")
def database(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    name = "tempura_tables"
    spark.sql(f"DROP DATABASE IF EXISTS {name} CASCADE")
    spark.sql(f"CREATE DATABASE {name} LOCATION '{tmp_path_factory.mktemp('warehouse') / name}'")
    yield name
    spark.sql(f"DROP DATABASE IF EXISTS {name} CASCADE")


def append(spark: Any, table: str, rows: list[tuple[Any, ...]]) -> None:
    frame = spark.createDataFrame(rows, "item int, price int, arrived_at string, day string")
    frame = frame.selectExpr("item", "price", "CAST(arrived_at AS TIMESTAMP) AS arrived_at", "day")
    frame.coalesce(1).write.mode("append").format("parquet").partitionBy("day").saveAsTable(table)


def expected(spark: Any, table: str, dimension: str, until: dt.datetime) -> list[tuple[Any, ...]]:
    spark.read.table(table).where(f"arrived_at <= TIMESTAMP '{until}'").createOrReplaceTempView("sales")
    spark.read.table(dimension).createOrReplaceTempView("items")
    return [tuple(r) for r in spark.sql(QUERY).collect()]


def write_spec(folder: Path, database: str, arrival: str, name: str = "tables") -> Path:
    mode = "snapshot" if arrival == "column" else "delta"
    path = folder / "spec.yaml"
    path.write_text(f"name: {name}\nquery: {QUERY}\nsources:\n"
                    f"  sales:\n    table: {database}.sales_{arrival}\n"
                    f"    arrival: {{{'column: arrived_at' if arrival == 'column' else 'by: file'}}}\n"
                    f"  items:\n    table: {database}.items\n    arrival: {{by: file}}\n{SCHEDULE}"
                    f"output: {{table: {database}.out_{arrival}, mode: {mode}}}\n")
    return path


def rows_of(frame: Any) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in frame.collect()]


def assert_equal(want: list[tuple[Any, ...]], got: list[tuple[Any, ...]], what: str) -> None:
    outcome = compare_results(want, got)
    assert outcome.equal and want, f"{what}: {outcome.reason}: {sorted(want)} vs {sorted(got)}"


class Crash(Exception):
    """A run dying between a snapshot's files and the table's switch."""


@pytest.mark.parametrize("arrival", ["column", "file"])
def test_a_standing_query_over_catalog_tables_delivers_each_snapshot_into_a_table(
        arrival: str, spark: Any, database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fact table is partitioned by ``day`` (a column its files do not hold) and grows by
    one append per interval, after the run has read it: each time point lands the new rows (the
    catalog's file listing refreshed), and delivers the query over the rows up to it. By arrival
    column into a snapshot table, whose run at t2 dies once with its new files written: the
    table still holds t1's result, whole, and the run again delivers t2; by file into a delta
    table, whose run at t2 dies once after adding its partition, before its commit: t2 runs
    again, and the table has one partition per time point, summing to each snapshot. (Under
    ``ivm``: what is tested is landing and delivering, which every method shares.)"""
    from tempura.runtime import durable
    from tempura.scheduler import runner

    table, dimension, out = f"{database}.sales_{arrival}", f"{database}.items", f"{database}.out_{arrival}"
    for name in (table, out):
        spark.sql(f"DROP TABLE IF EXISTS {name}")
    if not spark.catalog.tableExists(dimension):
        spark.createDataFrame([(1, "red"), (2, "blue"), (3, "red")], "item int, colour string") \
            .write.format("parquet").saveAsTable(dimension)
    spec = load_spec(write_spec(tmp_path, database, arrival))
    seen_before_switch: list[list[tuple[Any, ...]]] = []

    crash_at = "delivery-written" if arrival == "column" else "manifest"
    kept: list[str] = []  # the snapshot table's version folders, in the order delivered

    def crash_once(phase: str, index: int) -> None:
        if phase == crash_at and index == 2 and not seen_before_switch:
            seen_before_switch.append(rows_of(spark.read.table(out)))
            raise Crash()

    for index, rows in enumerate(BATCHES, start=1):
        append(spark, table, rows)
        now = T[index] + dt.timedelta(minutes=1)
        if index == 2:
            with monkeypatch.context() as patch:
                patch.setattr(durable, "reached", crash_once)
                patch.setattr(runner, "reached", crash_once)
                with pytest.raises(Crash):
                    Runner(spec, spark, tmp_path / "work", "ivm").run_due(now)
            if arrival == "column":
                before = expected(spark, table, dimension, T[1])
                assert_equal(before, seen_before_switch[0], "the table before the switch")
                assert_equal(before, rows_of(spark.read.table(out)), "the table after the crash")
            else:  # t2's partition added, its manifest not written: t2 runs again
                assert len(rows_of(spark.sql(f"SHOW PARTITIONS {out}"))) == 2
        results = Runner(spec, spark, tmp_path / "work", "ivm").run_due(now)
        done = [r for r in results if not r.skipped]
        assert [r.index for r in done] == [index]
        assert done[0].manifest["landed"]["sales"]["rows"] == len(rows)
        want = expected(spark, table, dimension, T[index])
        if arrival == "column":
            assert_equal(want, rows_of(spark.read.parquet(done[0].delivered)), f"t{index}'s delivery")
            assert_equal(want, rows_of(spark.read.table(out)), f"the table at t{index}")
            folder = Path(done[0].delivered.removeprefix("file:"))
            versions = sorted(p.name for p in folder.parent.iterdir() if p.name.startswith("v-"))
            kept.append(folder.name)
            assert versions == sorted(kept[-2:]), versions  # this one and the one it replaced
            continue
        partitions = rows_of(spark.sql(f"SHOW PARTITIONS {out}"))
        assert len(partitions) == index, partitions
        columns = ", ".join(f"`{c}`" for c in ("colour", "day"))
        summed = spark.sql(f"SELECT {columns}, SUM(total * __m) AS total, SUM(n * __m) AS n FROM {out} "
                           f"GROUP BY {columns} HAVING SUM(n * __m) <> 0")
        assert_equal(want, rows_of(summed), f"the delta table's partitions through t{index}")
    # Statistics are fingerprinted by the table's own files, where the catalog says they are.
    from tempura.stats.store import file_state

    state = file_state(spec.catalog().table("sales"), spark)
    assert state is not None and state.files == len(spark.read.table(table).inputFiles()) > len(BATCHES) - 1


def test_a_missing_table_stops_the_run_in_one_line_naming_the_key(spark: Any, database: str, tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(f"name: gone\nquery: SELECT COUNT(*) AS n FROM sales\nsources:\n"
                    f"  sales:\n    table: {database}.nowhere\n    arrival: {{column: arrived_at}}\n{SCHEDULE}")
    with pytest.raises(TempuraError) as raised:
        Runner(load_spec(path), spark, tmp_path / "work", "auto").run_due(T[1] + dt.timedelta(minutes=1))
    message = str(raised.value)
    assert "\n" not in message and "sources.sales.table" in message and f"{database}.nowhere" in message, message


def test_a_table_that_is_not_the_jobs_is_never_written(spark: Any, database: str, tmp_path: Path) -> None:
    spark.sql(f"DROP TABLE IF EXISTS {database}.theirs")
    spark.createDataFrame([(1,)], "x int").write.saveAsTable(f"{database}.theirs")
    spark.sql(f"DROP TABLE IF EXISTS {database}.sales_other")
    append(spark, f"{database}.sales_other", BATCHES[0])
    path = tmp_path / "spec.yaml"
    path.write_text(f"name: other\nquery: SELECT COUNT(*) AS n FROM sales\nsources:\n"
                    f"  sales:\n    table: {database}.sales_other\n    arrival: {{column: arrived_at}}\n{SCHEDULE}"
                    f"output: {{table: {database}.theirs}}\n")
    with pytest.raises(TempuraError) as raised:
        Runner(load_spec(path), spark, tmp_path / "work", "auto").run_due(T[1] + dt.timedelta(minutes=1))
    assert "\n" not in str(raised.value) and "belongs to no tempura job" in str(raised.value), str(raised.value)
    assert rows_of(spark.read.table(f"{database}.theirs")) == [(1,)]


@pytest.mark.parametrize(("source", "where", "says"), [
    ("path: data\n    table: db.sales", "line 4: sources.sales:", "either path"),
    ("table: db.sales\n    format: csv", "line 4: sources.sales:", "format is for a path"),
    ("table: 'not a name'", "line 5: sources.sales.table:", "not a table name"),
])
def test_a_spec_names_a_path_or_a_table(source: str, where: str, says: str, tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(f"name: bad\nquery: SELECT 1 AS x FROM sales\nsources:\n"
                    f"  sales:\n    {source}\n    arrival: {{column: at}}\n{SCHEDULE}")
    with pytest.raises(TempuraError) as raised:
        load_spec(path)
    assert f"{path}, {where}" in str(raised.value) and says in str(raised.value), str(raised.value)


def test_a_one_off_query_reads_a_catalog_table_and_a_missing_jar_is_one_line(spark: Any, database: str,
                                                                             tmp_path: Path) -> None:
    spark.sql(f"DROP TABLE IF EXISTS {database}.colours")
    spark.createDataFrame([("red", 3), ("blue", 4)], "colour string, n int").write.saveAsTable(f"{database}.colours")
    catalog = tmp_path / "catalog.yaml"
    # xml: a format passed through to Spark's reader (built into Spark 4), not one tempura knows
    (tmp_path / "paints.xml").write_text("<paints><paint><colour>red</colour><litres>5</litres></paint>"
                                         "<paint><colour>blue</colour><litres>6</litres></paint></paints>")
    catalog.write_text(f"tables:\n  colours:\n    table: {database}.colours\n"
                       "  paints:\n    path: paints.xml\n    format: xml\n    options: {rowTag: paint}\n")
    found = CliRunner().invoke(main, ["query", "--catalog", str(catalog),
                                      "SELECT SUM(c.n) + SUM(p.litres) AS s FROM colours c JOIN paints p ON c.colour = p.colour"])
    assert found.exit_code == 0 and "18" in found.output.split(), found.output
    lake = tmp_path / "lake.yaml"
    lake.write_text("tables:\n  lake:\n    path: lake\n    format: delta\n")
    (tmp_path / "lake").mkdir()
    failed = CliRunner().invoke(main, ["query", "--catalog", str(lake), "SELECT COUNT(*) FROM lake"])
    assert failed.exit_code != 0 and "Traceback" not in failed.output
    assert "format 'delta'" in failed.output and "not on the classpath" in failed.output, failed.output
