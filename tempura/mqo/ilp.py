"""The exact state selection: integer programs over the instance, solved through PuLP.

Two programs over an :class:`~tempura.mqo.instance.Instance`, both with the binaries the Tempura
model names — ``keep[c]``, candidate ``c`` is kept (computed and saved at its time point), and
``choose[n,o]``, op ``o`` is the alternative chosen for node ``n`` (a group under a property at a
time point) — and constraints saying every consumer's inputs are available when it runs (a load
only of a kept state; a kept state computed, not loaded):

- **the relaxation** (:class:`_Shared`): each chosen op is paid once, however many consumers
  read its node — as if every shared node were kept for free. Its optimum is a lower bound; when
  the plan it picks costs the same under the real semantics (:class:`~tempura.mqo.costs.CostTable`:
  a node not kept is recomputed by each consumer), that plan is optimal. On the benchmark's
  instances this proves the optimum in most cases, in well under the time the exact program takes;
- **the exact program** (:class:`_Flow`): ``runs[n,o]``, continuous, counts how often each op
  runs; each node runs as often as its consumers need it (deliveries, kept computations, and the
  runs of every op reading it), an op only if chosen (``runs ≤ M·choose``, one alternative per
  node) and a load only if its state is kept. ``M`` is the most times a plan no dearer than a
  known one (the relaxation's, the greedy's) can run the op: its objective over the op's least
  cost per run, or the paths to the node if fewer.

Both objectives are ``Σ cost·runs + Σ save·keep`` in the greedy's units, so the two selectors are
comparable and the ILP's optimum is never above the greedy's.

With a **budget** on kept bytes, binary ``reads[n,c]`` marks a node loading ``c``, and
``live[c,t]`` a state still needed at time point ``t`` (from its time point to its last read);
at every time point the kept bytes alive must fit. :func:`smallest_budget` minimises that peak
instead: what an unmeetable budget's error reports.

The solver is HiGHS through ``highspy`` (:class:`pulp.HiGHS`); without it, an installed CBC
(``COIN_CMD``), then the CBC that older PuLP versions bundle. Costs are scaled to a known plan's
objective before solving, so that the solver's tolerances mean the same on every instance.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import pulp

from tempura.errors import TempuraError
from tempura.mqo.costs import CostTable
from tempura.mqo.instance import Instance

DEFAULT_TIME_LIMIT = 30.0
PROOF_TOLERANCE = 1e-6  # relative: the solver's own gap
SOLVERS = ("HiGHS", "COIN_CMD", "PULP_CBC_CMD")


@dataclass
class IlpResult:
    """The solver's kept set, its objective (in the instance's units, as the cost propagation
    evaluates it), whether it is proven optimal, and the model's size."""

    kept: set[int]
    objective: float
    optimal: bool
    status: str
    solver: str
    seconds: float
    binaries: int
    variables: int
    constraints: int
    until: dict[int, int] = field(default_factory=dict)  # under a budget: the last read of each kept state
    program: str = "flow"  # what proved it: the relaxation's plan met its bound ("relaxation"), the known plan did
    # ("bound"), or the exact program
    gap: float = 0.0  # proven within this share of the optimum (0: proven optimal)


class NoSolver(TempuraError):
    """No MILP solver is installed."""


@functools.cache
def _quiet_highs() -> None:
    """HiGHS writes its banner to the process's standard output the first time a model is made in
    the process, whatever ``output_flag`` says afterwards (PuLP sets it only then): that would
    corrupt ``tempura plan --format json``. Make the first model here, with file descriptor 1
    pointed at the null device."""
    try:
        import highspy
    except ImportError:
        return
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def solver(time_limit: float = DEFAULT_TIME_LIMIT, preferred: tuple[str, ...] = SOLVERS, gap: float = 0.0) -> Any:
    """The first available solver of ``preferred``, exact to the optimum (no relative gap), or
    stopping within ``gap`` of it."""
    for name in preferred:
        if name == "HiGHS":
            _quiet_highs()
            candidate = pulp.HiGHS(msg=False, timeLimit=time_limit, gapRel=max(PROOF_TOLERANCE / 10, gap), gapAbs=0.0, threads=1)
        elif name in ("COIN_CMD", "PULP_CBC_CMD") and hasattr(pulp, name):
            candidate = getattr(pulp, name)(msg=False, timeLimit=time_limit, gapRel=gap)
        else:
            continue
        if candidate.available():
            return candidate
    raise NoSolver(f"no MILP solver is available (tried {', '.join(preferred)}): install highspy")


def _least_runs(inst: Instance) -> list[list[float]]:
    """For each op, the least one run of it costs: its own cost plus its inputs' at their least
    (every state they may load kept and free but for its load)."""
    lower = [math.inf] * inst.size
    out: list[list[float]] = [[] for _ in range(inst.size)]
    for node in inst.order:
        for op in inst.ops[node]:
            least = op.cost if op.is_load else op.cost + sum(lower[c] for c in op.children)
            out[node].append(least)
            lower[node] = min(lower[node], least)
    return out


def _least_unkept(inst: Instance) -> tuple[list[float], list[set[int]]]:
    """For each node, the least one run of it costs when no state of its own time point is kept,
    and those states: its least way and its inputs', loads only of earlier time points' states
    (``inf`` if it has no such way). A state is loaded at its own time point only if kept, so
    while none of the states returned for a node is kept, every run of the node costs at least
    the first value."""
    least = [math.inf] * inst.size
    same: list[set[int]] = [set() for _ in range(inst.size)]
    for node in inst.order:
        for op in inst.ops[node]:
            if op.is_load and inst.candidates[op.candidate].time == inst.times[node]:
                same[node].add(op.candidate)
                continue
            cost = op.cost if op.is_load else op.cost + sum(least[c] for c in op.children)
            for child in set(op.children):
                same[node] |= same[child]
            least[node] = min(least[node], cost)
    return least, same


class _Program:
    """What both programs share: the kept-state binaries, the budget's liveness, solving."""

    def __init__(self, instance: Instance, upper: float | None) -> None:
        self.instance = inst = instance
        # costs in units of a known plan's objective (or of the dearest op): the solver's
        # tolerances then mean the same on every instance
        self.scale = upper if upper else max([1e-12, *(op.cost for ops in inst.ops for op in ops), *(c.save for c in inst.candidates)])
        self.problem = pulp.LpProblem("tempura_states", pulp.LpMinimize)
        self.keep = [self.problem.add_variable(f"keep_{c}", cat=pulp.LpBinary) for c in range(len(inst.candidates))]
        self.choose: dict[tuple[int, int], pulp.LpVariable] = {}
        self.reads: dict[tuple[int, int], pulp.LpVariable] = {}
        self.peak: pulp.LpVariable | None = None
        self.bytes_scale = 1.0

    def _saves(self) -> Any:
        return pulp.lpSum((cand.save / self.scale) * self.keep[c] for c, cand in enumerate(self.instance.candidates) if cand.save)

    def _live(self, prob: pulp.LpProblem, budget: float | None) -> None:
        inst = self.instance
        peak = self.peak = prob.add_variable("peak", lowBound=0)
        scale = max([1.0, *(c.bytes for c in inst.candidates)])
        alive: dict[int, list[tuple[float, pulp.LpVariable]]] = {t: [] for t in range(1, inst.k + 1)}
        reads_of: dict[int, list[tuple[int, pulp.LpVariable]]] = {}
        for (n, i), read in self.reads.items():
            reads_of.setdefault(inst.ops[n][i].candidate, []).append((inst.times[n], read))
        for c, cand in enumerate(inst.candidates):
            last = max([cand.time, *(t for t, _ in reads_of.get(c, []))])
            for t in range(cand.time, last + 1):
                live = prob.add_variable(f"live_{c}_{t}", lowBound=0, upBound=1)
                if t == cand.time:
                    prob += live >= self.keep[c]
                for at, read in reads_of.get(c, []):
                    if at >= t:
                        prob += live >= read
                alive[t].append((cand.bytes / scale, live))
        for t, terms in alive.items():
            if terms:
                prob += pulp.lpSum(b * v for b, v in terms) <= peak
        if budget is not None:
            prob += peak <= budget / scale
        self.bytes_scale = scale

    @property
    def binaries(self) -> int:
        return len({id(v) for v in [*self.keep, *self.choose.values(), *self.reads.values()]})

    @property
    def value(self) -> float:
        """The solution's objective in the instance's units."""
        return (pulp.value(self.problem.objective) or 0.0) * self.scale

    def solve(self, time_limit: float, gap: float = 0.0) -> tuple[str, bool, str, float]:
        started = time.perf_counter()
        chosen = solver(time_limit, gap=gap)
        self.problem.solve(chosen)
        seconds = time.perf_counter() - started
        status = pulp.LpStatus[self.problem.status]
        solution = self.problem.sol_status
        optimal = solution == pulp.LpSolutionOptimal
        if solution in (pulp.LpSolutionInfeasible, pulp.LpSolutionUnbounded):
            status = "Infeasible"
        elif solution == pulp.LpSolutionNoSolutionFound:
            status = "No solution"
        elif not optimal:
            status = "Time limit"
        return status, optimal, type(chosen).__name__, seconds

    def kept(self) -> set[int]:
        return {c for c, v in enumerate(self.keep) if (v.varValue or 0.0) > 0.5}

    def until(self) -> dict[int, int]:
        """Under a budget, each kept state's last read in the solution: reading it later would
        keep it alive longer than the budget allows."""
        if not self.reads:
            return {}
        inst = self.instance
        last = {c: inst.candidates[c].time for c in self.kept()}
        for (n, i), read in self.reads.items():
            c = inst.ops[n][i].candidate
            if c in last and (read.varValue or 0.0) > 0.5:
                last[c] = max(last[c], inst.times[n])
        return last


class _Flow(_Program):
    """The exact program: how often each op runs (a node not kept runs once per consumer)."""

    def __init__(self, instance: Instance, budget: float | None, peak: bool, upper: float | None = None) -> None:
        super().__init__(instance, upper)
        inst = instance
        most = inst.bounds()
        least = _least_runs(inst) if upper is not None else None
        prob = self.problem
        binary = pulp.LpBinary
        self.runs: dict[tuple[int, int], pulp.LpVariable] = {}
        limited = budget is not None or peak
        needed: list[list[tuple[float, pulp.LpVariable | None]]] = [[] for _ in range(inst.size)]
        for r in inst.roots:
            needed[r].append((1.0, None))
        for c, cand in enumerate(inst.candidates):
            needed[cand.node].append((1.0, self.keep[c]))
        for n, ops in enumerate(inst.ops):
            if most[n] <= 0:
                continue
            computed = [i for i, op in enumerate(ops) if not op.is_load]
            for i, op in enumerate(ops):
                runs = self.runs[(n, i)] = prob.add_variable(f"runs_{n}_{i}", lowBound=0)
                bound = most[n]
                if least is not None and least[n][i] > 0:  # a plan no dearer than `upper` runs it at most this often
                    bound = min(bound, math.floor(upper / least[n][i] * (1 + 1e-9)))  # type: ignore[operator]
                if op.is_load:
                    # a load runs only if its state is kept: every consumer's input is available
                    prob += runs <= bound * self.keep[op.candidate]
                    if limited:
                        read = self.reads[(n, i)] = prob.add_variable(f"reads_{n}_{i}", cat=binary)
                        prob += runs <= bound * read
                        prob += read <= self.keep[op.candidate]
                    continue
                if len(computed) > 1:  # the alternative chosen for the node: one for all its runs
                    choose = self.choose[(n, i)] = prob.add_variable(f"choose_{n}_{i}", cat=binary)
                    prob += runs <= bound * choose
                elif bound < most[n]:
                    prob += runs <= bound
                for child in set(op.children):
                    needed[child].append((float(op.children.count(child)), runs))
            if len(computed) > 1:
                prob += pulp.lpSum(self.choose[(n, i)] for i in computed) <= 1
        for n in range(inst.size):
            if most[n] > 0:
                supply = pulp.lpSum(self.runs[(n, i)] for i in range(len(inst.ops[n])))
                prob += supply == pulp.lpSum(coef if var is None else coef * var for coef, var in needed[n])
        for c, cand in enumerate(inst.candidates):  # a kept state is computed at least once, not loaded
            computed_runs = [self.runs[(cand.node, i)] for i, op in enumerate(inst.ops[cand.node]) if not op.is_load]
            prob += pulp.lpSum(computed_runs) >= self.keep[c]
        scale = self.scale
        cost = pulp.lpSum((inst.ops[n][i].cost / scale) * runs for (n, i), runs in self.runs.items() if inst.ops[n][i].cost) + \
            self._saves()
        if limited:
            self._live(prob, budget)
        prob += self.peak if peak else cost


class _Shared(_Program):
    """The relaxation the exact solve starts with: each op chosen or not (``choose[n,o]``, the
    alternative chosen for node ``n``), paid once however many consumers read the node — as if
    every shared node were kept for free. Its optimum is a lower bound of the exact one; when the
    plan it picks costs no more under recompute-per-use (:class:`CostTable`), that plan is
    optimal."""

    def __init__(self, instance: Instance, budget: float | None, peak: bool, upper: float | None = None) -> None:
        super().__init__(instance, upper)
        inst, prob = instance, self.problem
        # what each node must supply: 1 for a delivery, keep[c] for a candidate, and for each node
        # reading it the sum of that node's ops that read it (one op per node, so at most 1)
        needed: list[list[Any]] = [[] for _ in range(inst.size)]
        for r in inst.roots:
            needed[r].append(1)
        for c, cand in enumerate(inst.candidates):
            needed[cand.node].append(self.keep[c])
        reads: list[list[list[tuple[float, pulp.LpVariable]]]] = [[] for _ in range(inst.size)]  # per reading node
        for n, ops in enumerate(inst.ops):
            readers: dict[int, list[tuple[int, pulp.LpVariable]]] = {}  # child -> the ways of n that read it
            for i, op in enumerate(ops):
                if op.is_load and inst.candidates[op.candidate].node == n:
                    continue  # a node loading its own state: never cheaper here, where a node is paid once
                chosen = self.choose[(n, i)] = prob.add_variable(f"choose_{n}_{i}", cat=pulp.LpBinary)
                if op.is_load:
                    prob += chosen <= self.keep[op.candidate]  # a load only of a kept state
                    self.reads[(n, i)] = chosen
                for child in set(op.children):
                    readers.setdefault(child, []).append((i, chosen))
            for child, ways in readers.items():
                needed[child].append(pulp.lpSum(v for _, v in ways))
                reads[child].append([(float(ops[i].children.count(child)), v) for i, v in ways])
        for n in range(inst.size):
            ways = [self.choose[(n, i)] for i in range(len(inst.ops[n])) if (n, i) in self.choose]
            supply = pulp.lpSum(ways)
            if len(ways) > 1:
                prob += supply <= 1  # one way per node is enough when a node is paid once
            for need in needed[n]:  # every consumer's input is available
                prob += supply >= need
        for c, cand in enumerate(inst.candidates):  # a kept state is computed, not loaded
            prob += pulp.lpSum(self.choose[(cand.node, i)] for i, op in enumerate(inst.ops[cand.node]) if not op.is_load) >= self.keep[c]
        cost = pulp.lpSum((inst.ops[n][i].cost / self.scale) * v for (n, i), v in self.choose.items() if inst.ops[n][i].cost)
        cost += self._rereads(reads, set(inst.roots))
        if budget is not None or peak:
            self._live(prob, budget)
        prob += self.peak if peak else cost + self._saves()

    def _rereads(self, reads: list[list[list[tuple[float, pulp.LpVariable]]]], roots: set[int]) -> Any:
        """What reading a node more than once costs at the least. A node is paid once above, but
        each of its ``R`` reads (deliveries, and the ways of the nodes that read it, with how
        often each reads it) obtains it: recomputed, or loaded. Every obtaining costs at least the
        node's least way (``lower``: its own cost and its inputs' at their least, or a load). So
        the reads cost ``(R - U)·lower`` beyond the way paid, where ``U`` is the node's use (the sum
        of its chosen ways: 1 when any read is, so ``R - 1``), and ``R·lower`` when the node's own
        time point keeps it, since the kept state's computation is then not one of the reads.
        ``R - U`` rather than ``R - 1`` is what makes the LP's bound worth having: a plan spread
        over two alternatives that both read a node has ``R = 1`` and ``U = 1/2``, so half a
        further read is paid, where ``R - 1`` paid none and the bound stayed near the cost of a
        plan that shares every node for free.
        ``lower`` counts every load as possible; but a state is loaded at its own time point only
        if kept, so while no such state below the node is kept (:func:`_least_unkept`), each
        obtaining costs at least ``unkept``, the least way without them: ``(R - U)·unkept``, less
        ``(R_max - 1)·(unkept - lower)`` for each of those states kept, which gives back the
        first bound once any is. All are lower bounds of the exact program's cost (a child's reads
        count the node once, and its extra obtainings are in the node's ``lower``), and they close
        the gap when a node read twice in one time point is kept, or recomputed by its least way —
        without the third, a plan that recomputes a node below one read twice (a join's side, a
        shuffle) is priced as if the node's own state were loaded there, and the bound falls short
        by that recomputation."""
        inst, prob = self.instance, self.problem
        lower = [min(costs, default=0.0) for costs in _least_runs(inst)]
        unkept, same = _least_unkept(inst)
        own = {cand.node: c for c, cand in enumerate(inst.candidates) if cand.time == inst.times[cand.node]}
        ways: list[list[pulp.LpVariable]] = [[] for _ in range(inst.size)]  # each node's chosen ways: its use
        for (m, _), chosen in self.choose.items():
            ways[m].append(chosen)
        extra = []
        for n in range(inst.size):
            most = sum(max(k for k, _ in parent) for parent in reads[n]) + (1 if n in roots else 0)
            kept = own.get(n)
            if lower[n] <= 0 or (most < 2 and kept is None) or not math.isfinite(lower[n]):
                continue
            count = pulp.lpSum(k * v for parent in reads[n] for k, v in parent) + (1 if n in roots else 0)
            weight = lower[n] / self.scale
            more = prob.add_variable(f"rereads_{n}", lowBound=0)
            used = pulp.lpSum(ways[n]) if n not in roots else 1
            if most >= 2:
                prob += more >= weight * (count - used)
                if math.isfinite(unkept[n]) and unkept[n] > lower[n] * (1 + 1e-9):
                    extra_weight = unkept[n] / self.scale - weight
                    prob += more >= (weight + extra_weight) * (count - used) - \
                        extra_weight * (most - 1) * pulp.lpSum(self.keep[c] for c in sorted(same[n]))
            if kept is not None:
                prob += more >= weight * (count - most * (1 - self.keep[kept]))
            extra.append(more)
        return pulp.lpSum(extra)


def solve(instance: Instance, budget: float | None = None, time_limit: float = DEFAULT_TIME_LIMIT,
          upper: float | None = None, known: set[int] | None = None, gap: float = 0.0) -> IlpResult:
    """The cheapest kept set (within ``budget`` bytes kept at once, if given), or with ``gap``
    one proven within that share of the cheapest (``optimal`` then means that).

    The relaxation (:class:`_Shared`) is solved first. Its optimum is a lower bound: when the plan
    it picks costs as much under recompute-per-use, that plan is optimal; when ``upper`` — the
    objective of the plan that keeps ``known``, one known to meet the budget (the greedy's) — is
    no more than the bound, that plan is. Otherwise the exact program (:class:`_Flow`) is solved in
    the time left, bounded by the better of the relaxation's plan and ``upper``, which bounds how
    often any op can run in a plan at least as cheap."""
    started = time.perf_counter()
    tolerance = max(PROOF_TOLERANCE, gap)
    shared = _Shared(instance, budget, peak=False, upper=upper)
    status, optimal, name, _ = shared.solve(time_limit)
    if status in ("Infeasible", "No solution"):  # the relaxation has no plan: neither has the exact program
        return IlpResult(set(), math.inf, False, status, name, time.perf_counter() - started, shared.binaries,
                         shared.problem.numVariables(), shared.problem.numConstraints())
    kept, until = shared.kept(), shared.until()
    objective = CostTable(instance, kept, until).objective()
    if optimal and objective <= shared.value * (1 + tolerance) + 1e-12 and (upper is None or objective <= upper):
        return IlpResult(kept, objective, True, "Optimal", name, time.perf_counter() - started, shared.binaries,
                         shared.problem.numVariables(), shared.problem.numConstraints(), until, "relaxation", gap)
    if optimal and known is not None and upper is not None and upper <= shared.value * (1 + tolerance) + 1e-12:
        return IlpResult(set(known), upper, True, "Optimal", name, time.perf_counter() - started, shared.binaries,
                         shared.problem.numVariables(), shared.problem.numConstraints(), {}, "bound", gap)
    bound = objective if upper is None else min(upper, objective)
    left = time_limit - (time.perf_counter() - started)
    flow = _Flow(instance, budget, peak=False, upper=bound)
    status, optimal, name, _ = flow.solve(max(left, 0.1), gap)
    if status not in ("Infeasible", "No solution"):
        flow_kept, flow_until = flow.kept(), flow.until()
        flow_objective = CostTable(instance, flow_kept, flow_until).objective()
        if flow_objective <= objective or optimal:
            kept, until, objective = flow_kept, flow_until, flow_objective
    return IlpResult(kept, objective, optimal, "Optimal" if optimal else "Time limit", name, time.perf_counter() - started,
                     flow.binaries, flow.problem.numVariables(), flow.problem.numConstraints(), until, "flow", gap)


def smallest_budget(instance: Instance, time_limit: float = DEFAULT_TIME_LIMIT) -> tuple[float, bool]:
    """The least peak of kept bytes any plan needs, and whether it is proven the least (the
    relaxation's plans read the same states as the exact program's, so its least peak is theirs)."""
    model = _Shared(instance, None, peak=True)
    status, optimal, _name, _seconds = model.solve(time_limit)
    if status in ("Infeasible", "No solution") or model.peak is None:
        raise TempuraError("no plan delivers the results, whatever is kept")
    return (model.peak.varValue or 0.0) * model.bytes_scale, optimal
