"""The command line: plans without Spark when schemas are declared, one-line errors, exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tempura import tpch
from tempura.cli import main


@pytest.fixture()
def catalog(tmp_path: Path) -> Path:
    """A TPC-H catalog whose schemas are declared (no data needed to plan)."""
    return tpch.write_catalog(tmp_path)


def test_explain_prints_the_physical_plan(catalog: Path, tmp_path: Path) -> None:
    args = ["explain", "--catalog", str(catalog), "--workdir", str(tmp_path / "w"), "--trace", tpch.query_text("q05")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Sort single [revenue DESC NULLS LAST]")
    assert "HashAggregate final keys=[n_name]" in result.output and "Exchange hashpartitioning(n_name)" in result.output
    assert "join-reorder on G" in result.output and "DPccp over 6 relations" in result.output
    assert "search: " in result.output and "rows≈" in result.output and "cost=" in result.output


def test_explain_no_rule_changes_the_plan(catalog: Path, tmp_path: Path) -> None:
    base = ["explain", "--catalog", str(catalog), "--workdir", str(tmp_path / "w"), tpch.query_text("q03")]
    plain = CliRunner().invoke(main, base)
    forced = CliRunner().invoke(main, [*base, "--no-rule", "broadcast-hash-join", "--no-rule", "shuffled-hash-join"])
    assert plain.exit_code == forced.exit_code == 0, forced.output
    assert "SortMergeJoin" not in plain.output and "SortMergeJoin" in forced.output
    assert "BroadcastHashJoin" not in forced.output
    bad = CliRunner().invoke(main, [*base, "--no-rule", "no-such-rule"])
    assert bad.exit_code == 2 and bad.output.startswith("error: unknown rule(s): no-such-rule")


def test_explain_logical_prints_the_bound_plan(catalog: Path) -> None:
    result = CliRunner().invoke(main, ["explain", "--catalog", str(catalog), "--logical", tpch.query_text("q04")])
    assert result.exit_code == 0, result.output
    assert "Join semi ON l_orderkey = o_orderkey" in result.output
    assert result.output.startswith("Sort [o_orderpriority ASC NULLS FIRST]")


def test_explain_json_with_sql(catalog: Path, tmp_path: Path) -> None:
    sql_file = tmp_path / "q.sql"
    sql_file.write_text("SELECT n_name FROM nation WHERE n_regionkey = 1")
    result = CliRunner().invoke(main, ["explain", "--catalog", str(catalog), "--logical", "--json", "--sql", f"@{sql_file}"])
    assert result.exit_code == 0, result.output
    assert '"spark_sql": "SELECT nation.n_name AS n_name FROM nation AS nation WHERE nation.n_regionkey = 1"' in result.output


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT FROM WHERE", "error: syntax error"),
        ("SELECT x FROM nowhere", "error: unknown table 'nowhere'"),
        ("SELECT n_name,\n nope FROM nation", "error: unknown column nope (line 2, column 2)"),
        ("SELECT n_nme FROM nation", "error: unknown column n_nme; did you mean n_name? (line 1, column 8)"),
        ("SELECT n_name FROM nation WHERE RANK() OVER (ORDER BY n_name) = 1",
         "error: a window function is allowed only in SELECT and ORDER BY (line 1, column 33)"),
        ("SELECT COUNT(DISTINCT n_name) OVER () FROM nation", "error: unsupported: DISTINCT in a window function (line 1, column 8)"),
    ],
)
def test_user_errors_are_one_line_with_exit_2(catalog: Path, sql: str, message: str) -> None:
    result = CliRunner().invoke(main, ["explain", "--catalog", str(catalog), sql])
    assert result.exit_code == 2
    assert result.output.startswith(message), result.output
    assert len(result.output.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_explain_stats_without_statistics_says_so(catalog: Path, tmp_path: Path) -> None:
    args = ["explain", "--catalog", str(catalog), "--workdir", str(tmp_path / "w"), "--stats", tpch.query_text("q03")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    first = result.output.splitlines()[0]
    assert first.startswith("Limit 10  (rows≈10 ") and "cost=" in first and "TakeOrdered" in first
    assert "no statistics for table lineitem" in result.output


def test_explain_stats_json_gives_every_node(catalog: Path, tmp_path: Path) -> None:
    args = ["explain", "--catalog", str(catalog), "--workdir", str(tmp_path / "w"), "--stats", "--json"]
    result = CliRunner().invoke(main, [*args, "SELECT n_name, COUNT(*) AS c FROM nation GROUP BY n_name"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert [n["operator"] for n in report["nodes"]] == ["Aggregate", "Scan"]
    for node in report["nodes"]:
        assert {"id", "operator", "rows", "bytes", "cost_ns", "sql"} <= node.keys()
    assert report["nodes"][1]["sql"] == "SELECT nation.n_name AS n_name FROM nation AS nation"


def test_cost_constants_from_the_command_line(catalog: Path, tmp_path: Path) -> None:
    base = ["explain", "--catalog", str(catalog), "--workdir", str(tmp_path / "w"), "--stats", "--json"]
    sql = "SELECT n_name FROM nation"
    default = json.loads(CliRunner().invoke(main, [*base, sql]).output)["cost_ns"]
    doubled = json.loads(CliRunner().invoke(main, [*base, "--cost", "dfs_read=1800", sql]).output)["cost_ns"]
    assert doubled - 1e9 == pytest.approx(2 * (default - 1e9))  # a scan costs a stage, plus Hr per byte
    seed = json.loads(CliRunner().invoke(main, [*base, "--cost", "stage=0", sql]).output)["cost_ns"]
    assert seed == pytest.approx(default - 1e9)
    for bad, message in (("bogus=1", "unknown cost constant 'bogus'"), ("network", "--cost takes NAME=VALUE"), ("cpu=-1", "'cpu' must be")):
        result = CliRunner().invoke(main, [*base, "--cost", bad, sql])
        assert result.exit_code == 2 and message in result.output, result.output


def test_analyze_rejects_unknown_tables_before_starting_spark(catalog: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["analyze", "--catalog", str(catalog), "--workdir", str(tmp_path), "nope"])
    assert result.exit_code == 2
    assert result.output.startswith("error: unknown table 'nope'")


def test_missing_catalog(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["explain", "--catalog", str(tmp_path / "none.yaml"), "SELECT 1"])
    assert result.exit_code == 2
    assert "file not found" in result.output


def test_every_command_has_help() -> None:
    for command in (["query"], ["explain"], ["tpch-gen"], ["demo"], ["tpch-check"], ["run"], ["history"], ["bench", "incremental"], ["analyze"], ["bench", "cardinality"], ["bench", "join-order"], ["check"], ["repair"], ["bench", "faults"]):
        result = CliRunner().invoke(main, [*command, "--help"])
        assert result.exit_code == 0 and "Usage" in result.output


def test_the_module_runs_every_command() -> None:
    found = subprocess.run([sys.executable, "-m", "tempura.cli", "repair", "--help"], capture_output=True, text=True)
    assert found.returncode == 0 and "Usage" in found.stdout, found.stderr


@pytest.mark.spark
def test_query_prints_and_writes(spark: object, tpch_catalog: Path, tmp_path: Path) -> None:
    sql = "SELECT r_name, COUNT(*) AS n FROM region JOIN nation ON r_regionkey = n_regionkey GROUP BY r_name ORDER BY r_name"
    result = CliRunner().invoke(main, ["query", "--catalog", str(tpch_catalog), sql])
    assert result.exit_code == 0, result.output
    assert "AFRICA" in result.output and "EUROPE" in result.output
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["query", "--catalog", str(tpch_catalog), sql, "--out", str(out), "--format", "json"])
    assert result.exit_code == 0, result.output
    lines = "".join(p.read_text() for p in sorted(out.glob("part-*.json"))).splitlines()
    assert len(lines) == 5 and '"n":5' in lines[0]


@pytest.mark.spark
def test_analyze_then_explain_uses_the_statistics(spark: object, tpch_catalog: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    result = CliRunner().invoke(main, ["analyze", "--catalog", str(tpch_catalog), "--workdir", str(work), "nation", "region"])
    assert result.exit_code == 0, result.output
    assert (work / "stats" / "nation.json").exists() and (work / "stats" / "region.json").exists()
    assert "n_nationkey" in result.output  # listed among the unique columns
    sql = "SELECT n_name FROM nation JOIN region ON n_regionkey = r_regionkey WHERE r_name = 'ASIA'"
    result = CliRunner().invoke(main, ["explain", "--catalog", str(tpch_catalog), "--workdir", str(work), "--stats", sql])
    assert result.exit_code == 0, result.output
    assert "no statistics" not in result.output
    assert "(rows=5 " in result.output.splitlines()[0]


@pytest.mark.spark
def test_tpch_check_runs_selected_queries(spark: object, tpch_catalog: Path, tmp_path: Path) -> None:
    data = tmp_path / "work" / "data" / "tpch-sf0.01"
    data.parent.mkdir(parents=True)
    data.symlink_to(tpch_catalog.parent)
    result = CliRunner().invoke(main, ["tpch-check", "--workdir", str(tmp_path / "work"), "--query", "q06", "--query", "3"])
    assert result.exit_code == 0, result.output
    assert "2/2 queries equal to Spark" in result.output
    assert "optimize ms" in result.output and "longest optimization: q0" in result.output
    assert list((tmp_path / "work" / "tpch-check" / "sf0.01" / "stats").glob("lineitem.json"))  # planned on analysed tables


def test_the_demo_names_the_methods_whose_plan_is_autos_very_plan() -> None:
    from benchmarks.demo import same_plans
    from tempura.scheduler.simulation import MethodRun

    def run(method: str, digest: str) -> MethodRun:
        return MethodRun("s", method, method, (0.0, 1.0), 1.0, plan_digest=digest)

    assert same_plans([run("auto", "a1"), run("batch", "a1"), run("ivm", "b2"), run("ojv", "a1")]) == (
        "auto runs the very plan of batch, ojv: the measured difference is noise")
    assert same_plans([run("auto", "a1"), run("batch", "b2")]) is None
    assert same_plans([run("batch", "b2")]) is None
