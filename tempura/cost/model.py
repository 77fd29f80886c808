"""The cost value and its constants.

A :class:`Cost` keeps CPU, IO and network time in nanoseconds, plus the output rows. Costs add
up, and they are totally ordered: by CPU + IO + network, then by rows (the Hive seed's
``isLe``: time first, cardinality only to break ties).

The constants follow the Hive seed (``CPUc = 1 ns``, ``NEt = 150·CPUc``, ``Lr = Lw = 4·NEt``,
``Hr = 1.5·Lr``, ``Hw = 10·Lw``), read for Spark: the *local* rates are shuffle files and the
*distributed* ones table files and kept state. Every constant can be overridden.

The Hive seed's formulas have no fixed cost, but Spark does: every stage schedules, serialises
and launches a task per partition or file split, whatever its input's size. ``stage`` charges
that once per stage-starting operator (a scan, a state read, an exchange, a gather, a state
write; see ``operators.py``). Its default, in nanoseconds of model time like every constant,
stands for about 10 ms of executor CPU (a near-empty stage measured locally) at the model's
scale: the Hive constants put between 100 and 800 model-nanoseconds on
one nanosecond of executor CPU (the scenarios' recomputations at scale 1; as few as 12 for the
range report), 1 s is 10 ms at 100, the low end: the fixed cost decides only where plans differ
by many stages. It is what makes a plan of many small stages lose to one of few large ones on
small data.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import total_ordering
from typing import Any, Mapping

from tempura.errors import TempuraError

MIB = 1024.0 * 1024.0


@dataclass(frozen=True)
class CostConstants:
    """Per-unit costs (nanoseconds) and the cluster facts the cost formulas need."""

    cpu: float = 1.0  # CPUc: one comparison
    hash: float = 1.0  # hashing one row into or against a hash table, in CPUc units
    network: float = 150.0  # NEt: one byte over the network
    local_read: float = 600.0  # Lr: one byte read from local disk (shuffle files)
    local_write: float = 600.0  # Lw: one byte written to local disk
    dfs_read: float = 900.0  # Hr: one byte read from table storage
    dfs_write: float = 6000.0  # Hw: one byte written to table storage (outputs, state)
    file_open: float = 1.2e8  # opening one more file of a table: about as much as reading 128 KiB of it
    stage: float = 1e9  # a stage's fixed work: scheduling and launching its tasks (see below)
    row_copy: float = 150.0  # one byte of a row an uncompiled union copies out of its input (operators.py)
    executors: int = 2  # copies of a broadcast relation
    partitions: int = 4  # shuffle partitions: partial aggregates emit up to this many rows per group
    broadcast_threshold: float = 10 * MIB  # Spark's autoBroadcastJoinThreshold: what Spark's own planning broadcasts
    broadcast_limit: float = 64 * MIB  # the largest build side tempura pins a broadcast of (estimate and bound)
    cpu_rate_weight: float = 3600.0  # streaming: CPU per unit of rate vs batch CPU (Beam seed)
    probe_keys: float = 1.0  # a probe's distinct keys as estimated, times this (calibrated from the buckets pruned reads touch)

    @classmethod
    def from_mapping(cls, values: Mapping[str, object]) -> CostConstants:
        """Constants with some overridden (``{"network": 300}``); unknown names are an error."""
        names = {f.name: f for f in dataclasses.fields(cls)}
        changes: dict[str, Any] = {}
        for key, raw in values.items():
            if key not in names:
                raise TempuraError(f"unknown cost constant '{key}' (known: {', '.join(sorted(names))})")
            try:
                number = float(str(raw))
            except ValueError:
                raise TempuraError(f"cost constant '{key}': not a number: {raw!r}") from None
            if number < 0 or not math.isfinite(number):
                raise TempuraError(f"cost constant '{key}' must be a finite non-negative number, got {raw!r}")
            if names[key].type in ("int", int):
                if number < 1 or number != int(number):
                    raise TempuraError(f"cost constant '{key}' must be a whole number of at least 1, got {raw!r}")
                changes[key] = int(number)
            else:
                changes[key] = number
        return dataclasses.replace(cls(), **changes)


@total_ordering
@dataclass(frozen=True)
class Cost:
    """CPU, IO and network nanoseconds, the rows produced, and the stages charged (how many
    fixed ``stage`` costs the time includes: what calibration separates from the per-byte and
    per-row work; it takes no part in comparisons)."""

    cpu: float = 0.0
    io: float = 0.0
    network: float = 0.0
    rows: float = 0.0
    stages: float = 0.0

    @property
    def total(self) -> float:
        return self.cpu + self.io + self.network

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.cpu + other.cpu, self.io + other.io, self.network + other.network, self.rows + other.rows,
                    self.stages + other.stages)

    def with_rows(self, rows: float) -> Cost:
        """The same time with ``rows`` as the output: a composite operator produces its last step's rows."""
        return Cost(self.cpu, self.io, self.network, rows, self.stages)

    def scaled(self, factor: float) -> Cost:
        return Cost(self.cpu * factor, self.io * factor, self.network * factor, self.rows * factor, self.stages * factor)

    def _order(self) -> tuple[float, float]:
        return (self.total, self.rows)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Cost):
            return NotImplemented
        return self._order() < other._order()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Cost):
            return NotImplemented
        return self._order() == other._order()

    def __hash__(self) -> int:
        return hash(self._order())

    @property
    def is_infinite(self) -> bool:
        return math.isinf(self.total)

    def __str__(self) -> str:
        return format_time(self.total)

    def to_json(self) -> dict[str, float]:
        return {"total_ns": self.total, "cpu_ns": self.cpu, "io_ns": self.io, "network_ns": self.network}


ZERO = Cost()
INFINITE = Cost(math.inf, 0.0, 0.0, math.inf)


def format_bytes(n: float, up: bool = False) -> str:
    """Bytes in the largest decimal unit that keeps the number at least 1, to three significant
    digits (``1.5 GB`` is 1.5e9 bytes, as a spec's ``state_budget`` reads it); ``up`` rounds up,
    so that the text read back is never below ``n``."""
    if n > 0 and math.isfinite(n):
        step = 10.0 ** (math.floor(math.log10(n)) - 2)
        n = (math.ceil(n / step - 1e-9) if up else round(n / step)) * step
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{math.ceil(n) if up else round(n):.0f} B"


def format_time(ns: float) -> str:
    """Nanoseconds as a short human reading (``1.2ms``, ``3.4s``)."""
    if math.isinf(ns):
        return "inf"
    for unit, size in (("h", 3.6e12), ("min", 6e10), ("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if float(f"{ns:.3g}") >= size:
            return f"{ns / size:.3g}{unit}"
    return f"{ns:.3g}ns"
