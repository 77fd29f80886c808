"""Defaults a data engineer meets: the workdir is ``.tempura`` beside the spec file whatever the
current folder, a command that finds no job folder says where it looked, and an endless view
delivers every refresh unless told otherwise."""

from __future__ import annotations

import os
from pathlib import Path

from click.testing import CliRunner

from tempura.cli import main
from tempura.scheduler import load_spec
from tempura.standing import StandingQuery

SPEC = ("name: totals\nquery: SELECT category, SUM(price) AS total FROM sales GROUP BY category\n"
        "sources:\n  sales:\n    path: data/sales\n    arrival: {column: sold_at}\n"
        "    schema: {category: string, price: int, sold_at: timestamp}\n"
        "schedule:\n  start: '2026-11-20T00:00:00'\n  every: 6h\n  points: 4\n{extra}")


def write(folder: Path, extra: str = "") -> Path:
    (folder / "data" / "sales").mkdir(parents=True)
    (folder / "spec.yaml").write_text(SPEC.replace("{extra}", extra))
    return folder / "spec.yaml"


def test_the_workdir_is_beside_the_spec_and_a_missing_job_folder_is_named(tmp_path: Path) -> None:
    spec = write(tmp_path / "project")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    before = os.getcwd()
    os.chdir(elsewhere)
    try:
        assert StandingQuery(spec).workdir == tmp_path / "project" / ".tempura"
        checked = CliRunner().invoke(main, ["check", str(spec)])
        history = CliRunner().invoke(main, ["history", str(spec)])
    finally:
        os.chdir(before)
    folder = tmp_path / "project" / ".tempura" / "jobs" / "totals"
    assert checked.exit_code == 0 and checked.output.strip() == (
        f"totals: no job folder at {folder}: nothing has run with this workdir (give --workdir where the job runs)")
    assert history.exit_code == 0 and history.output.strip() == (
        f"totals: no committed time point yet (no job folder at {folder}: give --workdir where the job runs)")
    assert not (elsewhere / ".tempura").exists()


def test_an_endless_view_delivers_every_refresh_by_default(tmp_path: Path) -> None:
    endless = load_spec(write(tmp_path / "a", "  endless: true\n"))
    assert endless.time_points().deliver == (1, 2, 3, 4)
    told = load_spec(write(tmp_path / "b", "  endless: true\n  deliver: last\n"))
    assert told.time_points().deliver == (4,)
    assert load_spec(write(tmp_path / "c")).time_points().deliver == (4,)
