"""The public standing-query API and the commands over it, on Spark: the README's Python example
runs as written (on the ``sales_returns`` scenario) and leaves the job it says; the command line
plans what the API plans; ``history`` gives JSON and tables that do not wrap when piped; a
project of specs runs spec by spec, a failing one not stopping the others."""

from __future__ import annotations

import ast
import datetime as dt
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import tempura
from tempura.cli import main

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("fast_spark")]

ROOT = Path(__file__).resolve().parents[1]
SCALE = 0.002


def readme_example() -> str:
    """The README's Python block that uses ``tempura.StandingQuery``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    found = [b for b in blocks if 'tempura.StandingQuery("spec.yaml"' in b]
    assert len(found) == 1, "the README has one Python example of StandingQuery on spec.yaml"
    return found[0]


@pytest.fixture(scope="module")
def job(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``sales_returns`` scenario: its ``spec.yaml`` in a folder of its own, with its data."""
    from scenarios import prepared_scenario

    root = tmp_path_factory.mktemp("standing")
    path = prepared_scenario(spark, "sales_returns", root, SCALE)
    assert path.name == "spec.yaml"
    return path


@pytest.fixture(scope="module")
def ran(job: Path, spark: Any) -> dict[str, Any]:
    """The README example run in the spec's folder: its variables afterwards."""
    import os

    code = readme_example()
    ast.parse(code)
    here = Path.cwd()
    os.chdir(job.parent)
    try:
        names: dict[str, Any] = {}
        exec(compile(code, "README.md", "exec"), names)
    finally:
        os.chdir(here)
    return names


def test_the_readme_example_runs_and_does_what_it_says(ran: dict[str, Any], job: Path, spark: Any) -> None:
    query = ran["query"]
    assert isinstance(query, tempura.StandingQuery)
    assert query.validate().ok
    assert ran["choice"].method == "auto" and {"auto", "batch", "ivm"} <= set(ran["choice"].alternatives)
    # 13:00 on the day of the first cycle: t1 (06:00) and t2 (12:00) are due
    assert [(p.index, p.skipped) for p in ran["outcome"].results] == [(1, False), (2, False)]
    assert ran["trial"].method == "ivm" and ran["trial"].correct
    assert [p.index for p in ran["trial"].points] == [1, 2, 3, 4]
    assert [r["time_index"] for r in query.history().runs] == [1, 2]
    # the simulation kept apart: its own history, the job's untouched
    assert [r["time_index"] for r in query.history("ivm").runs] == [1, 2, 3, 4]
    # run again at the same time: idempotent
    again = query.run_due(now=dt.datetime(2026, 11, 22, 13))
    assert again.results == [] and again.skipped == 0
    assert not query.check().damaged


def test_the_command_line_plans_what_the_api_plans(ran: dict[str, Any], job: Path) -> None:
    spec = job.parent / "spec.yaml"
    workdir = job.parent / ".tempura"
    result = CliRunner().invoke(main, ["plan", str(spec), "--workdir", str(workdir), "--format", "json"])
    assert result.exit_code == 0, result.output
    through_cli = json.loads(result.output)
    direct = json.loads(json.dumps(tempura.StandingQuery(spec, workdir).plan().to_json(), default=str))
    # how long each phase of the search took differs from one planning to the next
    assert untimed(direct) == untimed(through_cli)
    assert untimed(direct["search"]) != direct["search"]


def untimed(data: Any) -> Any:
    """``data`` without the durations it holds (keys naming seconds), at any depth."""
    if isinstance(data, dict):
        return {k: untimed(v) for k, v in data.items() if "seconds" not in k}
    if isinstance(data, list):
        return [untimed(v) for v in data]
    return data


def test_history_as_json_and_as_a_table_that_does_not_wrap(ran: dict[str, Any], job: Path) -> None:
    spec = job.parent / "spec.yaml"
    args = [str(spec), "--workdir", str(job.parent / ".tempura")]
    result = CliRunner().invoke(main, ["history", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["name"] == "sales_returns" and [r["time_index"] for r in data["runs"]] == [1, 2]
    assert "fragments" not in data
    simulated = [*args, "--simulate", "ivm", "--fragments"]
    result = CliRunner().invoke(main, ["history", *simulated, "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [r["time_index"] for r in data["runs"]] == [1, 2, 3, 4]
    assert data["fragments"] and {f["time_index"] for f in data["fragments"]} <= {1, 2, 3, 4}
    table = CliRunner().invoke(main, ["history", *simulated])
    assert table.exit_code == 0, table.output
    # a piped table keeps each row on one line: the cycle in words, the time point and method side by side
    for index, hour in ((1, "06"), (2, "12"), (3, "18")):
        pattern = rf"│ cycle of 2026-11-22 00:00 │ t{index} \(2026-11-22 {hour}:00\)\s+│ ivm\s+│"
        assert len([line for line in table.output.splitlines() if re.search(pattern, line)]) == 1, table.output
    fragment_lines = [line for line in table.output.splitlines() if re.search(r"│ f\d+\s+│", line)]
    assert len(fragment_lines) == len(data["fragments"]), table.output


def test_a_project_runs_spec_by_spec_and_a_bad_one_does_not_stop_the_others(job: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(job.parent, project / "sales", ignore=shutil.ignore_patterns(".tempura"))
    (project / "sales" / "spec.yaml").rename(project / "sales" / "sales.yaml")
    broken = project / "broken.yaml"
    broken.write_text("name: broken\nquery: SELECT 1\nschedule: {at: [1, 2]}\nsources: {}\nbogus: 1\n")
    workdir = str(tmp_path / "work")
    result = CliRunner().invoke(main, ["run", str(project), "--simulate", "--method", "batch", "--workdir", workdir])
    assert result.exit_code == 2, result.output
    assert "== broken" in result.stdout and "== sales_returns" in result.stdout
    assert result.stdout.count(" fragment(s), ") == 4, result.stdout  # the good spec ran all of cycle 0
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]  # not the progress bars
    assert len(errors) == 2 and "broken.yaml" in errors[0] and "bogus" in errors[0] and "1 of 2 spec(s) failed" in errors[1], errors
    selected = CliRunner().invoke(main, ["history", str(project), "--select", "sales_*", "--simulate", "batch",
                                         "--workdir", workdir, "--format", "json"])
    assert selected.exit_code == 0, selected.output
    assert [r["time_index"] for r in json.loads(selected.stdout)["runs"]] == [1, 2, 3, 4]


def test_references_are_computed_once_and_kept_for_their_spec_alone(fast_spark: Any, tmp_path: Path) -> None:
    """A ``References`` store runs a time point's ``spark.sql`` once and hands out the same rows
    after; a spec loaded again from the same file shares it, one of another query is refused."""
    from scenarios import prepared_scenario
    from tempura.scheduler import load_spec

    path = prepared_scenario(fast_spark, "sales_returns", tmp_path / "scenario", 0.002)
    query = tempura.StandingQuery(path, tmp_path / "work", spark=fast_spark)
    references = query.references()
    cycle = query.spec.cycle(0)
    assert cycle is not None
    first = references.at(query.spec, cycle, 2)
    assert first.rows and first.schema.fieldNames() == fast_spark.sql(query.spec.sql).columns
    again = references.at(load_spec(path), cycle, 2)
    assert again is first
    assert references.at(query.spec, cycle, 1).rows != first.rows
    other = path.with_name("other.yaml")
    other.write_text(path.read_text().replace("name: sales_returns", "name: other_returns"))
    with pytest.raises(ValueError, match="references kept for spec 'sales_returns' asked for spec 'other_returns'"):
        references.at(load_spec(other), cycle, 2)
