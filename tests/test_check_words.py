"""What ``tempura check`` says of a cycle whose second manifest was deleted, on Spark: the gap,
that t1's manifest is intact but the state it kept is gone (dropped once the time points after it
had read it), so the cycle runs on from its start; and ``repair`` then rebuilds it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tempura.cli import main
from tempura.scheduler import load_spec
from tempura.scheduler.runner import Runner

pytestmark = pytest.mark.spark
START = dt.datetime(2026, 11, 20)


def test_check_says_why_an_intact_manifest_is_no_point_to_run_on_from(spark: Any, tmp_path: Path) -> None:
    rows = [(f"c{i % 3}", i, START + dt.timedelta(minutes=4 * i + 1)) for i in range(400)]
    spark.createDataFrame(rows, "category STRING, price INT, sold_at TIMESTAMP").coalesce(1) \
        .write.parquet(str(tmp_path / "data" / "sales"))
    (tmp_path / "spec.yaml").write_text(
        "name: s\nquery: SELECT category, SUM(price) AS revenue FROM sales GROUP BY category\n"
        "sources:\n  sales:\n    path: data/sales\n    arrival: {column: sold_at}\n"
        f"schedule:\n  start: '{START.isoformat()}'\n  every: 6h\n  points: 4\n  deliver: every\ncost: {{stage: 0.01}}\n")
    done = Runner(load_spec(tmp_path / "spec.yaml"), spark, tmp_path / "work", "ivm").run_due(
        now=START + dt.timedelta(hours=18))
    assert [r.index for r in done] == [1, 2, 3]
    cycle = tmp_path / "work" / "jobs" / "s" / "cycles" / "20261120T000000"
    assert not (cycle / "states" / "s1@t001").exists()  # t1's state, dropped once t2 read it
    (cycle / "t002.json").unlink()
    shown = CliRunner().invoke(main, ["check", str(tmp_path / "spec.yaml"), "--workdir", str(tmp_path / "work")])
    assert shown.exit_code == 1
    lines = shown.output.splitlines()
    # the cycle in words (its folder keeps the compact name), each time point with its value
    assert lines[0] == (f"damaged: cycle of 2026-11-20 00:00: {cycle / 't002.json'} is missing, but t3 is committed "
                        "after it")
    assert lines[1].startswith("cycle of 2026-11-20 00:00: the manifest of t1 (2026-11-20 06:00) is intact, but ") and \
        "states/s1@t001" in lines[1] and "dropped once the time points after it have read it" in lines[1], lines[1]
    assert lines[2] == ("cycle of 2026-11-20 00:00: the last time point to run on from is its start; "
                        f"'tempura repair {tmp_path / 'spec.yaml'}' rebuilds from t1 (2026-11-20 06:00)")
