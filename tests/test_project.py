"""A project of specs: which YAML files under a folder are specs, ``--select`` by name or shell
pattern, and the errors for a selection that matches nothing, two specs of one name and a path
that does not exist; ``tempura validate`` over a folder reports every spec, one line each, and
binds each query without Spark against declared columns or parquet footers."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from tempura.cli import main
from tempura.errors import TempuraError
from tempura.project import spec_files

SPEC = """name: {name}
query: SELECT category, SUM(price) AS total FROM sales GROUP BY category
sources:
  sales: {{path: data/sales, format: parquet, arrival: {{column: arrived_at}},
          schema: {{category: string, price: bigint, arrived_at: timestamp}}, expected: [0.5, 0.5]}}
schedule: {{at: ["2026-01-01T12:00:00", "2026-01-02T00:00:00"], deliver: last}}
objective: {{preset: deadline}}
"""


def project(root: Path) -> Path:
    """Two specs (one in a subfolder), a catalog, a YAML data file and a workdir's YAML."""
    (root / "data" / "sales").mkdir(parents=True)
    (root / "revenue.yaml").write_text(SPEC.format(name="revenue_daily"))
    (root / "more").mkdir()
    (root / "more" / "stock.yml").write_text(SPEC.format(name="stock_levels"))
    (root / "more" / "data" / "sales").mkdir(parents=True)
    (root / "catalog.yaml").write_text("tables:\n  sales: {path: data/sales, format: parquet}\n")
    (root / "settings.yaml").write_text("schedule: nightly\n")  # no query: not a spec
    (root / ".tempura" / "jobs").mkdir(parents=True)
    (root / ".tempura" / "jobs" / "old.yaml").write_text(SPEC.format(name="old"))
    return root


def test_a_folder_stands_for_every_spec_under_it(tmp_path: Path) -> None:
    root = project(tmp_path)
    found = spec_files([root])
    assert [(f.name, f.path.relative_to(root).as_posix()) for f in found] == [
        ("stock_levels", "more/stock.yml"), ("revenue_daily", "revenue.yaml")]
    # a file named twice, or inside a folder also named, counts once
    assert len(spec_files([root / "revenue.yaml", root])) == 2


def test_select_by_name_stem_or_pattern(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert [f.name for f in spec_files([root], ["revenue_daily"])] == ["revenue_daily"]
    assert [f.name for f in spec_files([root], ["stock"])] == ["stock_levels"]  # the file's stem
    assert [f.name for f in spec_files([root], ["*_levels", "rev*"])] == ["stock_levels", "revenue_daily"]
    with pytest.raises(TempuraError, match=r"--select nope: no spec of that name \(there are: revenue_daily, "
                                           r"stock_levels\)"):
        spec_files([root], ["nope"])


def test_two_specs_of_one_name_and_a_missing_path_are_errors(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "copy.yaml").write_text(SPEC.format(name="revenue_daily"))
    with pytest.raises(TempuraError, match="name revenue_daily is also the name of"):
        spec_files([root])
    with pytest.raises(TempuraError, match="nowhere: no such file or folder"):
        spec_files([root / "nowhere"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(TempuraError, match="no spec under this folder"):
        spec_files([tmp_path / "empty"])


def test_a_yaml_file_that_does_not_parse_is_taken_as_a_spec_and_reported(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "torn.yaml").write_text("name: torn\nquery: [unclosed\n")
    assert "torn" in [f.name for f in spec_files([root])]
    result = CliRunner().invoke(main, ["validate", str(root)])
    assert result.exit_code == 2
    lines = result.stdout.splitlines()
    assert [line for line in lines if line.startswith("==")] == [
        f"== stock_levels ({root / 'more' / 'stock.yml'})", f"== revenue_daily ({root / 'revenue.yaml'})",
        f"== torn ({root / 'torn.yaml'})"]
    assert sum(": ok — " in line for line in lines) == 2, result.stdout
    errors = result.stderr.splitlines()
    assert len(errors) == 2 and "torn.yaml" in errors[0] and errors[1] == "error: 1 of 3 spec(s) failed", errors


def test_validate_selects_and_one_spec_prints_as_before(tmp_path: Path) -> None:
    root = project(tmp_path)
    result = CliRunner().invoke(main, ["validate", str(root), "--select", "revenue_daily"])
    assert result.exit_code == 0, result.output
    assert result.stdout == (f"{root / 'revenue.yaml'}: ok — revenue_daily: 1 source(s), 2 time point(s), "
                             f"deliver t2\n")


# -- validate binds the query without Spark -----------------------------------------------------


def footer_project(root: Path, query: str) -> Path:
    """A spec over a parquet source written with pyarrow, its schema not declared."""
    (root / "data" / "sales").mkdir(parents=True)
    table = pa.table({"category": ["a", "b"], "price": pa.array([5, 2], pa.int64()),
                      "arrived_at": pa.array([0, 0], pa.timestamp("us", tz="UTC"))})
    pq.write_table(table, root / "data" / "sales" / "part-0.parquet")
    spec = root / "spec.yaml"
    spec.write_text(f"""name: footers
query: |
{chr(10).join('  ' + line for line in query.splitlines())}
sources:
  sales: {{path: data/sales, format: parquet, arrival: {{column: arrived_at}}, expected: [0.5, 0.5]}}
schedule: {{at: ["2026-01-01T12:00:00", "2026-01-02T00:00:00"], deliver: last}}
objective: {{preset: deadline}}
""")
    return spec


def test_validate_binds_the_query_against_parquet_footers(tmp_path: Path) -> None:
    spec = footer_project(tmp_path, "SELECT category, SUM(price) AS total\nFROM sales GROUP BY category")
    result = CliRunner().invoke(main, ["validate", str(spec)])
    assert result.exit_code == 0, result.output
    assert "query not bound" not in result.output


def test_validate_names_an_unknown_column_and_its_position(tmp_path: Path) -> None:
    spec = footer_project(tmp_path, "SELECT category,\n       SUM(prize) AS total\nFROM sales GROUP BY category")
    result = CliRunner().invoke(main, ["validate", str(spec)])
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output, result.output
    # the query's line 2, column 12, where the spec file has it (a literal block from line 3)
    assert f"{spec}, line 4, column 14: query: unknown column prize; did you mean price?" in result.stderr, \
        result.stderr


def test_validate_says_when_a_source_needs_spark_to_bind(tmp_path: Path) -> None:
    spec = footer_project(tmp_path, "SELECT category FROM sales")
    (tmp_path / "data" / "sales" / "part-0.parquet").unlink()
    folder = tmp_path / "data" / "sales" / "day=1"
    folder.mkdir()
    pq.write_table(pa.table({"category": ["a"]}), folder / "part-0.parquet")  # a partition folder: Spark's to read
    result = CliRunner().invoke(main, ["validate", str(spec)])
    assert result.exit_code == 0, result.output
    assert "query not bound: the columns of sales need Spark to read" in result.stdout, result.stdout
