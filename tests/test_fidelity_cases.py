"""Spark fidelity, case by case: each query of ``tests/fidelity/cases.yaml`` run by tempura gives
what ``spark.sql`` gives on the same small tables (NULLs, duplicates, decimals, dates): the same
column names, the same types, and the same bag of rows. A case marked ``open`` is a known wrong
result, crash or refusal, expected (strictly) to fail until it is fixed."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from tempura.api import Session
from tempura.runtime import compare_results

pytestmark = pytest.mark.spark

CASES = Path(__file__).with_name("fidelity") / "cases.yaml"

T_ROWS = [
    (1, 10, "ab", 1.5, dt.date(2024, 1, 2), dt.datetime(2024, 1, 2, 3, 4, 5), decimal.Decimal("1.25")),
    (1, 10, "ab", 1.5, dt.date(2024, 1, 2), dt.datetime(2024, 1, 2, 3, 4, 5), decimal.Decimal("1.25")),
    (2, 20, None, None, dt.date(2024, 3, 4), None, decimal.Decimal("-7.50")),
    (None, 40, "xyz", -2.0, None, dt.datetime(2023, 12, 31, 23, 59, 59), None),
    (5, None, "", 0.0, dt.date(1970, 1, 1), dt.datetime(1970, 1, 1, 0, 0, 0), decimal.Decimal("99999999.99")),
]
U_ROWS = [(1, 100, "x"), (2, None, "y"), (7, 140, None)]
NAMED = {
    "p": [("ann", 1), ("bob", 2), (None, 3)],
    "q": [("bob", 20), ("cat", 30), ("cat", 31)],
    "r": [("cat", 300), ("dan", 400), ("ann", 100)],
}


def cases() -> list[Any]:
    found = []
    for group, entries in yaml.safe_load(CASES.read_text()).items():
        for entry in entries:
            sql, open_ = (entry, None) if isinstance(entry, str) else (entry["sql"], entry.get("open"))
            marks = [pytest.mark.xfail(reason=open_, strict=True)] if open_ else []
            found.append(pytest.param(sql, id=f"{group}: {sql}", marks=marks))
    return found


@pytest.fixture(scope="module")
def session(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Session:
    base = tmp_path_factory.mktemp("fidelity")
    spark.createDataFrame(T_ROWS, "a int, b bigint, s string, d double, dt date, ts timestamp, m decimal(10,2)") \
        .write.parquet(str(base / "t"))
    spark.createDataFrame(U_ROWS, "a int, e bigint, f string").write.parquet(str(base / "u"))
    tables = {"t": {"path": "t", "format": "parquet"}, "u": {"path": "u", "format": "parquet"}}
    for name, rows in NAMED.items():
        spark.createDataFrame(rows, "name string, v int").write.parquet(str(base / name))
        tables[name] = {"path": name, "format": "parquet"}
    path = base / "catalog.yaml"
    path.write_text(yaml.safe_dump({"tables": tables}))
    return Session(path, spark=spark)


@pytest.mark.parametrize("sql", cases())
def test_case_equals_spark(session: Session, sql: str) -> None:
    expected = session.spark.sql(sql)
    actual = session.sql(sql)
    assert [(f.name, f.dataType.simpleString()) for f in actual.schema.fields] == \
        [(f.name, f.dataType.simpleString()) for f in expected.schema.fields]
    query = session.plan(sql)
    outcome = compare_results([tuple(r) for r in expected.collect()], [tuple(r) for r in actual.collect()],
                              query.ordered, query.order_keys)
    assert outcome.equal, outcome.reason


@pytest.mark.parametrize("sql, error_class", [
    ("SELECT a FROM t GROUP BY a HAVING grouping__id >= 0", "UNSUPPORTED_GROUPING_EXPRESSION"),
    ("SELECT nope FROM t", "UNRESOLVED_COLUMN"),
    ("SELECT a FROM t WHERE a = ANY (SELECT a FROM t)", "PARSE_SYNTAX_ERROR"),
])
def test_what_spark_rejects_is_refused_in_one_line_with_its_error_class(session: Session, sql: str,
                                                                        error_class: str) -> None:
    from pyspark.errors import PySparkException

    from tempura.errors import SqlError

    with pytest.raises(PySparkException):
        session.spark.sql(sql).collect()
    with pytest.raises(SqlError) as raised:
        session.sql(sql)
    message = str(raised.value)
    assert error_class in message and "\n" not in message, message
