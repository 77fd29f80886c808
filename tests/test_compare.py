"""The result comparator must tell different results apart; the differential tests rest on it."""

from __future__ import annotations

import datetime
from decimal import Decimal

from tempura.runtime.compare import compare_results, values_equal


def test_equal_multisets_in_any_order() -> None:
    assert compare_results([(1, "a"), (2, "b"), (1, "a")], [(2, "b"), (1, "a"), (1, "a")]).equal


def test_multiplicity_matters() -> None:
    outcome = compare_results([(1, "a"), (1, "a"), (2, "b")], [(1, "a"), (2, "b"), (2, "b")])
    assert not outcome.equal
    assert "missing" in outcome.reason


def test_row_count_and_width() -> None:
    assert not compare_results([(1,)], [(1,), (1,)]).equal
    assert not compare_results([(1, 2)], [(1,)]).equal


def test_floats_within_relative_tolerance_decimals_exact() -> None:
    assert compare_results([(0.1 + 0.2,)], [(0.3,)]).equal
    assert not compare_results([(1.0,)], [(1.001,)]).equal
    assert not compare_results([(Decimal("1.00"),)], [(Decimal("1.01"),)]).equal
    assert values_equal(float("nan"), float("nan"))


def test_nulls() -> None:
    assert compare_results([(None, 1)], [(None, 1)]).equal
    assert not compare_results([(None, 1)], [(0, 1)]).equal


def test_order_is_checked_when_ordered() -> None:
    expected = [(1, "a"), (2, "b")]
    assert compare_results(expected, [(2, "b"), (1, "a")]).equal
    assert not compare_results(expected, [(2, "b"), (1, "a")], ordered=True).equal


def test_ties_on_sort_keys_may_come_in_any_order() -> None:
    expected = [(1, "a"), (1, "b"), (2, "c")]
    assert compare_results(expected, [(1, "b"), (1, "a"), (2, "c")], ordered=True, order_keys=[0]).equal
    assert not compare_results(expected, [(2, "c"), (1, "a"), (1, "b")], ordered=True, order_keys=[0]).equal


def test_dates_and_nested_values() -> None:
    day = datetime.date(2026, 11, 22)
    assert compare_results([(day, [1.0, 2.0])], [(day, [1.0, 2.0 + 1e-12])]).equal
    assert not compare_results([(day,)], [(datetime.date(2026, 11, 23),)]).equal
