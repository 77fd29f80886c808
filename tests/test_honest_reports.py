"""Reports say what happened, on Spark: ``tempura plan`` plans what ``tempura run`` runs (the
spec's output mode, the runner's planning inputs); a forced method that falls back says so per
fragment in the manifest, the history and the run line; a re-planning's reason names the source
whose measured rows differ from the expected ones (none landing where all were expected); and
forced ``batch`` and ``streaming`` deliver a delta output equal to the reference's change at
every time point."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tempura.cli import main
from tempura.scheduler import load_spec
from tempura.scheduler.history import History
from tempura.scheduler.reference import reference
from tempura.scheduler.runner import Runner, job_folder

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("fast_spark")]

DAY = dt.datetime(2026, 3, 1)
QUERY = "SELECT category, SUM(price) AS total, COUNT(*) AS n FROM sales GROUP BY category"
# a change feed over three 6-hour intervals: insertions, and deletions of earlier rows
CHANGES = [
    ("a", 5, DAY + dt.timedelta(hours=1), "I"),
    ("b", 7, DAY + dt.timedelta(hours=2), "I"),
    ("a", 3, DAY + dt.timedelta(hours=4), "I"),
    ("a", 5, DAY + dt.timedelta(hours=7), "D"),  # deletes a row of interval 1
    ("c", 4, DAY + dt.timedelta(hours=8), "I"),
    ("b", 7, DAY + dt.timedelta(hours=13), "D"),  # group b leaves at t3
    ("c", 6, DAY + dt.timedelta(hours=14), "I"),
]
SCHEDULE = "schedule:\n  start: '2026-03-01T00:00:00'\n  every: 6h\n  points: 3\n  deliver: every\n"


def change_feed(spark: Any, folder: Path, extra: str = "") -> Path:
    """A job folder with the change feed's data and its spec (``extra``: more top-level keys)."""
    spark.createDataFrame(CHANGES, "category STRING, price INT, changed_at TIMESTAMP, _op STRING") \
        .coalesce(1).write.mode("overwrite").parquet(str(folder / "data" / "sales"))
    spec = folder / "spec.yaml"
    spec.write_text(f"name: feed\nquery: |\n  {QUERY}\nsources:\n  sales:\n    path: data/sales\n"
                    f"    arrival: {{column: changed_at}}\n    changes: {{op_column: _op}}\n{SCHEDULE}{extra}")
    return spec


def zset(rows: list[tuple[Any, ...]]) -> dict[tuple[Any, ...], int]:
    """Rows with their multiplicity last, consolidated: each row's net multiplicity, zeros dropped."""
    out: Counter[tuple[Any, ...]] = Counter()
    for *row, m in rows:
        out[tuple(row)] += int(m)
    return {row: m for row, m in out.items() if m != 0}


def change(before: list[tuple[Any, ...]], after: list[tuple[Any, ...]]) -> dict[tuple[Any, ...], int]:
    """The Z-set taking the snapshot ``before`` to ``after``."""
    return zset([(*r, 1) for r in after] + [(*r, -1) for r in before])


# -- 1. tempura plan plans what tempura run runs --------------------------------------------------

def test_plan_of_a_delta_spec_prints_the_delta_plan(spark: Any, tmp_path: Path) -> None:
    spec = change_feed(spark, tmp_path, "output: {path: out, mode: delta}\n")
    workdir = str(tmp_path / "w")
    result = CliRunner().invoke(main, ["plan", str(spec), "--workdir", workdir])
    assert result.exit_code == 0, result.output
    assert "output: delta" in result.output.splitlines()[0], result.output.splitlines()[0]
    assert "SD[1,2]" in result.output and "SD[2,3]" in result.output
    planned = json.loads(CliRunner().invoke(main, ["plan", str(spec), "--workdir", workdir, "--format", "json"]).output)
    assert planned["output"] == "delta"
    delivering = [f for f in planned["fragments"] if f["output"].startswith("result")]
    assert all("__m" in f["sql"] for f in delivering), "a delta delivery carries the multiplicity column"
    forced = CliRunner().invoke(main, ["plan", str(spec), "--workdir", workdir, "--output", "snapshot"])
    assert "output: snapshot" in forced.output.splitlines()[0]  # --output still overrides the spec


def test_plan_plans_the_first_time_point_as_the_runner_does(spark: Any, tmp_path: Path) -> None:
    """A source declaring its rows (``expected: {rows: …}``) is planned at the declared total by
    the runner: ``tempura plan`` prints that very plan, not one over the files' row count."""
    spec = change_feed(spark, tmp_path, "output: {path: out, mode: delta}\n")
    spec.write_text(spec.read_text().replace("    changes: {op_column: _op}\n",
                                             "    changes: {op_column: _op}\n    expected: {rows: [300000, 200000, 100000]}\n"))
    loaded = load_spec(spec)
    cycle = loaded.cycle(0)
    assert cycle is not None
    runner = Runner(loaded, spark, tmp_path / "w", "auto")
    ran = runner.plan(cycle, 1, {}, None).to_json()
    result = CliRunner().invoke(main, ["plan", str(spec), "--workdir", str(tmp_path / "w"), "--format", "json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    assert printed["output"] == ran["output"] == "delta"
    assert [(f["time"], f["estimated_rows"], f["sql"]) for f in printed["fragments"]] == \
           [(f["time"], f["estimated_rows"], f["sql"]) for f in ran["fragments"]]
    assert printed["objective"] == ran["objective"]


# -- 2. a forced method that falls back says so -------------------------------------------------

def test_forced_streaming_over_a_change_feed_reports_its_fallback_per_fragment(spark: Any, tmp_path: Path) -> None:
    spec = change_feed(spark, tmp_path)
    workdir = tmp_path / "w"
    result = CliRunner().invoke(main, ["run", str(spec), "--simulate", "--method", "streaming", "--workdir", str(workdir)])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if " fragment(s), " in line]
    assert len(lines) == 3, result.output
    job = job_folder(workdir, load_spec(spec), "streaming")
    manifests = [json.loads(p.read_text()) for p in sorted(job.rglob("t[0-9][0-9][0-9].json"))]
    assert [m["index"] for m in manifests] == [1, 2, 3]
    later = [f for m in manifests[1:] for f in m["fragments"]]
    assert later and all(f["method"] != "streaming" for f in later), "nothing streams over a change feed"
    for f in later:  # each says why it is not streaming, naming the source that deletes
        assert "'sales' delivers deletions" in f["fallback"], f
    for m, line in zip(manifests[1:], lines[1:]):
        ran = ", ".join(f"{f['id']} ran {f['method']}" for f in m["fragments"])
        assert f"{ran}, not streaming: {m['fragments'][0]['fallback']}" in line, line
    history = History(job / "history.sqlite", read_only=True).fragments()
    recorded = {(h["time_index"], h["fragment"]): h["fallback"] for h in history}
    for m in manifests:
        for f in m["fragments"]:
            assert recorded[(m["index"], f["id"])] == (f["fallback"] or None)
    shown = CliRunner(env={"COLUMNS": "600"}).invoke(main, ["history", str(spec), "--fragments", "--simulate", "streaming",
                                                           "--workdir", str(workdir)])
    assert shown.exit_code == 0 and "fallback" in shown.output and "delivers deletions" in shown.output, shown.output
    plan = json.loads(next(job.rglob("t002.plan.json")).read_text())
    assert any(n.startswith("streaming falls back: ") and "delivers deletions" in n for n in plan["notes"]), plan["notes"]


# -- 3. re-planning reasons come from what was measured -----------------------------------------

def test_a_source_landing_nothing_of_a_declared_all_gets_a_reason_naming_it(spark: Any, tmp_path: Path) -> None:
    """``sales`` declares all its rows by t1, but lands none there (they come at t2 and t3)."""
    rows = [(c, p, t + dt.timedelta(hours=6), op) for c, p, t, op in CHANGES if op == "I"]
    spark.createDataFrame(rows, "category STRING, price INT, changed_at TIMESTAMP, _op STRING") \
        .drop("_op").coalesce(1).write.mode("overwrite").parquet(str(tmp_path / "data" / "sales"))
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"name: late\nquery: |\n  {QUERY}\nsources:\n  sales:\n    path: data/sales\n"
                    f"    arrival: {{column: changed_at}}\n    expected: [1, 0, 0]\n{SCHEDULE}")
    results = Runner(load_spec(spec), spark, tmp_path / "w", "auto", simulate=True).run_cycle()
    assert results[0].manifest["landed"]["sales"]["rows"] == 0
    assert results[0].replanned
    assert "sales: 0 rows by t1" in results[0].reason, results[0].reason
    assert "as expected" not in results[0].reason
    runs = History(job_folder(tmp_path / "w", load_spec(spec), "auto") / "history.sqlite", read_only=True).runs()
    assert "sales: 0 rows by t1" in runs[0]["reason"]


# -- 4. every method delivers a delta -----------------------------------------------------------

@pytest.mark.parametrize("method", ["batch", "streaming"])
def test_forced_methods_deliver_a_delta_output_equal_to_the_reference(method: str, spark: Any, tmp_path: Path) -> None:
    spec_path = change_feed(spark, tmp_path, "output: {path: out, mode: delta}\n")
    spec = load_spec(spec_path)
    cycle = spec.cycle(0)
    assert cycle is not None
    results = Runner(spec, spark, tmp_path / "w", method, simulate=True).run_cycle()
    assert [r.index for r in results] == [1, 2, 3]
    before: list[tuple[Any, ...]] = []
    retracted = 0
    for r in results:
        assert r.plan is not None and r.plan.output == "delta"
        after = [tuple(row) for row in reference(spark, spec, cycle, r.index).collect()]
        assert r.delivered is not None, f"{method} t{r.index} delivered nothing"
        frame = spark.read.parquet(r.delivered)
        assert frame.columns[-1] == "__m"
        got = zset([tuple(row) for row in frame.collect()])
        assert got == change(before, after), f"{method} t{r.index}: {got}"
        retracted += sum(1 for m in got.values() if m < 0)
        before = after
    assert retracted, "the feed's deletions retract rows of earlier deliveries"
