"""Checking declared keys as their rows land.

A spec may declare that a source's column is a key whose every value lands once in a cycle
(``key: o_orderkey``) and that another source's rows land in the same interval as the row whose
key they hold (``arrival: {with: {orders: l_orderkey}}``). The planner proves joins of old and
new rows empty from these declarations (:mod:`tempura.tvr.bounds`); under ``integrity:
enforced`` each landed interval is checked before anything runs on it:

- no key is NULL, and none of the key's new values landed in an earlier interval of the cycle
  (a value may repeat within one interval: the proofs are about intervals, not rows);
- every value of a referencing column is one of the key's new values (a row landing with a key
  holds one: the planner takes both columns as never NULL); with ``arrival.within``, one of the
  key's values landed in the intervals that reach back that far (a return landing at ``t_4``,
  12 hours after ``t_3``, references a sale landed after ``t_3 - 12h``), and where both sources
  arrive by a column, the row arrived at most the lag after every row of its key.

A violation is not an error: the data is what it is. The runner drops the key's domain for the
rest of the cycle and plans the time point again without it (:class:`~tempura.scheduler.runner.Runner`).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from tempura.sql.names import quote_identifier
from tempura.tvr.bounds import KeyRule, Lag

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


Reader = Callable[[str, Sequence[int]], "DataFrame"]
"""The rows of a source landed in the given intervals of the cycle."""


def violations(rules: Sequence[KeyRule], read: Reader, index: int,
               reach: Mapping[tuple[str, str], Sequence[int]] | None = None,
               arrivals: Mapping[str, str] | None = None) -> dict[str, str]:
    """The domains whose declaration interval ``index``'s landing breaks, each with the first
    violation found, in words; ``reach``: per referencing ``(source, column)`` landing within a
    lag of its key, the interval before the first whose keys interval ``j`` may hold, per ``j``
    (:func:`tempura.tvr.bounds.reach`); ``arrivals``: the arrival column of each source arriving
    by one, for the lag's check row by row."""
    out = {}
    for rule in rules:
        found = _violation(rule, read, index, reach or {}, arrivals or {})
        if found is not None:
            out[rule.domain] = found
    return out


def _keys(frame: DataFrame, column: str) -> DataFrame:
    return _pick(frame, k=column)


def _violation(rule: KeyRule, read: Reader, index: int, reach: Mapping[tuple[str, str], Sequence[int]],
               arrivals: Mapping[str, str]) -> str | None:
    new = _keys(read(rule.source, [index]), rule.column)
    suspects = new.where(new.k.isNull())  # a NULL key, or (one Spark job for both) a key landed before
    if index > 1:
        suspects = suspects.unionByName(new.join(_keys(read(rule.source, range(1, index)), rule.column), "k", "left_semi"))
    found = suspects.limit(1).collect()
    if found and found[0]["k"] is None:
        return f"{rule.source}.{rule.column} is NULL in a row landed at t{index}: a key is never NULL"
    if found:
        return f"{rule.source}.{rule.column} = {found[0]['k']} landed at t{index} and in an earlier interval"
    for source, column in rule.referencing:
        lag = rule.lag(source, column)
        first = reach[(source, column)][index - 1] + 1 if (source, column) in reach else index
        rows = read(source, [index])
        if lag is not None and source in arrivals and rule.source in arrivals:
            # one job: a row holding no key landed in the lag's intervals (first), or one arriving
            # more than the lag after a row of its key
            found = _late(_pick(rows, k=column, a=arrivals[source]),
                          _pick(read(rule.source, range(first, index + 1)), k=rule.column, b=arrivals[rule.source]), lag)
            if found and found[0]["b"] is not None:
                return (f"{source}.{column} = {found[0]['k']} arrived at {found[0]['a']}, more than {duration_text(lag)} "
                        f"after a {rule.source} row holding that key (arrived at {found[0]['b']})")
            orphan = found
        else:
            keys = new if first == index else _keys(read(rule.source, range(first, index + 1)), rule.column)
            orphan = _keys(rows, column).join(keys, "k", "left_anti").limit(1).collect()
        if orphan:
            if orphan[0]["k"] is None:
                return f"{source}.{column} is NULL in a row landed at t{index}: rows landing with {rule.source}.{rule.column} hold a key"
            if lag is None:
                return (f"{source}.{column} = {orphan[0]['k']} landed at t{index} without the {rule.source} row "
                        f"holding that key in the same interval")
            return (f"{source}.{column} = {orphan[0]['k']} landed at t{index}, but no {rule.source} row holding that key "
                    f"landed in the intervals within {duration_text(lag)} before it (t{first}..t{index})")
    return None


def _late(referencing: DataFrame, held: DataFrame, lag: Lag) -> list[Any]:
    """The first referencing row (``k``, arrived at ``a``) that no held row of its key (``b``:
    the key row's arrival) matches, else one that arrived more than ``lag`` after a held row of
    its key (``b`` set); empty when there is neither. The lag bounds arrival values row by row:
    the planner leaves out the key's rows that arrived before the earliest its referencing rows
    allow (:mod:`tempura.optimizer.slices`)."""
    from pyspark.sql import functions as F

    shift = F.expr(f"INTERVAL '{int(lag.total_seconds())}' SECOND") if isinstance(lag, dt.timedelta) else F.lit(lag)
    missing = F.col("b").isNull()
    return (referencing.join(held, "k", "left").where(missing | (F.col("a") > F.col("b") + shift))
            .orderBy(missing.desc()).limit(1).collect())


def _pick(frame: DataFrame, **columns: str) -> DataFrame:
    """``frame``'s ``columns`` (named in any case), each under its keyword."""
    from pyspark.sql import functions as F

    return frame.select(*[F.col(quote_identifier(_named(frame.columns, name))).alias(alias) for alias, name in columns.items()])


def _named(columns: Sequence[str], column: str) -> str:
    return next((c for c in columns if c.lower() == column.lower()), column)


def duration_text(lag: Lag) -> str:
    """A lag as a spec writes it: ``12h``, ``1d6h``, ``90s`` (a number as it is)."""
    if not isinstance(lag, dt.timedelta):
        return f"{lag:g}"
    seconds, parts = int(lag.total_seconds()), []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size:
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
    return "".join(parts) or "0s"


__all__ = ["Reader", "violations"]
