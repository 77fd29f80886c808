"""Malformed rows of a CSV source, on Spark, by the clock. Spark reads a value that does not parse
as its declared type as NULL, and a row short of its last field with NULL there (its permissive
mode); the run counts those rows and names the first, and a row left with no arrival is set aside
as one with no arrival, not as a late one. Under ``mode: FAILFAST`` the run stops in one line
naming the file and the row."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tempura.cli import main

pytestmark = pytest.mark.spark

ROWS = "id,amount,at\n1,10,2026-11-20 01:00:00\n2,abc,2026-11-20 02:00:00\n3,30\n4,40,2026-11-20 04:00:00\n"


def job(folder: Path, options: str = "{header: true}") -> Path:
    (folder / "data" / "sales").mkdir(parents=True)
    (folder / "data" / "sales" / "a.csv").write_text(ROWS)
    (folder / "spec.yaml").write_text(
        "name: csv\nquery: SELECT COUNT(*) AS n, SUM(amount) AS total FROM sales\nsources:\n  sales:\n"
        f"    path: data/sales\n    format: csv\n    options: {options}\n"
        "    schema: {id: int, amount: int, at: timestamp}\n    arrival: {column: at}\n"
        "schedule:\n  start: '2026-11-20T00:00:00'\n  every: 12h\n  points: 2\n  deliver: every\n")
    return folder / "spec.yaml"


def test_malformed_rows_are_counted_and_named(spark: object, tmp_path: Path) -> None:
    spec = job(tmp_path)
    ran = CliRunner().invoke(main, ["run", str(spec), "--now", "2026-11-20T12:00:00"])
    assert ran.exit_code == 0, ran.output
    line = next(x for x in ran.output.splitlines() if " t1 (" in x and " fragment(s), " in x)  # not the progress
    assert "3 rows landed" in line, line
    assert "1 row(s) set aside (1 with no arrival)" in line and "late" not in line, line
    first = f"{(tmp_path / 'data' / 'sales' / 'a.csv').as_uri()}: 2,abc,2026-11-20 02:00:00"
    assert f"2 malformed row(s) read with NULL where a value did not parse (first: {first})" in line, line


def test_failfast_stops_in_one_line_naming_the_file_and_the_row(spark: object, tmp_path: Path) -> None:
    spec = job(tmp_path, "{header: true, mode: FAILFAST}")
    ran = CliRunner().invoke(main, ["run", str(spec), "--now", "2026-11-20T12:00:00"])
    assert ran.exit_code == 2, ran.output
    lines = [x for x in ran.output.splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in ran.output, ran.output
    csv = (tmp_path / "data" / "sales" / "a.csv").as_uri()
    assert lines[0] == (f"error: a malformed row in {csv}: 'abc' does not parse (parse mode FAILFAST): nothing was "
                        "committed; fix or remove the row and run again"), lines[0]
    assert "An error occurred while calling" not in lines[0]


def test_failfast_in_a_process_prints_no_stack_trace(tmp_path: Path) -> None:
    """As cron runs it: the process's stderr holds tempura's one line, not Spark's traces of the
    failed task (the executor's, the write's, the job's abort)."""
    import subprocess
    import sys

    spec = job(tmp_path, "{header: true, mode: FAILFAST}")
    ran = subprocess.run([sys.executable, "-m", "tempura", "run", str(spec), "--now", "2026-11-20T12:00:00"],
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 2, ran.stderr[-2000:]
    err = ran.stderr + ran.stdout
    assert "\tat org.apache" not in err and "Exception" not in err, err[-3000:]
    assert [x for x in err.splitlines() if x.startswith("error: ")] == [
        x for x in err.splitlines() if "malformed row" in x], err[-2000:]
