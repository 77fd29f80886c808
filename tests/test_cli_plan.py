"""``tempura plan`` and ``tempura validate`` on a spec whose schemas and arrival are declared
(no Spark needed): text, JSON and DOT output, forced methods, one-line errors with exit 2."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from historyfile import SHAPES, write_history
from tempura.cli import main

SPEC = """\
name: gross_by_category
query: |
  WITH sales_status AS (
    SELECT sales.o_id, category, price, cost
    FROM sales LEFT OUTER JOIN returns ON sales.o_id = returns.o_id)
  SELECT category, SUM(IF(cost IS NULL, price, -cost)) AS gross
  FROM sales_status GROUP BY category
sources:
  sales:
    path: data/sales
    schema: {o_id: string, category: string, price: bigint, arrives: int}
    arrival: {column: arrives}
    expected: [0.6, 0.4]
  returns:
    path: data/returns
    schema: {o_id: string, cost: bigint, arrives: int}
    arrival: {column: arrives}
    expected: [0.4, 0.6]
schedule:
  at: [1, 2]
  deliver: every
objective:
  preset: deadline
"""


@pytest.fixture()
def spec(tmp_path: Path) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC, encoding="utf-8")
    return path


def plan(spec: Path, *args: str) -> str:
    result = CliRunner().invoke(main, ["plan", str(spec), "--workdir", str(spec.parent / "w"), *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_validate(spec: Path) -> None:
    for name in ("sales", "returns"):
        (spec.parent / "data" / name).mkdir(parents=True)
    result = CliRunner().invoke(main, ["validate", str(spec)])
    assert result.exit_code == 0
    assert "ok — gross_by_category: 2 source(s), 2 time point(s), deliver t1, t2" in result.output


def test_validate_names_a_source_path_that_does_not_exist(spec: Path) -> None:
    (spec.parent / "data" / "sales").mkdir(parents=True)
    result = CliRunner().invoke(main, ["validate", str(spec)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {spec}, line ")
    assert "sources.returns.path" in lines[0] and "does not exist" in lines[0]


def test_text_lists_time_points_and_every_method(spec: Path) -> None:
    text = plan(spec)
    assert "time points: t1=1, t2=2; deliver: t1, t2" in text
    assert "t1 (1):" in text and "t2 (2):" in text
    methods = text.split("methods (* = this plan):")[1]
    for method in ("*auto", "batch", "ivm", "streaming", "ojv", "higher-order"):
        assert method in methods
    # the model's figures are labelled as its estimate, and the calibration factor is said once
    assert "the model's estimate (model seconds): cost vector [" in text and "model est.: cost vector" in methods
    assert text.count("calibration: ") == 1 and "no fragment of this job is measured yet" in text, text


def test_forced_method_keeps_states(spec: Path) -> None:
    text = plan(spec, "--method", "ojv")
    assert "method: ojv (uses " in text and "ojv" in text.split("uses ")[1].split(")")[0]
    assert "states:" in text and "LoadState" in text


def test_states_have_their_own_section(spec: Path) -> None:
    text = plan(spec, "--method", "ojv")
    section = text.split("\nstates: ")[1].split("\n\n")[0].splitlines()
    assert section[0].endswith(" alive at once")
    data = json.loads(plan(spec, "--format", "json", "--method", "ojv"))
    assert data["selector"] in ("greedy", "ilp") and data["states"]
    assert f"chosen by the {'ILP' if data['selector'] == 'ilp' else 'greedy'}" in section[0]
    assert len(section) == 1 + len(data["states"])
    for line, state in zip(section[1:], data["states"]):
        producer = next(f for f in data["fragments"] if f["keeps"] == state["id"])
        assert state["produced_by"] == producer["id"] and state["produced_at"] == producer["time"]
        assert line.startswith(f"  {state['id']} ") and f"saved at t{state['produced_at']} by {producer['id']}" in line
        readers = [f["id"] for f in data["fragments"] if state["id"] in f["inputs"]["states"]]
        assert sorted(set(state["read_by"])) == sorted(readers) and readers
        assert state["estimated_bytes"] >= 0 and "size=" in line
    alive = {t: sum(s["estimated_bytes"] for s in data["states"] if s["produced_at"] <= t <= max(s["read_at"])) for t in (1, 2)}
    assert data["peak_state_bytes"] == pytest.approx(max(alive.values()))


def test_selector_is_recorded(spec: Path) -> None:
    assert "chosen by the ILP" in plan(spec, "--method", "ojv", "--selector", "ilp")
    assert "chosen by the greedy" in plan(spec, "--method", "ojv", "--selector", "greedy")
    assert "chosen by the memo search" in plan(spec, "--method", "ojv", "--selector", "off")
    assert json.loads(plan(spec, "--format", "json", "--method", "ojv", "--selector", "ilp"))["selector"] == "ilp"


def test_state_budget_bounds_the_states(spec: Path) -> None:
    unbounded = json.loads(plan(spec, "--format", "json", "--method", "ojv"))
    peak = unbounded["peak_state_bytes"]
    assert peak > 0 and unbounded["state_budget_bytes"] is None
    spec.write_text(SPEC + f"state_budget: {int(peak // 2)}\n", encoding="utf-8")
    bounded = json.loads(plan(spec, "--format", "json", "--method", "ojv"))
    assert bounded["state_budget_bytes"] == int(peak // 2)
    assert bounded["peak_state_bytes"] <= peak // 2
    assert bounded["objective"]["total_ns"] >= unbounded["objective"]["total_ns"] - 1e-6
    assert "budget " in plan(spec, "--method", "ojv")  # the section names the budget
    # the command line overrides the spec
    again = json.loads(plan(spec, "--format", "json", "--method", "ojv", "--state-budget", f"{peak * 2:.0f}B"))
    assert again["peak_state_bytes"] == pytest.approx(peak)


def test_json_has_the_plan_format(spec: Path) -> None:
    data = json.loads(plan(spec, "--format", "json", "--method", "ivm"))
    assert set(data) >= {"time_points", "objective", "fragments", "alternatives", "states"}
    assert data["time_points"] == ["1", "2"]
    assert data["objective"]["weights"] == [0.001, 1.0]
    assert len(data["objective"]["cost_vector_ns"]) == 2
    assert set(data["alternatives"]) == {"auto", "batch", "ivm", "streaming", "ojv", "higher-order"}
    for fragment in data["fragments"]:
        assert set(fragment) >= {"id", "time", "method", "inputs", "output", "estimated_rows", "cost", "sql"}
        assert fragment["sql"].lstrip().upper().startswith("SELECT")
    # auto is never above any forced method, unless it recomputes and none saves the margin
    objective = {m: a["objective_ns"] for m, a in data["alternatives"].items()}
    cheapest = min(objective.values())
    assert objective["auto"] <= cheapest + 1e-6 or (objective["auto"] == objective["batch"] and cheapest > 0.9 * objective["batch"])


def test_dot(spec: Path) -> None:
    dot = plan(spec, "--format", "dot", "--method", "ivm")
    assert dot.startswith("digraph plan {") and "cluster_t1" in dot and "->" in dot


MEMO_NAMES = re.compile(r"\bG\d+\b|\b(SS|SD|PS|VD)\[\d")


def test_plans_speak_the_users_words_and_the_memos_only_when_verbose(spec: Path, tmp_path: Path) -> None:
    """Fragments and states are named by what they compute over which tables, in text, JSON
    and DOT; the memo's names (``SD[0,2] of G8``) only with --verbose. DOT shows every time
    point, one that runs nothing too, in order, and each kept state as an edge."""
    late = tmp_path / "late.yaml"  # nothing can run at t1 of three: every source lands later
    late.write_text(SPEC.replace("at: [1, 2]", "at: [1, 2, 3]").replace("expected: [0.6, 0.4]", "expected: [0, 0.6, 0.4]")
                    .replace("expected: [0.4, 0.6]", "expected: [0, 0.4, 0.6]").replace("deliver: every", "deliver: last"),
                    encoding="utf-8")
    text = plan(late, "--method", "ivm")
    fragment_lines = [line for line in text.splitlines() if re.match(r"^  f\d+ \[", line)]
    assert fragment_lines and all(" of the result -> " in line or " over " in line for line in fragment_lines), text
    header = text.split("\nmethods (* = this plan):")[0]
    assert not [line for line in header.splitlines() if MEMO_NAMES.search(line) and not line.startswith("      ")], header
    verbose = plan(late, "--method", "ivm", "--verbose")
    assert re.search(r" of the result \((SS|SD|PS|VD)\[[\d,]+\] of G\d+\) -> ", verbose), verbose

    data = json.loads(plan(late, "--method", "ivm", "--format", "json"))
    assert all("form" not in f and f["computes"] for f in data["fragments"]), data["fragments"]
    assert all(f["inputs"]["reads"] for f in data["fragments"] if f["inputs"]["sources"])
    data = json.loads(plan(late, "--method", "ivm", "--format", "json", "--verbose"))
    assert all(MEMO_NAMES.search(f["form"]) for f in data["fragments"])

    dot = plan(late, "--method", "ivm", "--format", "dot")
    assert not MEMO_NAMES.search(dot), dot
    assert [int(t) for t in re.findall(r"subgraph cluster_t(\d+)", dot)] == [1, 2, 3]
    assert re.search(r't1_at \[shape=plaintext, label="nothing runs"\]', dot), dot
    assert "t1_at -> t2_at" in dot and "t2_at -> t3_at" in dot
    states = {s["id"] for s in data["states"]}
    assert states and all(re.search(rf'-> f\d+ \[label="{s}: ', dot) for s in states), dot


@pytest.mark.spark  # planning collects the statistics of the source through Spark
def test_a_source_folder_without_data_is_a_one_line_error(spec: Path, tmp_path: Path) -> None:
    copy = tmp_path / "spec.yaml"
    copy.write_text(spec.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "data" / "sales").mkdir(parents=True)
    result = CliRunner().invoke(main, ["plan", str(copy), "--workdir", str(tmp_path / "w")])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: {copy}: cannot collect the statistics of sales: ") and \
        result.output.count("\n") == 1, result.output


def test_errors_are_one_line(spec: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(SPEC.replace("SUM(IF(cost IS NULL, price, -cost))", "SUM(nope)"), encoding="utf-8")
    result = CliRunner().invoke(main, ["plan", str(bad)])
    assert result.exit_code == 2
    # the position in the spec file: the query's fourth line, in a literal block indented by two
    assert result.output.startswith(f"error: {bad}, line 6, column 24: query: unknown column nope"), result.output
    result = CliRunner().invoke(main, ["plan", str(spec), "--no-rule", "tvr-no-such-rule"])
    assert result.exit_code == 2 and "unknown rule(s): tvr-no-such-rule" in result.output
    result = CliRunner().invoke(main, ["plan", str(spec), "--state-budget", "lots"])
    assert result.exit_code == 2 and "'lots' is not a size" in result.output and "--state-budget" in result.output


def test_the_selector_choices_are_the_planners() -> None:
    from tempura.cli import SELECTOR_CHOICES
    from tempura.mqo.select import SELECTORS

    assert tuple(SELECTOR_CHOICES) == SELECTORS


@pytest.mark.parametrize("command", [["bench", "mqo", "--random", "0"], ["bench", "tvr-planning"], ["tpch-check"]])
def test_bad_query_name_is_a_one_line_error(command: list[str]) -> None:
    result = CliRunner().invoke(main, [*command, "--query", "q23"])
    assert result.exit_code == 2 and result.exception is not None
    assert "--query q23: not a query name" in result.output and "Traceback" not in result.output


@pytest.mark.spark
def test_plan_uses_the_statistics_the_run_plans_with(spec: Path, spark: object) -> None:
    """The job's sources are analysed where they have no statistics, into the job's folder that
    ``tempura run`` reads; the estimates then see the data (3 categories, not a guess)."""
    from pyspark.sql import SparkSession

    assert isinstance(spark, SparkSession)
    sales = [(f"o{i}", f"c{i % 3}", 10 + i, 1 + i % 2) for i in range(60)]
    returns = [(f"o{i}", 5, 2) for i in range(0, 60, 7)]
    spark.createDataFrame(sales, "o_id string, category string, price bigint, arrives int").write.parquet(str(spec.parent / "data" / "sales"))
    spark.createDataFrame(returns, "o_id string, cost bigint, arrives int").write.parquet(str(spec.parent / "data" / "returns"))
    text = plan(spec, "--method", "batch")
    stats = spec.parent / "w" / "jobs" / "gross_by_category" / "stats"
    assert sorted(p.name for p in stats.glob("*.json")) == ["returns.json", "sales.json"]
    final = [line for line in text.splitlines() if "HashAggregate final keys=[category]" in line]
    assert final and all(" rows=3 " in line for line in final), final


def test_the_job_history_calibrates_the_stage_cost(spec: Path) -> None:
    """With a run history whose fragments measured 1 ms of CPU per model second and 50 ms per
    stage, the plan is made with 50 s per stage and says so; the spec or ``--cost`` pins it."""
    default = json.loads(plan(spec, "--format", "json"))
    assert default["cost_constants"]["stage"] == 1e9
    write_history(spec.parent / "w" / "jobs" / "gross_by_category" / "history.sqlite", alpha=1e-3, beta=0.05)
    calibrated = json.loads(plan(spec, "--format", "json"))
    assert calibrated["cost_constants"]["stage"] == pytest.approx(50e9)
    assert any(n.startswith(f"stage cost calibrated from {len(SHAPES)} fragments: 50 s per stage") for n in calibrated["notes"])
    assert calibrated["objective"]["total_ns"] > default["objective"]["total_ns"]
    pinned = json.loads(plan(spec, "--format", "json", "--cost", "stage=2e9"))
    assert pinned["cost_constants"]["stage"] == 2e9 and not any("stage cost" in n for n in pinned["notes"])
    spec.write_text(SPEC + "cost: {stage: 3e9}\n", encoding="utf-8")
    assert json.loads(plan(spec, "--format", "json"))["cost_constants"]["stage"] == 3e9


def test_history_ends_with_the_calibration_its_fragments_support(spec: Path) -> None:
    """``tempura history`` lists each fragment's estimated and measured stages and ends with the
    stage cost the job's history supports; a spec that pins the stage says so instead."""
    workdir = spec.parent / "w"
    write_history(workdir / "jobs" / "gross_by_category" / "history.sqlite", alpha=2e-3, beta=0.03)
    result = CliRunner(env={"COLUMNS": "300"}).invoke(main, ["history", str(spec), "--fragments", "--workdir", str(workdir)])
    assert result.exit_code == 0, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith(f"stage cost calibrated from {len(SHAPES)} fragments: 15 s per stage"), last
    assert "est. stages" in result.output
    spec.write_text(SPEC + "cost: {stage: 3e9}\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["history", str(spec), "--workdir", str(workdir)])
    assert result.output.strip().splitlines()[-1] == "stage cost set by the spec: 3 s per stage"
