"""The multi-time-point plan: what the optimizer hands to the runtime (ARCHITECTURE.md).

A :class:`MultiTimePlan` is a list of :class:`Fragment` values, each run at one time point. A
fragment is a logical plan in the ordinary algebra (TVR operators already lowered) whose leaves
read source intervals (``SourceRead`` views) or states kept by earlier fragments; its output is
delivered as the result at its time point, kept as a state for later fragments, or both.
Fragments carry their estimated rows and cost vector, and a method label; under a forced method, a
fragment labelled with another (it recomputes, or maintains without streaming) says why in
``fallback``. The plan carries the
cost vector ``[c_1..c_k]`` and the objective ``Σ w_i·c_i``; ``to_json`` is the ``plan.json``
format.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from tempura.algebra import LogicalPlan, Query, format_plan
from tempura.cost.model import CostConstants
from tempura.cost.vector import CostVector, Objective
from tempura.tvr.layout import Layout, Merge, Probe, Since
from tempura.tvr.operators import SourceRead
from tempura.tvr.time import TimePoints

JoinHints = dict[LogicalPlan, tuple[str, str]]  # join strategies, and single-task sorts (planner.JoinHint)

METHOD_ORDER = ("batch", "ivm", "ojv", "higher-order", "streaming")


@dataclass
class Fragment:
    """Work run at time point ``time``: ``plan`` over source reads and kept states."""

    id: str
    time: int
    method: str
    form: str
    plan: LogicalPlan
    hints: JoinHints
    sources: tuple[SourceRead, ...]  # the source intervals the plan reads
    states: tuple[str, ...]  # ids of the states it reads
    rows: float
    cost: CostVector
    physical: str
    delivers: bool = False
    keeps: str | None = None  # the id of the state it writes
    fallback: str = ""  # under a forced method it does not run: why it runs ``method`` instead
    computes: str = ""  # ``form`` as a user reads it: "changes up to t2 of Aggregate over sales, returns"
    probes: tuple[Probe, ...] = ()  # reads whose rows matter only at the keys of a join's other side
    merges: tuple[Merge, ...] = ()  # kept states it merges with its other reads, keyed by a column
    since: tuple[Since, ...] = ()  # source reads whose rows matter only where they arrived after a bound

    def streams(self, forced: str) -> bool:
        """Whether the fragment reads its interval's deltas through Structured Streaming: a
        fragment of the streaming rules does when the plan is forced to ``streaming``. Otherwise
        it reads them from the landing like any incremental fragment: the stream would stage a
        copy of the very rows the landing holds before the fragment's SQL reads them, work the
        plan gains nothing from (the plan's shape, early output included, is the same)."""
        return self.method == "streaming" and forced == "streaming"

    def streamed(self, read: SourceRead, forced: str) -> bool:
        """Whether ``read`` is one the fragment takes from a stream: its source's rows of the
        fragment's own interval, when the fragment :meth:`streams`."""
        return self.streams(forced) and read.delta and read.start == self.time - 1 and read.end == self.time

    @property
    def output(self) -> str:
        parts = (["result"] if self.delivers else []) + (["state"] if self.keeps else [])
        return "+".join(parts) or "temporary"

    def sql(self) -> str:
        from tempura.sql import to_spark_sql

        names = tuple(self.plan.schema.names)
        return to_spark_sql(Query(self.plan, names), pretty=True, hints=self.hints)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "time": self.time,
            "method": self.method,
            "form": self.form,
            "computes": self.computes,
            "inputs": {"sources": [s.view for s in self.sources], "states": list(self.states),
                       "reads": [s.describe() for s in self.sources]},
            "output": self.output,
            "keeps": self.keeps,
            "estimated_rows": self.rows,
            "cost": self.cost.to_json(),
            "plan": format_plan(self.plan),
            "sql": self.sql(),
            **({"fallback": self.fallback} if self.fallback else {}),
            **({"probes": [{"read": p.view, "column": p.column, "by": p.key, "estimated_distinct": p.distinct}
                           for p in self.probes]} if self.probes else {}),
            **({"since": [{"read": s.view, "column": s.column, "after": str(s.after)} for s in self.since]}
               if self.since else {}),
        }


@dataclass
class KeptState:
    """A result saved at ``produced_at`` and read by later fragments."""

    id: str
    produced_at: int
    read_by: list[str]
    read_at: list[int]
    rows: float
    bytes: float
    form: str
    produced_by: str = ""  # the fragment that computes and saves it
    key: str = ""  # what it holds, comparable across plannings of the query (incremental.state_keys; "" if unknown)
    computes: str = ""  # ``form`` as a user reads it
    layout: Layout | None = None  # written hash-bucketed, for the probes that read it (tempura.tvr.layout)

    @property
    def last_read(self) -> int:
        """The last time point it is needed at (it may be dropped after)."""
        return max([self.produced_at, *self.read_at])

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "produced_at": self.produced_at,
            "produced_by": self.produced_by,
            "read_by": self.read_by,
            "read_at": self.read_at,
            "estimated_rows": self.rows,
            "estimated_bytes": self.bytes,
            "form": self.form,
            "computes": self.computes,
            "key": self.key,
            **({"layout": self.layout.to_json()} if self.layout is not None else {}),
        }


@dataclass
class MultiTimePlan:
    """Fragments per time point, the states between them, the cost vector and objective."""

    query: Query
    sql: str
    time_points: TimePoints
    objective: Objective
    method: str
    fragments: list[Fragment]
    states: list[KeptState]
    cost: CostVector
    deliveries: dict[int, str]  # time index -> fragment id
    notes: list[str] = field(default_factory=list)
    search: dict[str, Any] = field(default_factory=dict)
    output: str = "snapshot"  # or "delta": each delivery is SD[v-1,v] with the multiplicity column
    selector: str = "off"  # what chose the kept states: greedy, ilp, or off (the search's own plan)
    state_budget: float | None = None  # the most bytes of states alive at once the plan was held to
    floor: int = 1  # the first time point it plans (earlier ones were run by an earlier plan)
    inputs: list[str] = field(default_factory=list)  # states saved before ``floor`` that it reads
    constants: CostConstants = field(default_factory=CostConstants)  # what its costs were estimated with
    layouts: dict[str, dict[int, Layout]] = field(default_factory=dict)  # source -> interval -> how it lands bucketed

    def peak_state_bytes(self) -> float:
        """The most estimated bytes of kept states alive at one time point (a state lives from
        the time point it is saved at to its last read)."""
        return max((sum(s.bytes for s in self.states if s.produced_at <= t <= s.last_read)
                    for t in self.time_points.indices), default=0.0)

    def at(self, time: int) -> list[Fragment]:
        """The fragments run at ``time``, in an order that runs each after the states it reads."""
        return [f for f in self.fragments if f.time == time]

    @property
    def methods(self) -> list[str]:
        """The methods its fragments use, in a fixed order."""
        used = {f.method for f in self.fragments}
        return [m for m in METHOD_ORDER if m in used]

    def summary(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "selector": self.selector,
            "methods_used": self.methods,
            "vector_ns": list(self.cost.times),
            "objective_ns": self.cost.weighted,
            "work_ns": self.cost.work,
            "fragments": len(self.fragments),
            "states": len(self.states),
            "peak_state_bytes": self.peak_state_bytes(),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "sql": self.sql,
            "time_points": [str(v) for v in self.time_points.values],
            "deliver": list(self.time_points.deliver),
            "objective": {
                "weights": list(self.objective.weights),
                "cost_vector_ns": list(self.cost.times),
                "total_ns": self.cost.weighted,
                "work_ns": self.cost.work,
            },
            "method": self.method,
            "selector": self.selector,
            "output": self.output,
            "fragments": [f.to_json() for f in self.fragments],
            "states": [s.to_json() for s in self.states],
            "state_budget_bytes": self.state_budget,
            "peak_state_bytes": self.peak_state_bytes(),
            "deliveries": {str(t): fid for t, fid in self.deliveries.items()},
            "floor": self.floor,
            "inputs": list(self.inputs),
            "cost_constants": dataclasses.asdict(self.constants),
            "notes": list(self.notes),
            "layouts": {name: {str(i): layout.to_json() for i, layout in sorted(by_index.items())}
                        for name, by_index in sorted(self.layouts.items())},
            "search": dict(self.search),
        }
