"""Result equality as the correctness invariant defines it.

Two results are equal when they hold the same rows as multisets; where the query orders its
result, the rows must also come in the same order, except that rows tied on every sort key may
come in any order among themselves. Floating-point values are equal within a relative
tolerance; every other value (decimals included) must be equal exactly.
"""

from __future__ import annotations

import datetime
import decimal
import math
from dataclasses import dataclass
from typing import Any, Sequence

Row = tuple[Any, ...]

REL_TOL = 1e-9
ABS_TOL = 1e-12


@dataclass(frozen=True)
class Comparison:
    equal: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.equal


def values_equal(a: Any, b: Any, rel_tol: float = REL_TOL) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        if not isinstance(a, (int, float, decimal.Decimal)) or not isinstance(b, (int, float, decimal.Decimal)):
            return False
        fa, fb = float(a), float(b)
        if math.isnan(fa) or math.isnan(fb):
            return math.isnan(fa) and math.isnan(fb)
        return math.isclose(fa, fb, rel_tol=rel_tol, abs_tol=ABS_TOL)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(values_equal(x, y, rel_tol) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(values_equal(a[k], b[k], rel_tol) for k in a)
    return bool(a == b)


def rows_equal(a: Row, b: Row, rel_tol: float = REL_TOL) -> bool:
    return len(a) == len(b) and all(values_equal(x, y, rel_tol) for x, y in zip(a, b))


def _sort_key(row: Row) -> tuple[Any, ...]:
    """A total order on rows that puts nearly equal floats next to each other."""
    key: list[tuple[int, object]] = []
    for value in row:
        if value is None:
            key.append((0, 0))
        elif isinstance(value, bool):
            key.append((1, int(value)))
        elif isinstance(value, (int, float, decimal.Decimal)):
            number = float(value)
            key.append((2, 0.0 if math.isnan(number) else float(f"{number:.9g}")))
        elif isinstance(value, (datetime.date, datetime.datetime)):
            key.append((3, value.isoformat()))
        else:
            key.append((4, str(value)))
    return tuple(key)


def _multiset_diff(expected: Sequence[Row], actual: Sequence[Row], rel_tol: float) -> str:
    exp_sorted = sorted(expected, key=_sort_key)
    act_sorted = sorted(actual, key=_sort_key)
    if all(rows_equal(a, b, rel_tol) for a, b in zip(exp_sorted, act_sorted)):
        return ""
    # Float rounding can order nearly equal rows differently: match the leftovers greedily.
    unmatched = list(act_sorted)
    for row in exp_sorted:
        for i, candidate in enumerate(unmatched):
            if rows_equal(row, candidate, rel_tol):
                del unmatched[i]
                break
        else:
            return f"expected row {row!r} is missing"
    return ""


def compare_results(
    expected: Sequence[Row],
    actual: Sequence[Row],
    ordered: bool = False,
    order_keys: Sequence[int] | None = None,
    rel_tol: float = REL_TOL,
) -> Comparison:
    """Compare ``actual`` against ``expected`` (see the module docstring)."""
    if len(expected) != len(actual):
        return Comparison(False, f"{len(actual)} rows, expected {len(expected)}")
    if expected and len(expected[0]) != len(actual[0]):
        return Comparison(False, f"{len(actual[0])} columns, expected {len(expected[0])}")
    reason = _multiset_diff(expected, actual, rel_tol)
    if reason:
        return Comparison(False, reason)
    if ordered:
        if order_keys is None:
            for i, (a, b) in enumerate(zip(expected, actual)):
                if not rows_equal(a, b, rel_tol):
                    return Comparison(False, f"row {i} is {b!r}, expected {a!r} (order differs)")
        else:
            for i, (a, b) in enumerate(zip(expected, actual)):
                ka = tuple(a[k] for k in order_keys)
                kb = tuple(b[k] for k in order_keys)
                if not rows_equal(ka, kb, rel_tol):
                    return Comparison(False, f"row {i} has sort key {kb!r}, expected {ka!r} (order differs)")
    return Comparison(True)
