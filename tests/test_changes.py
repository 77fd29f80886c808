"""Change feeds checked as they land, on Spark: an op value that is neither a declared insertion
nor a deletion stops the time point naming the file and the value; a deletion of a row that is
not there stops it under ``deletes: strict``, and under ``lenient`` is dropped and counted, the
deliveries agreeing with ``spark.sql`` over the source's snapshot; a row inserted and deleted in
one interval is fine."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import pytest

from tempura.errors import TempuraError
from tempura.runtime import compare_results
from tempura.scheduler import load_spec
from tempura.scheduler.reference import reference
from tempura.scheduler.runner import PointResult, Runner

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("fast_spark")]

DAY = dt.datetime(2026, 11, 22)
QUERY = "SELECT id, SUM(qty) AS q, COUNT(*) AS n FROM stock GROUP BY id"
Rows = list[tuple[Any, ...]]


def at(hours: float) -> dt.datetime:
    return DAY + dt.timedelta(hours=hours)


def job(spark: Any, folder: Path, rows: Rows, changes: str = "{op_column: _op}") -> Path:
    """A change feed ``stock`` (id, qty, changed_at, _op) of ``rows`` in one parquet file, two
    time points 6 hours apart; the spec's path."""
    data = folder / "data" / "stock"
    staging = folder / "staging"
    spark.createDataFrame(rows, "id INT, qty INT, changed_at TIMESTAMP, _op STRING").coalesce(1).write.parquet(str(staging))
    data.mkdir(parents=True)
    next(staging.glob("part-*.parquet")).replace(data / "changes.parquet")
    shutil.rmtree(staging)
    spec = folder / "spec.yaml"
    spec.write_text(f"name: cdc\nquery: {QUERY}\nsources:\n  stock:\n    path: data/stock\n"
                    f"    arrival: {{column: changed_at}}\n    changes: {changes}\n"
                    "schedule:\n  start: '2026-11-22T00:00:00'\n  every: 6h\n  points: 2\n  deliver: every\n")
    return spec


def delivered(spark: Any, result: PointResult) -> Rows:
    assert result.delivered is not None, f"t{result.index} delivered nothing"
    return sorted(tuple(r) for r in spark.read.parquet(result.delivered).collect())


def manifests(workdir: Path) -> list[str]:
    return sorted(p.name for p in workdir.rglob("t[0-9][0-9][0-9].json"))


def one_line(error: BaseException) -> str:
    text = str(error)
    assert isinstance(error, TempuraError) and text and "\n" not in text, f"{type(error).__name__}: {text}"
    return text


ABSENT: Rows = [
    (1, 5, at(1), "I"),
    (2, 7, at(2), "I"),
    (3, 9, at(3), "D"),  # t1: deletes a row never inserted
    (1, 5, at(7), "D"),  # t2: deletes the row landed at t1
    (3, 9, at(8), "I"),  # t2: inserts the row deleted (in vain) at t1: it is there after t2
    (2, 7, at(9), "D"),
    (2, 7, at(10), "D"),  # t2: one deletion more than the row has
]


def test_a_deletion_of_a_row_never_inserted_is_an_error_under_strict(spark: Any, tmp_path: Path) -> None:
    spec = load_spec(job(spark, tmp_path, ABSENT))
    with pytest.raises(TempuraError) as caught:
        Runner(spec, spark, tmp_path / "work", "batch", simulate=True).run_cycle()
    text = one_line(caught.value)
    assert "source 'stock'" in text and "changes.parquet" in text and "id=3, qty=9" in text, text
    assert "_op" not in text.split("(")[1] and "changed_at" not in text.split("(")[1], text  # the row's data only
    assert manifests(tmp_path / "work") == []


@pytest.mark.parametrize("method", ["batch", "ivm"])
def test_deletions_of_absent_rows_are_dropped_and_counted_under_lenient(method: str, spark: Any, tmp_path: Path) -> None:
    spec = load_spec(job(spark, tmp_path, ABSENT, "{op_column: _op, deletes: lenient}"))
    results = Runner(spec, spark, tmp_path / "work", method, simulate=True).run_cycle()
    assert [r.manifest["landed"]["stock"]["absent_deletions"] for r in results] == [1, 1]
    assert [r.manifest["landed"]["stock"]["deletions"] for r in results] == [0, 2]  # as landed
    assert delivered(spark, results[0]) == [(1, 5, 1), (2, 7, 1)]
    assert delivered(spark, results[1]) == [(3, 9, 1)]
    cycle = spec.cycle(0)
    assert cycle is not None
    for r in results:
        outcome = compare_results([tuple(x) for x in reference(spark, spec, cycle, r.index).collect()], delivered(spark, r))
        assert outcome.equal, f"t{r.index}: {outcome.reason}"


def test_the_reference_under_strict_names_a_deletion_before_its_insertion(spark: Any, tmp_path: Path) -> None:
    """Interval by interval: a deletion at t1 of a row inserted only at t2 is an error as of t2 too."""
    spec = load_spec(job(spark, tmp_path, [(1, 5, at(1), "D"), (1, 5, at(7), "I")]))
    cycle = spec.cycle(0)
    assert cycle is not None
    with pytest.raises(TempuraError) as caught:
        reference(spark, spec, cycle, 2).collect()
    assert "by t1" in one_line(caught.value)


@pytest.mark.parametrize(("op", "shown"), [("X", "'X'"), (None, "NULL")])
def test_an_unknown_op_value_is_an_error_naming_the_file_and_the_value(op: str | None, shown: str, spark: Any,
                                                                      tmp_path: Path) -> None:
    spec = load_spec(job(spark, tmp_path, [(1, 5, at(1), "I"), (2, 7, at(2), op)]))
    with pytest.raises(TempuraError) as caught:
        Runner(spec, spark, tmp_path / "work", "batch", simulate=True).run_cycle()
    text = one_line(caught.value)
    assert "source 'stock'" in text and "changes.parquet" in text and f"_op is {shown}" in text and "id=2" in text, text
    assert manifests(tmp_path / "work") == []


def test_declared_insert_values_are_insertions(spark: Any, tmp_path: Path) -> None:
    spec = load_spec(job(spark, tmp_path, [(1, 5, at(1), "+"), (2, 7, at(2), "+"), (1, 5, at(7), "-")],
                         "{op_column: _op, insert_values: ['+'], delete_values: ['-']}"))
    results = Runner(spec, spark, tmp_path / "work", "batch", simulate=True).run_cycle()
    assert delivered(spark, results[1]) == [(2, 7, 1)]


def test_a_row_inserted_and_deleted_in_one_interval_is_fine(spark: Any, tmp_path: Path) -> None:
    rows = [(1, 5, at(2), "D"), (1, 5, at(1), "I"), (2, 7, at(3), "I"), (2, 7, at(8), "I"), (2, 7, at(9), "D")]
    spec = load_spec(job(spark, tmp_path, rows))
    results = Runner(spec, spark, tmp_path / "work", "batch", simulate=True).run_cycle()
    assert [r.manifest["landed"]["stock"]["absent_deletions"] for r in results] == [0, 0]
    assert delivered(spark, results[0]) == [(2, 7, 1)]
    assert delivered(spark, results[1]) == [(2, 7, 1)]
