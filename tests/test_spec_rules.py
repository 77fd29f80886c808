"""The spec's rules beyond each key's shape: a key given twice, the cap on time points, cycles
found by arithmetic, the change-data and run keys, the one rule for paths, paths that must
exist, and the closest key suggested for a typo. No Spark: specs are loaded, not run."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from tempura.catalog import Catalog, CatalogError
from tempura.scheduler import SpecError, load_spec
from tempura.scheduler.spec import schedule as schedule_module
from tempura.scheduler.spec import MAX_TIME_POINTS, cycle_index_at, cycle_values

from test_spec import SPEC, load, write

ROOT = Path(__file__).resolve().parent.parent


def error_of(path: Path) -> str:
    with pytest.raises(SpecError) as error:
        load_spec(path)
    text = str(error.value)
    assert "\n" not in text and "Traceback" not in text, text
    return text


# ---------------------------------------------------------------------------------------------
# A key given twice.


def test_a_key_given_twice_names_both_lines(tmp_path: Path) -> None:
    path = write(tmp_path, SPEC.replace("    format: parquet\n", "    format: parquet\n    path: data/other\n"))
    assert error_of(path) == f"{path}, line 8: sources.sales.path: given twice (first at line 6)"


def test_a_key_given_twice_in_one_flow_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, SPEC.replace("{column: arrived_at}", "{column: arrived_at, column: other}"))
    assert error_of(path) == f"{path}, line 8: sources.sales.arrival.column: given twice (first at line 8)"


def test_a_top_level_key_given_twice(tmp_path: Path) -> None:
    path = write(tmp_path, SPEC + "name: another\n")
    assert error_of(path) == f"{path}, line 13: name: given twice (first at line 1)"


def test_the_earliest_second_occurrence_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, SPEC.replace("    format: parquet\n", "    format: csv\n    format: orc\n") + "name: x\n")
    assert error_of(path).startswith(f"{path}, line 8: sources.sales.format: given twice (first at line 7)")


def test_the_same_key_in_two_mappings_is_fine(tmp_path: Path) -> None:
    text = SPEC.replace("schedule:", "  returns:\n    path: data/returns\n    arrival: {column: arrived_at}\nschedule:")
    assert set(load(tmp_path, text).sources) == {"sales", "returns"}


def test_a_catalog_key_given_twice_in_the_catalogs_form(tmp_path: Path) -> None:
    path = write(tmp_path, "tables:\n  t:\n    path: a\n    path: b\n", "catalog.yaml")
    with pytest.raises(CatalogError) as error:
        Catalog.load(path)
    assert str(error.value) == f"{path}:4: tables.t.path: given twice (first at line 3)"


# ---------------------------------------------------------------------------------------------
# The cap on time points, and cycles computed rather than listed.


def test_too_many_points(tmp_path: Path) -> None:
    path = write(tmp_path, SPEC.replace("at: [1, 2, 3]", f"start: 0\n  every: 1\n  points: {MAX_TIME_POINTS + 1}"))
    text = error_of(path)
    assert text.startswith(f"{path}, line 12: schedule.points: 10,001 time points in a cycle, more than 10,000"), text
    assert "allow_many_points: true" in text


def test_too_many_at_values(tmp_path: Path) -> None:
    values = ", ".join(str(i) for i in range(1, MAX_TIME_POINTS + 2))
    path = write(tmp_path, SPEC.replace("at: [1, 2, 3]", f"at: [{values}]"))
    assert error_of(path).startswith(f"{path}, line 10: schedule.at: 10,001 time points in a cycle")


def test_exactly_the_cap_is_fine(tmp_path: Path) -> None:
    spec = load(tmp_path, SPEC.replace("at: [1, 2, 3]", f"start: 0\n  every: 1\n  points: {MAX_TIME_POINTS}"))
    assert spec.time_points().k == MAX_TIME_POINTS


def test_many_points_when_the_spec_says_so(tmp_path: Path) -> None:
    schedule = f"start: 0\n  every: 2\n  points: {MAX_TIME_POINTS + 1}\n  allow_many_points: true"
    spec = load(tmp_path, SPEC.replace("at: [1, 2, 3]", schedule))
    assert spec.time_points().k == 10_001
    assert spec.time_points().values[-1] == 20_002


def test_allow_many_points_is_a_boolean(tmp_path: Path) -> None:
    path = write(tmp_path, SPEC.replace("at: [1, 2, 3]", "at: [1, 2, 3]\n  allow_many_points: 'yes'"))
    assert error_of(path) == f"{path}, line 11: schedule.allow_many_points: must be true or false"


def test_a_late_cycle_is_computed_without_the_earlier_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = load(tmp_path, SPEC.replace("at: [1, 2, 3]", "start: 100\n  every: 5\n  points: 4"))
    asked: list[int] = []
    generate = schedule_module.generate_time_points

    def counting(*args: object, **kwargs: object) -> object:
        result = generate(*args, **kwargs)  # type: ignore[arg-type]
        asked.append(len(result))
        return result

    monkeypatch.setattr(schedule_module, "generate_time_points", counting)
    cycle = spec.cycle(1_000_000)
    assert cycle is not None
    # Cycle n: start + (4n + i) * 5 for i = 1..4; its origin start + 4n * 5.
    assert cycle.origin == 100 + 20_000_000
    assert cycle.time_points.values == (20_000_105, 20_000_110, 20_000_115, 20_000_120)
    assert max(asked) <= 4


def test_a_cycle_past_the_calendar_does_not_exist(tmp_path: Path) -> None:
    spec = load(tmp_path, SPEC.replace("at: [1, 2, 3]", "start: 2026-11-22T00:00:00\n  every: 6h\n  points: 4"))
    assert spec.cycle(3_000_000) is None
    daily = load(tmp_path / "daily", SPEC.replace("at: [1, 2, 3]", "start: 2026-11-22\n  at: ['06:00', '18:00']"))
    assert daily.cycle(3_000_000) is None


def test_a_first_cycle_past_the_calendar_is_a_spec_error(tmp_path: Path) -> None:
    path = write(tmp_path, SPEC.replace("at: [1, 2, 3]", "start: 9999-12-30\n  every: 1d\n  points: 3"))
    text = error_of(path)
    assert text.startswith(f"{path}, line 11: schedule.every: the time points run past the largest date"), text


SINCE_1991 = "start: 1991-03-01T00:00:00\n  every: 6h\n  points: 4"


def test_the_cycle_at_a_moment_of_a_schedule_started_in_1991(tmp_path: Path) -> None:
    spec = load(tmp_path, SPEC.replace("at: [1, 2, 3]", SINCE_1991))
    # Daily cycles of four 6-hour time points: cycle n is day n after 1991-03-01.
    days = (dt.date(2026, 11, 22) - dt.date(1991, 3, 1)).days
    assert days > 13_000
    for moment, expected in [
        (dt.datetime(2026, 11, 22, 13, 0), days),
        (dt.datetime(2026, 11, 22, 6, 0), days),  # the cycle's first time point
        (dt.datetime(2026, 11, 22, 5, 59), days - 1),  # before it: the previous cycle's last
        (dt.datetime(2026, 11, 23, 0, 0), days),  # the cycle's last time point, at midnight
        (dt.date(2026, 11, 22), days - 1),  # a date is its midnight
    ]:
        assert spec.cycle_index_at(moment) == expected, moment
    cycle = spec.cycle(days)
    assert cycle is not None and cycle.origin == dt.datetime(2026, 11, 22)
    assert cycle.time_points.values[0] <= dt.datetime(2026, 11, 22, 13) <= cycle.time_points.values[-1]  # type: ignore[operator]


def test_no_cycle_before_the_first_time_point(tmp_path: Path) -> None:
    spec = load(tmp_path, SPEC.replace("at: [1, 2, 3]", SINCE_1991))
    assert spec.cycle_index_at(dt.datetime(1991, 3, 1, 5, 59)) is None
    assert spec.cycle_index_at(dt.datetime(1991, 3, 1, 6)) == 0
    assert spec.cycle_index_at(dt.datetime(1980, 1, 1)) is None


def test_the_cycle_at_a_moment_of_a_daily_schedule_started_in_1991(tmp_path: Path) -> None:
    spec = load(tmp_path, SPEC.replace("at: [1, 2, 3]", "start: 1991-03-01\n  at: ['06:00', '12:00', '24:00']"))
    days = (dt.date(2026, 11, 22) - dt.date(1991, 3, 1)).days
    assert spec.cycle_index_at(dt.datetime(2026, 11, 22, 7)) == days
    assert spec.cycle_index_at(dt.datetime(2026, 11, 23, 0)) == days  # 24:00 is the day's last point
    assert spec.cycle_index_at(dt.datetime(2026, 11, 22, 5)) == days - 1
    assert spec.cycle_index_at(dt.datetime(1991, 3, 1, 5)) is None
    cycle = spec.cycle(days)
    assert cycle is not None and cycle.time_points.values[0] == dt.datetime(2026, 11, 22, 6)


@pytest.mark.parametrize(
    "schedule",
    [
        "start: 0\n  every: 5\n  points: 3",
        "start: -7\n  every: 3\n  points: 1",
        "start: 2026-01-01\n  every: 2d\n  points: 3",
        "start: 2026-01-01T00:00:00\n  every: 7h\n  points: 2",
        "start: 2026-01-01T00:00:00\n  at: ['00:30', '23:00']",
    ],
)
def test_cycle_index_at_agrees_with_the_listed_cycles(tmp_path: Path, schedule: str) -> None:
    """Cross-check against the cycles listed one by one: the last whose first point <= moment."""
    spec = load(tmp_path, SPEC.replace("at: [1, 2, 3]", schedule).replace("preset: deadline", "preset: total"))
    cycles = [spec.cycle(n) for n in range(40)]
    firsts = [c.time_points.values[0] for c in cycles if c is not None]
    start = spec.model.schedule.start
    assert start is not None
    if isinstance(start, int):
        moments: list[object] = list(range(start - 3, start + 150))
    elif isinstance(start, dt.datetime):
        moments = [start + dt.timedelta(minutes=90 * i) for i in range(-3, 300)]
    else:
        assert isinstance(start, dt.date)
        moments = [start + dt.timedelta(days=i) for i in range(-3, 150)]
    for moment in moments:
        if not moment < firsts[-1]:  # type: ignore[operator]
            continue  # later cycles are not listed here
        listed = [n for n, first in enumerate(firsts) if first <= moment]  # type: ignore[operator]
        assert spec.cycle_index_at(moment) == (listed[-1] if listed else None), moment  # type: ignore[arg-type]


def test_cycle_index_at_explicit_values(tmp_path: Path) -> None:
    schedule = load(tmp_path, SPEC).model.schedule
    assert cycle_index_at(schedule, 0) is None
    assert cycle_index_at(schedule, 1) == 0
    assert cycle_index_at(schedule, 1000) == 0
    assert cycle_values(schedule, 1) is None


def test_cycle_index_at_a_moment_of_another_kind(tmp_path: Path) -> None:
    schedule = load(tmp_path, SPEC).model.schedule
    with pytest.raises(ValueError, match="is not a time point of this schedule"):
        cycle_index_at(schedule, dt.date(2026, 1, 1))


# ---------------------------------------------------------------------------------------------
# New keys: max_catch_up, allow_empty, insert_values, deletes.


def test_run_keys_default(tmp_path: Path) -> None:
    spec = load(tmp_path, SPEC)
    assert spec.max_catch_up == 1
    assert spec.allow_empty is False


def test_run_keys_given(tmp_path: Path) -> None:
    spec = load(tmp_path, SPEC + "max_catch_up: 7\nallow_empty: true\n")
    assert spec.max_catch_up == 7
    assert spec.allow_empty is True


CHANGES = "    arrival: {column: arrived_at}\n"


def test_change_keys_default(tmp_path: Path) -> None:
    spec = load(tmp_path, SPEC.replace(CHANGES, CHANGES + "    changes: {op_column: _op}\n"))
    changes = spec.sources["sales"].changes
    assert changes is not None
    assert (changes.insert_values, changes.delete_values, changes.deletes) == (("I",), ("D",), "strict")


def test_change_keys_given(tmp_path: Path) -> None:
    text = SPEC.replace(CHANGES, CHANGES + "    changes:\n      op_column: op\n      insert_values: [c, u]\n"
                        "      delete_values: [d]\n      deletes: lenient\n")
    changes = load(tmp_path, text).sources["sales"].changes
    assert changes is not None
    assert (changes.insert_values, changes.delete_values, changes.deletes) == (("c", "u"), ("d",), "lenient")


@pytest.mark.parametrize(
    ("old", "new", "line", "key", "message"),
    [
        ("preset: deadline", "preset: deadline\nmax_catch_up: 0", 13, "max_catch_up", "must be at least 1"),
        ("preset: deadline", "preset: deadline\nmax_catch_up: '2'", 13, "max_catch_up", "must be an integer"),
        ("preset: deadline", "preset: deadline\nmax_catch_up: 1.5", 13, "max_catch_up", "must be an integer"),
        ("preset: deadline", "preset: deadline\nallow_empty: 'no'", 13, "allow_empty", "must be true or false"),
        ("preset: deadline", "preset: deadline\nallow_empty: 1", 13, "allow_empty", "must be true or false"),
        (CHANGES, CHANGES + "    changes: {op_column: op, insert_values: [I, D]}\n", 9,
         "sources.sales.changes.insert_values", "'D' cannot mark both an insertion and a deletion"),
        (CHANGES, CHANGES + "    changes: {op_column: op, delete_values: [D, I]}\n", 9,
         "sources.sales.changes.delete_values", "'I' cannot mark both an insertion and a deletion"),
        (CHANGES, CHANGES + "    changes: {op_column: op, insert_values: []}\n", 9,
         "sources.sales.changes.insert_values", "needs at least one value"),
        (CHANGES, CHANGES + "    changes: {op_column: op, deletes: loose}\n", 9,
         "sources.sales.changes.deletes", "must be one of strict, lenient"),
    ],
)
def test_bad_new_keys(tmp_path: Path, old: str, new: str, line: int, key: str, message: str) -> None:
    assert old in SPEC
    path = write(tmp_path, SPEC.replace(old, new))
    text = error_of(path)
    assert text.startswith(f"{path}, line {line}: {key}: "), text
    assert message in text


def test_every_scenario_spec_loads() -> None:
    specs = sorted((ROOT / "scenarios").glob("*/spec.yaml"))
    assert len(specs) >= 10
    for path in specs:
        spec = load_spec(path)
        for source in spec.sources.values():
            if source.changes is not None:
                assert set(source.changes.insert_values).isdisjoint(source.changes.delete_values)


# ---------------------------------------------------------------------------------------------
# One rule for paths.


def with_output(output: str, sales: str = "data/sales") -> str:
    return SPEC.replace("path: data/sales", f"path: {sales}").replace(
        "preset: deadline", f"preset: deadline\noutput: {{path: '{output}'}}")


def test_absolute_paths_and_file_uris_are_taken_as_they_are(tmp_path: Path) -> None:
    elsewhere = (tmp_path / "elsewhere").resolve()
    text = SPEC.replace("path: data/sales", f"path: {elsewhere}/sales").replace(
        "schedule:", f"  returns:\n    path: file://{elsewhere}/returns\n    arrival: {{column: a}}\nschedule:")
    spec = load(tmp_path / "job", text)
    assert spec.location("sales") == str(elsewhere / "sales")
    assert spec.location("returns") == f"file://{elsewhere}/returns"
    assert spec.catalog().table("returns").path == f"file://{elsewhere}/returns"


def test_a_relative_file_uri_is_a_relative_path(tmp_path: Path) -> None:
    spec = load(tmp_path, SPEC.replace("path: data/sales", "path: file:data/sales"))
    assert spec.location("sales") == str(tmp_path.resolve() / "data" / "sales")


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("out", "{folder}/out"),
        ("results/../out", "{folder}/out"),
        ("file:out", "{folder}/out"),
        ("{other}/out", "{other}/out"),
        ("file://{other}/out", "file://{other}/out"),
        ("file:{other}/out", "file:{other}/out"),
        ("s3a://bucket/out", "s3a://bucket/out"),
    ],
)
def test_output_location(tmp_path: Path, output: str, expected: str) -> None:
    folder, other = (tmp_path / "job").resolve(), (tmp_path / "other").resolve()
    spec = load(folder, with_output(output.format(other=other)))
    assert spec.output_location() == expected.format(folder=folder, other=other)


def test_no_output_location_without_output(tmp_path: Path) -> None:
    assert load(tmp_path, SPEC).output_location() is None


@pytest.mark.parametrize(
    ("output", "sales", "message"),
    [
        ("data/sales", "data/sales", "is the folder of source 'sales': a delivery would replace its data"),
        ("data/sales/", "data/sales", "is the folder of source 'sales'"),
        ("data/sales/out", "data/sales", "is inside the folder of source 'sales' ('data/sales')"),
        ("data", "data/sales", "contains the folder of source 'sales' ('data/sales')"),
        ("file://{folder}/data", "data/sales", "contains the folder of source 'sales'"),
        ("file:{folder}/data/sales", "data/sales", "is the folder of source 'sales'"),
        ("{folder}/data/sales/x", "file://{folder}/data/sales", "is inside the folder of source 'sales'"),
        ("{other}/out", "{other}", "is inside the folder of source 'sales'"),
        ("{other}", "{other}/sales", "contains the folder of source 'sales'"),
        ("s3a://bucket/sales/out", "s3a://bucket/sales", "is inside the folder of source 'sales'"),
        ("s3a://bucket", "s3a://bucket/sales", "contains the folder of source 'sales'"),
        ("s3a://bucket/sales", "s3a://bucket/sales/", "is the folder of source 'sales'"),
        (".", "data/sales", "the output folder cannot be the spec's own folder"),
        ("file:{folder}", "data/sales", "the output folder cannot be the spec's own folder"),
        ("{parent}", "s3a://b/sales", "contains the spec's folder"),
    ],
)
def test_outputs_that_would_overwrite_inputs(tmp_path: Path, output: str, sales: str, message: str) -> None:
    folder, other = (tmp_path / "job").resolve(), (tmp_path / "other").resolve()
    names = {"folder": folder, "other": other, "parent": folder.parent}  # absolute: file:{folder} is file:/…
    path = write(folder, with_output(output.format(**names), sales.format(**names)))
    text = error_of(path)
    assert text.startswith(f"{path}, line 13: output.path: "), text
    assert message in text, text


@pytest.mark.parametrize(
    ("output", "sales"),
    [
        ("out", "data/sales"),
        ("data/sales_out", "data/sales"),  # a sibling whose name starts alike
        ("s3a://bucket/out", "data/sales"),
        ("hdfs://nn/data/sales", "data/sales"),  # another scheme never overlaps a local folder
        ("s3a://bucket/sales2", "s3a://bucket/sales"),
    ],
)
def test_outputs_apart_from_the_inputs(tmp_path: Path, output: str, sales: str) -> None:
    spec = load(tmp_path, with_output(output, sales))
    assert spec.model.output is not None


@pytest.mark.parametrize(
    ("key", "old", "new", "line"),
    [
        ("sources.sales.path", "path: data/sales", "path: ../elsewhere", 6),
        ("sources.sales.path", "path: data/sales", "path: file:data/../../elsewhere", 6),
        ("output.path", "preset: deadline", "preset: deadline\noutput: {path: out/../../out}", 13),
    ],
)
def test_a_relative_path_climbing_out_is_an_error(tmp_path: Path, key: str, old: str, new: str, line: int) -> None:
    path = write(tmp_path / "job", SPEC.replace(old, new))
    text = error_of(path)
    assert text.startswith(f"{path}, line {line}: {key}: "), text
    assert "is outside the spec's folder" in text and "give an absolute path or a URI" in text


def test_a_query_file_elsewhere_by_absolute_path(tmp_path: Path) -> None:
    query = write(tmp_path / "shared", "SELECT 2 AS two\n", "query.sql")
    text = SPEC.replace("query: |\n  SELECT category, SUM(price) AS gross FROM sales GROUP BY category\n",
                        f"query_file: {query.resolve()}\n")
    assert load(tmp_path / "job", text).sql == "SELECT 2 AS two\n"


def test_a_query_file_must_be_local(tmp_path: Path) -> None:
    text = SPEC.replace("query: |\n  SELECT category, SUM(price) AS gross FROM sales GROUP BY category\n",
                        "query_file: s3a://bucket/query.sql\n")
    path = write(tmp_path, text)
    assert error_of(path).startswith(f"{path}, line 2: query_file: 's3a://bucket/query.sql' is not a local file")


# ---------------------------------------------------------------------------------------------
# Paths that must exist.


def test_missing_paths(tmp_path: Path) -> None:
    folder = (tmp_path / "job").resolve()
    (folder / "data" / "present").mkdir(parents=True)
    (tmp_path / "here").mkdir()
    query = write(folder, "SELECT 1 AS one\n", "query.sql")
    text = SPEC.replace("query: |\n  SELECT category, SUM(price) AS gross FROM sales GROUP BY category\n",
                        "query_file: query.sql\n").replace("schedule:", (
                            "  present:\n    path: data/present\n    arrival: {column: a}\n"
                            f"  gone:\n    path: file://{tmp_path.resolve()}/gone\n    arrival: {{column: a}}\n"
                            f"  here:\n    path: file:{tmp_path.resolve()}/here\n    arrival: {{column: a}}\n"
                            "  remote:\n    path: s3a://bucket/remote\n    arrival: {column: a}\n"
                            "schedule:"))
    path = write(folder, text)
    spec = load_spec(path)
    assert spec.missing_paths() == [
        f"{path}, line 5: sources.sales.path: {folder / 'data' / 'sales'} does not exist",
        f"{path}, line 12: sources.gone.path: {tmp_path.resolve() / 'gone'} does not exist",
    ]
    (folder / "data" / "sales").mkdir()
    query.unlink()
    assert spec.missing_paths() == [
        f"{path}, line 12: sources.gone.path: {tmp_path.resolve() / 'gone'} does not exist",
        f"{path}, line 2: query_file: {query} does not exist",
    ]


def test_nothing_missing(tmp_path: Path) -> None:
    (tmp_path / "data" / "sales").mkdir(parents=True)
    assert load(tmp_path, SPEC).missing_paths() == []


# ---------------------------------------------------------------------------------------------
# Typos.


@pytest.mark.parametrize(
    ("old", "new", "line", "key", "message"),
    [
        ("format: parquet", "formt: parquet", 7, "sources.sales.formt", "unknown key (did you mean 'format'?)"),
        ("format: parquet", "format: parquet\n    shema: {a: int}", 8, "sources.sales.shema",
         "unknown key (did you mean 'schema'?)"),
        ("{column: arrived_at}", "{column: arrived_at, wiht: {x: y}}", 8, "sources.sales.arrival.wiht",
         "unknown key (did you mean 'with'?)"),
        ("at: [1, 2, 3]", "at: [1, 2, 3]\n  delivr: every", 11, "schedule.delivr", "unknown key (did you mean 'deliver'?)"),
        ("preset: deadline", "preset: deadline\nmax_catchup: 2", 13, "max_catchup",
         "unknown key (did you mean 'max_catch_up'?)"),
        ("preset: deadline", "preset: deadline\nspark: {mastr: local}", 13, "spark.mastr",
         "unknown key (did you mean 'master'?)"),
    ],
)
def test_a_typo_gets_the_intended_key(tmp_path: Path, old: str, new: str, line: int, key: str, message: str) -> None:
    path = write(tmp_path, SPEC.replace(old, new))
    assert error_of(path) == f"{path}, line {line}: {key}: {message}"


def test_a_misspelt_required_key_is_missing_and_suggested(tmp_path: Path) -> None:
    path = write(tmp_path, SPEC.replace("    arrival:", "    arival:"))
    with pytest.raises(SpecError) as error:
        load_spec(path)
    assert str(error.value).splitlines() == [
        f"{path}, line 5: sources.sales.arrival: required key is missing",
        f"{path}, line 8: sources.sales.arival: unknown key (did you mean 'arrival'?)",
    ]


def test_an_unknown_key_far_from_any(tmp_path: Path) -> None:
    path = write(tmp_path, SPEC + "zzz: 1\n")
    assert error_of(path) == f"{path}, line 13: zzz: unknown key"
