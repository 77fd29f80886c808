"""``tempura run`` as an operator meets it, on Spark: ``--simulate`` starts afresh each time, an
output given as a ``file://`` URI is delivered there (not under the spec's folder), a lock left by
a holder the operator knows to be dead goes with ``--force-unlock`` and a warning, and a second
run names the holder in one line; a workdir on a file system Spark has no connector for stops in
one line."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tempura.cli import main
from tempura.runtime.lock import NAME
from tempura.scheduler import load_spec
from tempura.scheduler.planning import job_folder

from test_bad_sources import ROWS, add_file, write_spec

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("fast_spark")]

QUERY = "SELECT category, SUM(price) AS total FROM sales GROUP BY category"


def run(*args: str) -> Any:
    return CliRunner().invoke(main, ["run", *args])


def test_simulate_starts_afresh_each_time(spark: Any, tmp_path: Path) -> None:
    add_file(spark, tmp_path / "data" / "sales", "a.parquet", ROWS)
    spec = write_spec(tmp_path, QUERY)
    workdir = str(tmp_path / "work")
    first = run(str(spec), "--simulate", "--method", "batch", "--workdir", workdir)
    assert first.exit_code == 0, first.output
    second = run(str(spec), "--simulate", "--method", "batch", "--workdir", workdir)
    assert second.exit_code == 0, second.output
    assert "committed already" not in second.output, second.output
    assert second.output.count(" fragment(s), ") == 2, second.output


def test_a_runs_lines_name_the_cycle_and_time_points_in_words_and_label_their_figures(spark: Any, tmp_path: Path) -> None:
    """Each line: the cycle by its origin (never its folder's name), the time point with its
    value, CPU and wall seconds; the progress names fragments in words, the memo's names (``SS[2]
    of G6``) only with --verbose."""
    import re

    add_file(spark, tmp_path / "data" / "sales", "a.parquet", ROWS)
    spec = write_spec(tmp_path, QUERY)
    workdir = str(tmp_path / "work")
    plain = run(str(spec), "--simulate", "--method", "ivm", "--workdir", workdir)
    assert plain.exit_code == 0, plain.output
    lines = [line for line in plain.output.splitlines() if " fragment(s), " in line]
    assert [line.split(": ", 1)[0] for line in lines] == ["cycle of 2026-01-01 00:00, t1 (2026-01-01 06:00)",
                                                         "cycle of 2026-01-01 00:00, t2 (2026-01-01 12:00)"], lines
    assert all(re.search(r"ivm, \d+ fragment\(s\), CPU \d+\.\d\d s, wall \d+\.\d\d s, \d+ rows landed", x) for x in lines)
    words = re.sub(r"\S*/cycles/\S*", "PATH", plain.output)  # a delivery's path keeps the folder's name
    assert "20260101T000000" not in words and not re.search(r" of G\d+", words), plain.output
    assert re.search(r"fragment 1 of \d+ \[", plain.output), plain.output
    verbose = CliRunner(env={"COLUMNS": "400"}).invoke(  # wide enough that no bar's words are cut
        main, ["run", str(spec), "--simulate", "--method", "ivm", "--workdir", workdir, "--verbose"])
    assert verbose.exit_code == 0, verbose.output
    assert re.search(r"\(f\d+ [A-Z]+[\[(].* of G\d+\)", verbose.output), verbose.output


def test_an_output_uri_is_delivered_where_it_points(spark: Any, tmp_path: Path) -> None:
    add_file(spark, tmp_path / "job" / "data" / "sales", "a.parquet", ROWS)
    spec = write_spec(tmp_path / "job", QUERY)
    target = tmp_path / "elsewhere" / "totals"
    spec.write_text(spec.read_text() + f"output: {{path: 'file://{target}'}}\n")
    result = run(str(spec), "--now", "2026-01-01T13:00:00", "--workdir", str(tmp_path / "work"))
    assert result.exit_code == 0, result.output
    assert sorted(tuple(r) for r in spark.read.parquet(str(target)).collect()) == [("a", 5), ("b", 2)]
    assert not any("file:" in p.name for p in (tmp_path / "job").rglob("*"))


def test_a_held_lock_stops_a_run_in_one_line_and_force_unlock_removes_it(spark: Any, tmp_path: Path) -> None:
    add_file(spark, tmp_path / "data" / "sales", "a.parquet", ROWS)
    spec = write_spec(tmp_path, QUERY)
    folder = job_folder(tmp_path / "work", load_spec(spec))
    folder.mkdir(parents=True)
    now = time.time()
    (folder / NAME).write_text(json.dumps({"host": "other-host", "pid": 4242, "token": "t", "since": now, "heartbeat": now}))
    held = run(str(spec), "--now", "2026-01-01T13:00:00", "--workdir", str(tmp_path / "work"))
    lines = held.output.strip().splitlines()
    assert held.exit_code == 2 and len(lines) == 1, held.output
    assert "is locked by another run: pid 4242 on other-host" in lines[0]
    assert not list(folder.rglob("t[0-9][0-9][0-9].json"))
    forced = run(str(spec), "--now", "2026-01-01T13:00:00", "--workdir", str(tmp_path / "work"), "--force-unlock")
    assert forced.exit_code == 0, forced.output
    assert "warning: removed the lock" in forced.output and "pid 4242 on other-host" in forced.output
    assert len(list(folder.rglob("t[0-9][0-9][0-9].json"))) == 2
    assert not (folder / NAME).exists()


def test_a_workdir_on_a_file_system_without_its_connector_stops_in_one_line(spark: Any, tmp_path: Path) -> None:
    """The job folder goes through Hadoop's file system of the workdir's scheme: without the
    connector on Spark's classpath (no S3A here), the run stops before anything is read or
    written, in one line naming the workdir and the missing class."""
    spec = write_spec(tmp_path, QUERY)
    result = run(str(spec), "--now", "2026-01-01T13:00:00", "--workdir", "s3a://bucket/work")
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "s3a://bucket/work" in lines[0], result.output
    assert "S3AFileSystem" in lines[0] and "connector" in lines[0], lines[0]
    assert not list(tmp_path.rglob("*s3a*")), "a folder named after the URI was made"
