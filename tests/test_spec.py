"""Spec files of standing queries: good ones load into time points, weights and a catalog; bad
ones get one-line errors naming the file, the line and the key."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import pytest

from tempura.cost.model import CostConstants
from tempura.scheduler import SpecError, Spec, load_spec
from tempura.tvr.bounds import Interval

INLINE_QUERY = "query: |\n  SELECT category, SUM(price) AS gross FROM sales GROUP BY category\n"
SALES_ARRIVAL = "    arrival: {column: arrived_at}\n"
SALES = "  sales:\n    path: data/sales\n    format: parquet\n    arrival: {column: arrived_at}\n"

SPEC = """\
name: gross_by_category
query: |
  SELECT category, SUM(price) AS gross FROM sales GROUP BY category
sources:
  sales:
    path: data/sales
    format: parquet
    arrival: {column: arrived_at}
schedule:
  at: [1, 2, 3]
objective:
  preset: deadline
"""


def write(folder: Path, text: str, name: str = "spec.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def load(tmp_path: Path, text: str) -> Spec:
    return load_spec(write(tmp_path, text))


def test_loads_the_minimal_spec(tmp_path: Path) -> None:
    spec = load(tmp_path, SPEC)
    assert spec.name == "gross_by_category"
    assert spec.dialect == "spark"
    assert spec.sql == "SELECT category, SUM(price) AS gross FROM sales GROUP BY category\n"
    assert list(spec.sources) == ["sales"]
    assert spec.sources["sales"].arrival.column == "arrived_at"
    assert spec.sources["sales"].changes is None
    assert spec.time_points().values == (1, 2, 3)
    assert spec.time_points().deliver == (3,)


def test_query_file_is_read_relative_to_the_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "job"
    write(folder, "SELECT 1 AS one\n", "query.sql")
    path = write(folder, SPEC.replace(INLINE_QUERY, "query_file: query.sql\n"))
    monkeypatch.chdir(tmp_path)
    assert load_spec(Path("job") / "spec.yaml").sql == "SELECT 1 AS one\n"
    assert load_spec(path).folder == folder.resolve()


def test_sources_options_schema_and_changes(tmp_path: Path) -> None:
    spec = load(
        tmp_path,
        SPEC.replace(
            "    format: parquet\n",
            "    format: csv\n    options: {header: true, sep: '|', maxColumns: 10}\n"
            "    schema: {O_ID: STRING, arrived_at: timestamp, _op: string}\n"
            "    changes: {op_column: _op, delete_values: [D, '-']}\n",
        ).replace("  sales:", "  Sales:"),
    )
    sales = spec.sources["sales"]
    assert sales.format == "csv"
    assert sales.options == {"header": "true", "sep": "|", "maxColumns": "10"}
    assert sales.changes is not None and sales.changes.op_column == "_op"
    assert sales.changes.delete_values == ("D", "-")


def test_catalog_resolves_paths_from_the_spec_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = SPEC.replace(
        "    format: parquet\n",
        "    format: csv\n    schema: {O_ID: STRING, arrived_at: timestamp}\n",
    ).replace(
        "schedule:",
        "  Returns:\n    path: s3a://bucket/returns\n    format: orc\n    arrival: {column: arrived_at}\nschedule:",
    )
    write(tmp_path / "job", text)
    monkeypatch.chdir(tmp_path)
    catalog = load_spec(Path("job/spec.yaml")).catalog()
    sales = catalog.table("sales")
    assert sales.path == str(tmp_path.resolve() / "job" / "data" / "sales")
    assert sales.format == "csv"
    assert sales.schema == {"o_id": "string", "arrived_at": "timestamp"}
    returns = catalog.table("RETURNS")
    assert returns.path == "s3a://bucket/returns"
    assert returns.format == "orc"
    assert returns.schema is None
    assert catalog.origin is not None and catalog.origin.endswith("spec.yaml")


@pytest.mark.parametrize(
    ("schedule", "values"),
    [
        (
            'at: ["2026-11-22T06:00:00", 2026-11-22T12:00:00]',
            (dt.datetime(2026, 11, 22, 6), dt.datetime(2026, 11, 22, 12)),
        ),
        ('at: ["2026-11-22", 2026-11-23]', (dt.date(2026, 11, 22), dt.date(2026, 11, 23))),
        ("at: [10, 20, 40]", (10, 20, 40)),
        (
            'start: "2026-11-22T00:00:00"\n  every: 6h\n  points: 4',
            (
                dt.datetime(2026, 11, 22, 6),
                dt.datetime(2026, 11, 22, 12),
                dt.datetime(2026, 11, 22, 18),
                dt.datetime(2026, 11, 23, 0),
            ),
        ),
        (
            "start: 2026-11-22T00:00:00\n  every: 30m\n  points: 2",
            (dt.datetime(2026, 11, 22, 0, 30), dt.datetime(2026, 11, 22, 1, 0)),
        ),
        (
            "start: 2026-11-22T00:00:00\n  every: 90s\n  points: 2",
            (dt.datetime(2026, 11, 22, 0, 1, 30), dt.datetime(2026, 11, 22, 0, 3, 0)),
        ),
        (
            "start: 2026-11-22T00:00:00\n  every: 1h30m\n  points: 2",
            (dt.datetime(2026, 11, 22, 1, 30), dt.datetime(2026, 11, 22, 3, 0)),
        ),
        (
            "start: 2026-11-22\n  every: 1d\n  points: 3",
            (dt.date(2026, 11, 23), dt.date(2026, 11, 24), dt.date(2026, 11, 25)),
        ),
        ("start: 0\n  every: 5\n  points: 3", (5, 10, 15)),
    ],
)
def test_time_points(tmp_path: Path, schedule: str, values: tuple[object, ...]) -> None:
    spec = load(tmp_path, SPEC.replace("at: [1, 2, 3]", schedule).replace("preset: deadline", "preset: total"))
    points = spec.time_points()
    assert points.values == values
    assert points.deliver == (len(values),)


@pytest.mark.parametrize(("deliver", "indices"), [("last", (4,)), ("every", (1, 2, 3, 4)), ("[3, 1]", (1, 3))])
def test_deliver(tmp_path: Path, deliver: str, indices: tuple[int, ...]) -> None:
    spec = load(tmp_path, SPEC.replace("at: [1, 2, 3]", f"at: [1, 2, 3, 4]\n  deliver: {deliver}"))
    assert spec.time_points().deliver == indices


@pytest.mark.parametrize(
    ("objective", "weights"),
    [
        ("preset: deadline", (0.001, 0.001, 1.0)),
        ("preset: total", (1.0, 1.0, 1.0)),
        ("weights: [0.1, 0.1, 1]", (0.1, 0.1, 1.0)),
        ("weights: [0, 2, 0]", (0.0, 2.0, 0.0)),
    ],
)
def test_weights(tmp_path: Path, objective: str, weights: tuple[float, ...]) -> None:
    assert load(tmp_path, SPEC.replace("preset: deadline", objective)).weights() == weights


def test_objective_margin(tmp_path: Path) -> None:
    assert load(tmp_path, SPEC).margin is None  # the planner's default
    assert load(tmp_path, SPEC.replace("preset: deadline", "preset: deadline\n  margin: 0.25")).margin == 0.25


def test_objective_defaults_to_deadline(tmp_path: Path) -> None:
    spec = load(tmp_path, SPEC.replace("objective:\n  preset: deadline\n", "").replace("[1, 2, 3]", "[1, 2]"))
    assert spec.weights() == (0.001, 1.0)


@pytest.mark.parametrize(
    "raw,size",
    [("10GB", 10e9), ("512 MB", 512e6), ("1.5TB", 1.5e12), ("100kB", 1e5), ("2GiB", 2 * 2**30), ("64 KiB", 65536),
     ("0", 0.0), ("123", 123.0), ("7 b", 7.0)],
)
def test_state_budget(tmp_path: Path, raw: str, size: float) -> None:
    spec = load(tmp_path, SPEC + f"state_budget: {raw}\n")
    assert spec.state_budget == size
    assert spec.budget_key == f"{tmp_path / 'spec.yaml'}, line 13: state_budget"


def test_no_state_budget(tmp_path: Path) -> None:
    spec = load(tmp_path, SPEC)
    assert spec.state_budget is None and spec.budget_key is None


def test_deadline_with_one_time_point(tmp_path: Path) -> None:
    assert load(tmp_path, SPEC.replace("[1, 2, 3]", "[7]")).weights() == (1.0,)


def test_expected_arrival(tmp_path: Path) -> None:
    text = SPEC.replace(SALES_ARRIVAL, "    arrival: {column: a}\n    expected: [0.1, 0.1, 0.3]\n")
    text = text.replace(
        "schedule:",
        "  returns:\n    path: r\n    arrival: {column: a}\n    changes: {op_column: op}\n"
        "    expected: {rows: [10, 0, 30]}\n"
        "  refunds:\n    path: f\n    arrival: {column: a}\nschedule:",
    )
    model = load(tmp_path, text).expected_arrival()
    assert model.sources == ("returns", "sales")  # refunds declares nothing: it is measured
    # 0.1 + 0.1 + 0.3 = 0.5 of sales arrive in the cycle: 1/5, 1/5 and 3/5 of it per interval.
    assert model.fraction("sales", 0, 1) == pytest.approx(0.2)
    assert model.fraction("sales", 1, 3) == pytest.approx(0.8)
    assert model.insert_only("sales")
    # 40 returns: 10, 0 and 30; with change data, their deletions are unknown.
    assert model.fraction("returns", 0, 2) == 0.25
    assert model.fraction("returns", 2, 3) == 0.75
    assert not model.insert_only("returns")



@pytest.mark.parametrize(
    ("old", "new", "line", "key", "message"),
    [
        ("format: parquet", "format: 'par quet'", 7, "sources.sales.format", "is not the name of a Spark reader"),
        ("format: parquet", "format: parquet\n    table: shop.sales", 5, "sources.sales", "either path"),
        ("format: parquet", "formt: parquet", 7, "sources.sales.formt", "unknown key"),
        ("name: gross_by_category", "name: [1]", 1, "name", "must be a string"),
        ("name: gross_by_category", "name: ''", 1, "name", "must not be empty"),
        ("name: gross_by_category", "name: q\nqueries: 2", 2, "queries", "unknown key"),
        ("name: gross_by_category", "name: q\nquery_file: q.sql", 2, "query_file",
         "either 'query' or 'query_file', not both"),
        ("name: gross_by_category", "name: q\ndialect: klingon", 2, "dialect", "unknown SQL dialect 'klingon'"),
        (SALES_ARRIVAL, "", 5, "sources.sales.arrival", "required key is missing"),
        (SALES_ARRIVAL, "    arrival: arrived_at\n", 8, "sources.sales.arrival", "must be a mapping"),
        (SALES_ARRIVAL, SALES_ARRIVAL + "    options: {a: [1]}\n", 9, "sources.sales.options", "option 'a' must be"),
        (SALES_ARRIVAL, SALES_ARRIVAL + "    changes: {op_column: op, delete_values: []}\n", 9,
         "sources.sales.changes.delete_values", "needs at least one value"),
        (SALES_ARRIVAL, SALES_ARRIVAL + "    schema: {x: int}\n", 8, "sources.sales.arrival.column",
         "column 'arrived_at' is not in the source's schema"),
        (SALES_ARRIVAL, SALES_ARRIVAL + "    expected: [0.5, 0.4, 0.3]\n", 9, "sources.sales.expected",
         "fractions sum to 1.2, more than 1"),
        (SALES_ARRIVAL, SALES_ARRIVAL + "    expected: [0.5, 0.4]\n", 9, "sources.sales.expected",
         "2 values for 3 time points"),
        (SALES_ARRIVAL, SALES_ARRIVAL + "    expected: [0.5, -0.1, 0.1]\n", 9, "sources.sales.expected",
         "must not be negative"),
        (SALES_ARRIVAL, SALES_ARRIVAL + "    expected: {rows: [1, 2, 3, 4]}\n", 9, "sources.sales.expected",
         "4 values for 3 time points"),
        (SALES_ARRIVAL, SALES_ARRIVAL + "    expected: {rows: 5}\n", 9, "sources.sales.expected",
         "rows must be a list of integers"),
        ("at: [1, 2, 3]", "at: [1, 3, 3]", 10, "schedule.at[2]", "time points must increase: 3 is not after 3"),
        ("at: [1, 2, 3]", "at:\n    - 2026-01-02\n    - 2026-01-01", 12, "schedule.at[1]",
         "time points must increase: 2026-01-01 is not after 2026-01-02"),
        ("at: [1, 2, 3]", "at: [1, 2026-01-01]", 10, "schedule.at", "time points mix date and number values"),
        ("at: [1, 2, 3]", "at: [1, tomorrow]", 10, "schedule.at[1]", "'tomorrow' is not a time point"),
        ("at: [1, 2, 3]", "at: []", 10, "schedule.at", "needs at least one time point"),
        ("at: [1, 2, 3]", "at: [1]\n  start: 0", 10, "schedule.at",
         "give either 'at' or 'start', 'every' and 'points'"),
        ("at: [1, 2, 3]", "at: [1, 2, 3]\n  deliver: [2, 2]", 11, "schedule.deliver", "lists an index twice"),
        ("at: [1, 2, 3]", "start: 0\n  points: 2", 9, "schedule", "(missing: every)"),
        ("at: [1, 2, 3]", "start: 2026-01-01T00:00:00\n  every: 6x\n  points: 2", 11, "schedule.every",
         "'6x' is not a duration"),
        ("at: [1, 2, 3]", "start: 2026-01-01T00:00:00\n  every: 6\n  points: 2", 11, "schedule.every",
         "timestamps step by a duration"),
        ("at: [1, 2, 3]", "start: 2026-01-01\n  every: 6h\n  points: 2", 11, "schedule.every",
         "dates step by whole days"),
        ("at: [1, 2, 3]", "start: 0\n  every: 0\n  points: 2", 11, "schedule.every", "must be positive"),
        ("at: [1, 2, 3]", "start: 0\n  every: 1\n  points: 0", 12, "schedule.points", "must be at least 1"),
        ("at: [1, 2, 3]", "at: [1, 2, 3]\n  deliver: [4]", 11, "schedule.deliver", "index 4 is not a time point"),
        ("at: [1, 2, 3]", "at: [1, 2, 3]\n  deliver: first", 11, "schedule.deliver", "must be last, every, or a list"),
        ("preset: deadline", "preset: fastest", 12, "objective.preset", "must be one of deadline, total"),
        ("preset: deadline", "weights: [1, 2]", 12, "objective.weights", "2 weights for 3 time points"),
        ("preset: deadline", "weights: [1, -2, 1]", 12, "objective.weights[1]", "must be at least 0"),
        ("preset: deadline", "weights: [1, yes, 1]", 12, "objective.weights[1]", "True is not a number"),
        ("preset: deadline", "weights: [0, 0, 0]", 12, "objective.weights", "at least one weight must be positive"),
        ("preset: deadline", "preset: total\n  weights: [1, 1, 1]", 11, "objective", "either 'preset' or 'weights'"),
        ("preset: deadline", "preset: deadline\n  margin: 1.5", 13, "objective.margin", "less than 1"),
        ("preset: deadline", "preset: deadline\n  margin: -0.1", 13, "objective.margin", "at least 0"),
        ("preset: deadline", "preset: deadline\nstate_budget: 10 parsecs", 13, "state_budget", "'10 parsecs' is not a size"),
        ("preset: deadline", "preset: deadline\nstate_budget: -1", 13, "state_budget", "must not be negative"),
        ("preset: deadline", "preset: deadline\nstate_budget: [10GB]", 13, "state_budget", "is not a size"),
        ("preset: deadline", "preset: deadline\ncost: {stages: 1e9}", 13, "cost.stages",
         "unknown cost constant 'stages'"),
        ("preset: deadline", "preset: deadline\ncost:\n  network: 300\n  stage: -1", 15, "cost.stage",
         "must be at least 0"),
        ("preset: deadline", "preset: deadline\ncost: {executors: 2.5}", 13, "cost.executors",
         "must be a whole number of at least 1"),
        ("preset: deadline", "preset: deadline\ncost: {stage: fast}", 13, "cost.stage", "is not a number"),
    ],
)
def test_bad_specs(tmp_path: Path, old: str, new: str, line: int, key: str, message: str) -> None:
    assert old in SPEC
    path = write(tmp_path, SPEC.replace(old, new))
    with pytest.raises(SpecError) as error:
        load_spec(path)
    text = str(error.value)
    assert text.startswith(f"{path}, line {line}: {key}: "), text
    assert message in text
    assert "\n" not in text
    assert "pydantic" not in text and "Input should" not in text


def test_cost_constants(tmp_path: Path) -> None:
    assert load(tmp_path, SPEC).cost_constants == CostConstants()
    spec = load(tmp_path, SPEC + "cost: {stage: 1e9, executors: 8}\n")
    assert spec.cost_constants == dataclasses.replace(CostConstants(), stage=1e9, executors=8)
    assert isinstance(spec.cost_constants.executors, int)


def test_two_problems_get_a_line_each(tmp_path: Path) -> None:
    path = write(tmp_path, SPEC.replace("format: parquet", "format: 'par quet'\n    extra: 1"))
    with pytest.raises(SpecError) as error:
        load_spec(path)
    assert str(error.value).splitlines() == [
        f"{path}, line 7: sources.sales.format: 'par quet' is not the name of a Spark reader (parquet, csv, json, "
        "orc, or one a jar provides)",
        f"{path}, line 8: sources.sales.extra: unknown key",
    ]


def test_neither_query_nor_query_file(tmp_path: Path) -> None:
    path = write(tmp_path, SPEC.replace(INLINE_QUERY, ""))
    with pytest.raises(SpecError, match=r"spec\.yaml: a spec needs 'query' \(the SQL text\) or 'query_file'$"):
        load_spec(path)


def test_missing_query_file(tmp_path: Path) -> None:
    path = write(tmp_path, SPEC.replace(INLINE_QUERY, "query_file: nope.sql\n"))
    with pytest.raises(SpecError) as error:
        load_spec(path)
    assert str(error.value) == f"{path}, line 2: query_file: file not found: {tmp_path.resolve() / 'nope.sql'}"


def test_missing_spec_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"nope\.yaml: file not found$"):
        load_spec(tmp_path / "nope.yaml")


def test_bad_yaml(tmp_path: Path) -> None:
    path = write(tmp_path, SPEC.replace("at: [1, 2, 3]", "at: [1, 2, 3"))
    with pytest.raises(SpecError) as error:
        load_spec(path)
    # The parser notices the unclosed list where the next key starts, on line 11.
    assert str(error.value).startswith(f"{path}, line 11: invalid YAML: ")
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("text", ["", "- a list\n- of things\n", "just text\n"])
def test_a_spec_is_a_mapping(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(SpecError, match="a spec is a mapping"):
        load_spec(path)


def test_no_sources(tmp_path: Path) -> None:
    text = SPEC.replace(SALES, "  {}\n")
    path = write(tmp_path, text)
    with pytest.raises(SpecError, match=r"line 4: sources: a spec needs at least one source"):
        load_spec(path)


def test_sources_differing_only_in_case(tmp_path: Path) -> None:
    text = SPEC.replace("schedule:", "  SALES:\n    path: x\n    arrival: {column: a}\nschedule:")
    path = write(tmp_path, text)
    with pytest.raises(SpecError, match=r"line 9: sources\.SALES: source 'sales' is already declared"):
        load_spec(path)


@pytest.mark.parametrize(
    ("old", "new", "line", "key", "message"),
    [
        ("path: data/sales", "path: ../elsewhere", 6, "sources.sales.path", "'../elsewhere' is outside the spec's folder"),
        ("path: data/sales", "path: data/../../elsewhere", 6, "sources.sales.path", "is outside the spec's folder"),
        ("path: data/sales", "path: file:../elsewhere", 6, "sources.sales.path", "is outside the spec's folder"),
        ("preset: deadline", "preset: deadline\noutput:\n  path: ../out", 14, "output.path",
         "'../out' is outside the spec's folder"),
        ("preset: deadline", "preset: deadline\noutput: {path: .}", 13, "output.path",
         "the output folder cannot be the spec's own folder"),
        (INLINE_QUERY, "query_file: ../query.sql\n", 2, "query_file", "is outside the spec's folder"),
    ],
)
def test_paths_outside_the_spec_folder(tmp_path: Path, old: str, new: str, line: int, key: str, message: str) -> None:
    folder = tmp_path / "job"
    write(tmp_path, "SELECT 1 AS one\n", "query.sql")
    path = write(folder, SPEC.replace(old, new))
    with pytest.raises(SpecError) as error:
        load_spec(path)
    text = str(error.value)
    assert text.startswith(f"{path}, line {line}: {key}: "), text
    assert message in text and "\n" not in text


def test_paths_inside_the_spec_folder_and_uris_are_accepted(tmp_path: Path) -> None:
    text = SPEC.replace("path: data/sales", "path: data/../sales").replace(
        "preset: deadline", "preset: deadline\noutput: {path: s3a://bucket/out}")
    spec = load(tmp_path / "job", text)
    assert spec.location("sales") == str((tmp_path / "job" / "sales").resolve())
    assert spec.model.output is not None and spec.model.output.path == "s3a://bucket/out"


ITEMS = "  items:\n    path: data/items\n    arrival: {column: arrived_at, with: {sales: item_order}}\n"


def test_keys_and_rows_landing_with_them(tmp_path: Path) -> None:
    text = SPEC.replace(SALES_ARRIVAL, SALES_ARRIVAL + "    key: Order_ID\n").replace("schedule:", ITEMS + "schedule:")
    spec = load(tmp_path, text + "integrity: trusted\n")
    assert spec.key_domains() == {"sales": {"order_id": "sales.order_id"}, "items": {"item_order": "sales.order_id"}}
    assert spec.sources["items"].arrival.with_ == {"sales": "item_order"}
    assert spec.model.integrity == "trusted"
    assert load(tmp_path, text).model.integrity == "enforced"  # checked unless said otherwise


@pytest.mark.parametrize(
    ("items", "sales", "key", "message"),
    [
        ("{column: arrived_at, with: {refunds: item_order}}", "    key: order_id\n", "sources.items.arrival.with.refunds",
         "no source 'refunds'"),
        ("{column: arrived_at, with: {sales: item_order}}", "", "sources.items.arrival.with.sales",
         "source 'sales' declares no 'key'"),
        ("{column: arrived_at, with: {items: item_order}}\n    key: id", "    key: order_id\n",
         "sources.items.arrival.with.items", "cannot land with itself"),
        ("{column: arrived_at, with: {sales: item_order}}\n    changes: {op_column: op}", "    key: order_id\n",
         "sources.items.arrival.with.sales", "for sources that only insert"),
        ("{column: arrived_at}", "    key: order_id\n    changes: {op_column: op}\n", "sources.sales.key",
         "keys are for sources that only insert"),
        ("{column: arrived_at, with: {sales: item_order}}\n    schema: {arrived_at: int, x: int}", "    key: order_id\n",
         "sources.items.arrival.with.sales", "column 'item_order' is not in the source's schema"),
        ("{column: arrived_at, with: sales}", "    key: order_id\n", "sources.items.arrival.with", "must be a mapping"),
        ("{column: arrived_at, within: 12h}", "    key: order_id\n", "sources.items.arrival.within", "give 'with' too"),
        ("{column: arrived_at, with: {sales: item_order}, within: -2h}", "    key: order_id\n",
         "sources.items.arrival.within", "is not a duration"),
        ("{column: arrived_at, with: {sales: item_order}, within: 0}", "    key: order_id\n",
         "sources.items.arrival.within", "must be positive"),
        ("{column: arrived_at, with: {sales: item_order}, within: 6h}", "    key: order_id\n",
         "sources.items.arrival.within", "over numbers, a number"),
    ],
)
def test_bad_keys(tmp_path: Path, items: str, sales: str, key: str, message: str) -> None:
    text = SPEC.replace(SALES_ARRIVAL, SALES_ARRIVAL + sales).replace(
        "schedule:", f"  items:\n    path: data/items\n    arrival: {items}\nschedule:")
    path = write(tmp_path, text)
    with pytest.raises(SpecError) as error:
        load_spec(path)
    text = str(error.value)
    assert text.startswith(f"{path}, line ") and f": {key}: " in text, text
    assert message in text and "\n" not in text


def test_rows_landing_within_a_lag_of_their_key(tmp_path: Path) -> None:
    """``arrival.within``: the key rule carries the lag of the referencing column, and the
    planner's bounds say how far back the keys of each interval's rows reach: on 6-hour time
    points, a 12-hour lag reaches two intervals further back than the row's own (but never
    before the cycle's first)."""
    from tempura.scheduler.planning import arrival_bounds

    text = SPEC.replace(SALES_ARRIVAL, SALES_ARRIVAL + "    key: order_id\n").replace(
        "schedule:", "  items:\n    path: data/items\n    arrival: {column: arrived_at, with: {sales: item_order}, within: 12h}\n"
        "schedule:").replace("  at: [1, 2, 3]\n", '  start: "2026-11-22T00:00:00"\n  every: 6h\n  points: 4\n')
    spec = load(tmp_path, text)
    (rule,) = spec.key_rules()
    assert rule.within == ((("items", "item_order"), dt.timedelta(hours=12)),)
    assert rule.lag("items", "item_order") == dt.timedelta(hours=12) and rule.lag("sales", "order_id") is None
    bounds = arrival_bounds(spec)
    assert bounds.reach == {"items": {"item_order": (0, 0, 0, 1)}}
    assert bounds.span("items", "item_order", 3, 4) == Interval(1.0, 4.0, low_open=True)
    assert bounds.span("sales", "order_id", 3, 4) == Interval(3.0, 4.0, low_open=True)


def test_no_keys_under_a_range_window(tmp_path: Path) -> None:
    text = SPEC.replace(SALES_ARRIVAL, SALES_ARRIVAL + "    key: order_id\n").replace(
        "  at: [1, 2, 3]\n", "  start: 0\n  points: 3\n  range: {length: 2, slide: 1}\n")
    with pytest.raises(SpecError, match=r"line 9: sources\.sales\.key: a range query's window"):
        load(tmp_path, text)
