"""Which columns a new file is held to, on Spark, by the clock: those the last commit recorded,
the previous cycle's at a cycle's first time point, and before any commit the oldest file's.
A file that drifted is named, never a good file that happens to sort before it."""

from __future__ import annotations

import datetime as dt
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tempura.errors import TempuraError
from tempura.scheduler import load_spec
from tempura.scheduler.runner import Runner

pytestmark = pytest.mark.spark

START = dt.datetime(2026, 11, 20)
GOOD = "category STRING, price INT, sold_at TIMESTAMP"
DRIFTED = "category STRING, price INT, sold_at TIMESTAMP, coupon STRING"


def put(spark: Any, folder: Path, name: str, schema: str, hours: float, age: float) -> Path:
    """One parquet file ``name`` of sales at ``hours`` after the start, last modified ``age``
    seconds ago."""
    rows = [("a", 1, START + dt.timedelta(hours=hours))]
    if "coupon" in schema:
        rows = [(*r, "x") for r in rows]  # type: ignore[misc]
    scratch = folder / f"scratch-{name}"
    spark.createDataFrame(rows, schema).coalesce(1).write.parquet(str(scratch))
    target = folder / "data" / "sales" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(next(scratch.glob("*.parquet"))), target)
    shutil.rmtree(scratch)
    when = dt.datetime.now().timestamp() - age
    os.utime(target, (when, when))
    return target


def spec(folder: Path) -> Path:
    (folder / "spec.yaml").write_text(
        "name: drift\nquery: SELECT category, SUM(price) AS revenue FROM sales GROUP BY category\n"
        "sources:\n  sales:\n    path: data/sales\n    arrival: {column: sold_at}\n"
        f"schedule:\n  start: '{START.isoformat()}'\n  every: 12h\n  points: 2\n")
    return folder / "spec.yaml"


def test_before_any_commit_the_oldest_file_sets_the_columns(spark: Any, tmp_path: Path) -> None:
    put(spark, tmp_path, "part-b.parquet", GOOD, 1, age=3600)
    drifted = put(spark, tmp_path, "part-a.parquet", DRIFTED, 2, age=60)  # newer, but first by name
    runner = Runner(load_spec(spec(tmp_path)), spark, tmp_path / "work")
    with pytest.raises(TempuraError) as raised:
        runner.run_due(now=START + dt.timedelta(hours=12))
    assert f"schema drift in {drifted.as_uri()}: adds coupon" in str(raised.value), raised.value


def test_a_cycles_first_point_holds_new_files_to_the_cycle_befores_columns(spark: Any, tmp_path: Path) -> None:
    put(spark, tmp_path, "part-m.parquet", GOOD, 1, age=7200)
    put(spark, tmp_path, "part-n.parquet", GOOD, 13, age=7000)
    done = Runner(load_spec(spec(tmp_path)), spark, tmp_path / "work").run_due(now=START + dt.timedelta(hours=24))
    assert [r.index for r in done] == [1, 2]
    # the next day's files: a good one, and an older one that drifted and sorts first
    good = put(spark, tmp_path, "part-z.parquet", GOOD, 25, age=30)
    drifted = put(spark, tmp_path, "part-c.parquet", DRIFTED, 26, age=600)
    runner = Runner(load_spec(spec(tmp_path)), spark, tmp_path / "work")
    with pytest.raises(TempuraError) as raised:
        runner.run_due(now=START + dt.timedelta(hours=36))
    assert f"schema drift in {drifted.as_uri()}: adds coupon" in str(raised.value), raised.value
    drifted.unlink()
    done = runner.run_due(now=START + dt.timedelta(hours=36))
    assert [(r.cycle, r.index) for r in done] == [("20261121T000000", 1)] and good.exists()
