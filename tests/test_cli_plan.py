"""``tempura plan`` and ``tempura validate`` on a spec whose schemas and arrival are declared
(no Spark needed): text, JSON and DOT output, forced methods, one-line errors with exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

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
    result = CliRunner().invoke(main, ["validate", str(spec)])
    assert result.exit_code == 0
    assert "ok — gross_by_category: 2 source(s), 2 time point(s), deliver t1, t2" in result.output


def test_text_lists_time_points_and_every_method(spec: Path) -> None:
    text = plan(spec)
    assert "time points: t1=1, t2=2; deliver: t1, t2" in text
    assert "t1 (1):" in text and "t2 (2):" in text
    methods = text.split("methods (* = this plan):")[1]
    for method in ("*auto", "batch", "ivm", "streaming", "ojv", "higher-order"):
        assert method in methods


def test_forced_method_keeps_states(spec: Path) -> None:
    text = plan(spec, "--method", "ojv")
    assert "method: ojv (uses " in text and "ojv" in text.split("uses ")[1].split(")")[0]
    assert "states:" in text and "LoadState" in text


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
    # auto is never above any forced method
    objective = {m: a["objective_ns"] for m, a in data["alternatives"].items()}
    assert all(objective["auto"] <= v + 1e-6 for v in objective.values())


def test_dot(spec: Path) -> None:
    dot = plan(spec, "--format", "dot", "--method", "ivm")
    assert dot.startswith("digraph plan {") and "cluster_t1" in dot and "->" in dot


def test_errors_are_one_line(spec: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(SPEC.replace("SUM(IF(cost IS NULL, price, -cost))", "SUM(nope)"), encoding="utf-8")
    result = CliRunner().invoke(main, ["plan", str(bad)])
    assert result.exit_code == 2
    assert result.output.startswith(f"error: {bad}: query: column 'nope' could not be resolved")
    result = CliRunner().invoke(main, ["plan", str(spec), "--no-rule", "tvr-no-such-rule"])
    assert result.exit_code == 2 and "unknown rule(s): tvr-no-such-rule" in result.output
