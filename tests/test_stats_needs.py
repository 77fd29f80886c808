"""Which source columns a query's estimates compare rows on (:mod:`tempura.stats.needs`): the
columns of predicates, joins, groupings, distinct aggregates, windows, set operations and sorts,
followed back through projections to the source columns they are computed from; a column only
summed or projected is not one of them."""

from __future__ import annotations

import pytest

from tempura.sql import parse_query
from tempura.stats.needs import compared_columns

SCHEMAS = {
    "orders": {"o_id": "bigint", "customer": "bigint", "amount": "decimal(12,2)", "status": "string",
               "booked_at": "timestamp", "order_day": "date"},
    "customers": {"c_id": "bigint", "country": "string", "since": "date"},
}


def compared(sql: str) -> set[tuple[str, str]]:
    return compared_columns(parse_query(sql, SCHEMAS).plan)


def test_an_aggregate_compares_its_keys_and_filter_not_what_it_sums() -> None:
    got = compared("SELECT order_day, SUM(amount) AS revenue, COUNT(*) AS n FROM orders "
                   "WHERE status <> 'cancelled' GROUP BY order_day")
    assert got == {("orders", "order_day"), ("orders", "status")}


def test_a_join_compares_its_keys_and_a_computed_grouping_its_sources() -> None:
    got = compared("SELECT c.country, date_trunc('HOUR', o.booked_at) AS hour, AVG(o.amount) AS a "
                   "FROM orders o JOIN customers c ON o.customer = c.c_id GROUP BY 1, 2")
    assert got == {("orders", "customer"), ("customers", "c_id"), ("customers", "country"), ("orders", "booked_at")}


@pytest.mark.parametrize(("sql", "also"), [
    ("SELECT COUNT(DISTINCT customer) AS n FROM orders", {("orders", "customer")}),
    ("SELECT SUM(amount) FILTER (WHERE status = 'booked') AS s FROM orders", {("orders", "status"), ("orders", "amount")}),
    ("SELECT order_day, SUM(amount) AS s FROM orders GROUP BY order_day HAVING SUM(amount) > 10",
     {("orders", "order_day"), ("orders", "amount")}),
    ("SELECT DISTINCT status, order_day FROM orders", {("orders", "status"), ("orders", "order_day")}),
    ("SELECT o_id, RANK() OVER (PARTITION BY customer ORDER BY amount) AS r FROM orders",
     {("orders", "customer"), ("orders", "amount")}),
    ("SELECT customer FROM orders UNION SELECT c_id FROM customers", {("orders", "customer"), ("customers", "c_id")}),
    ("SELECT o_id, amount FROM orders ORDER BY booked_at LIMIT 3", {("orders", "booked_at")}),
])
def test_every_operator_that_compares_rows_names_its_columns(sql: str, also: set[tuple[str, str]]) -> None:
    assert compared(sql) == also


def test_a_projected_or_summed_column_is_not_compared() -> None:
    assert compared("SELECT o_id, amount * 2 AS twice, status FROM orders") == set()
    assert compared("SELECT SUM(amount) AS s, MAX(booked_at) AS last FROM orders") == set()
