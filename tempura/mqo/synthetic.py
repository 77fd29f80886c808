"""Random MQO instances shaped like standing queries, for tests and the benchmark.

:func:`random_instance` draws a small query — a random tree of unary and binary operators over
source tables, each with its own row counts and cost per row — and builds the instance its
incremental plans form over ``k`` time points, as the TVR expansion does for a real query:

- ``SS(e, v)@τ``, the snapshot of expression ``e`` as of version ``v``, needed at time point
  ``τ ≥ v``: recomputed from its inputs' snapshots, or merged from ``SS(e, v-1)`` and
  ``SD(e, v)`` (for ``v > 1``), or loaded if it was kept at any ``τ'`` in ``[v, τ]``;
- ``SD(e, v)@τ``, the change from ``v-1`` to ``v``: from the inputs' deltas (a binary operator
  reads one input's delta with the other's old snapshot, and the other way round), or loaded;
- a source's snapshot and delta are scans of its rows so far and of the interval's rows.

Costs are weighted by the objective's weight at ``τ`` (a random choice of ``deadline``,
``total`` or random weights), saves and loads are proportional to size. Deliveries are the
snapshot at the last time point, or at every one.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from tempura.mqo.instance import Candidate, Instance, Op, keep_times


@dataclass
class _Expr:
    inputs: tuple[int, ...]
    rows: float  # rows per interval
    per_row: float  # cost per input row


def random_instance(seed: int, k: int | None = None, size: int | None = None, all_times: bool = False) -> Instance:
    """A random instance: ``k`` time points (2–8) and ``size`` operators (1–6) over sources.
    Candidates are offered only at the time points worth keeping at
    (:func:`~tempura.mqo.instance.keep_times`) unless ``all_times``."""
    rng = random.Random(seed)
    k = k or rng.randint(2, 8)
    size = size or rng.randint(1, 6)
    exprs: list[_Expr] = []
    for _ in range(rng.randint(1, 3)):  # sources
        exprs.append(_Expr((), rng.lognormvariate(8, 1.5), 1.0))
    for _ in range(size):
        fan = 2 if len(exprs) > 1 and rng.random() < 0.5 else 1
        inputs = tuple(rng.sample(range(len(exprs)), fan))
        rows = max(1.0, sum(exprs[i].rows for i in inputs) * rng.choice([0.01, 0.1, 0.5, 1.0, 2.0]))
        exprs.append(_Expr(inputs, rows, rng.uniform(0.5, 4.0)))
    weights = _weights(rng, k)
    deliver = [k] if rng.random() < 0.6 else list(range(1, k + 1))
    return _Builder(exprs, k, weights, rng.uniform(0.3, 3.0), rng.uniform(0.2, 2.0), all_times).build(len(exprs) - 1, deliver)


def _weights(rng: random.Random, k: int) -> list[float]:
    kind = rng.choice(["deadline", "total", "random"])
    if kind == "deadline":
        return [1e-3] * (k - 1) + [1.0]
    if kind == "total":
        return [1.0] * k
    return [rng.choice([0.001, 0.1, 0.5, 1.0]) for _ in range(k)]


class _Builder:
    def __init__(self, exprs: list[_Expr], k: int, weights: list[float], save: float, load: float, all_times: bool) -> None:
        self.exprs = exprs
        self.all_times = all_times
        self.k = k
        self.weights = weights
        self.save = save
        self.load = load
        self.instance = Instance(k)
        self.nodes: dict[tuple[str, int, int, int], int] = {}
        self.candidates: dict[tuple[str, int, int, int], int] = {}

    def build(self, root: int, deliver: list[int]) -> Instance:
        for t in deliver:
            self.instance.roots.append(self.node("SS", root, t, t))
        self.instance.validate()
        return self.instance

    def _rows(self, e: int, form: str, v: int) -> float:
        per = self.exprs[e].rows
        return per * v if form == "SS" else per

    def node(self, form: str, e: int, v: int, at: int) -> int:
        key = (form, e, v, at)
        made = self.nodes.get(key)
        if made is not None:
            return made
        node = self.nodes[key] = self.instance.add_node(at, f"{form}(e{e},{v})@t{at}")
        w = self.weights[at - 1]
        expr = self.exprs[e]
        rows = self._rows(e, form, v)
        if not expr.inputs:
            self.instance.add_op(node, Op(w * rows, (), label="scan"))
        elif form == "SS":
            inputs = tuple(self.node("SS", i, v, at) for i in expr.inputs)
            read = sum(self._rows(i, "SS", v) for i in expr.inputs)
            self.instance.add_op(node, Op(w * expr.per_row * read, inputs, label="recompute"))
            if v > 1:
                merge = (self.node("SS", e, v - 1, at), self.node("SD", e, v, at))
                self.instance.add_op(node, Op(w * (self._rows(e, "SS", v - 1) + rows) * 0.5, merge, label="merge"))
        else:
            if len(expr.inputs) == 1:
                (i,) = expr.inputs
                self.instance.add_op(node, Op(w * expr.per_row * self._rows(i, "SD", v), (self.node("SD", i, v, at),), label="delta"))
            else:
                a, b = expr.inputs
                terms: list[int] = [self.node("SD", a, v, at), self.node("SD", b, v, at), self.node("SS", a, v, at)]
                if v > 1:
                    terms.append(self.node("SS", b, v - 1, at))
                read = sum(self._rows(x, f, vv) for x, f, vv in ((a, "SD", v), (b, "SD", v), (a, "SS", v), (b, "SS", v - 1)))
                self.instance.add_op(node, Op(w * expr.per_row * read, tuple(terms), label="delta join"))
        times = range(v, at + 1) if self.all_times else keep_times(v, self.weights, at)
        for earlier in times:
            c = self._candidate(form, e, v, earlier)
            self.instance.add_op(node, Op(w * self.load * rows, (), c, label=f"load from t{earlier}"))
        return node

    def _candidate(self, form: str, e: int, v: int, at: int) -> int:
        key = (form, e, v, at)
        made = self.candidates.get(key)
        if made is None:
            node = self.node(form, e, v, at)
            rows = self._rows(e, form, v)
            made = self.candidates[key] = self.instance.add_candidate(
                Candidate(node, at, self.weights[at - 1] * self.save * rows, rows * 16.0, f"{form}(e{e},{v})@t{at}"))
        return made
