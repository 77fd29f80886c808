"""The exact state selection: a mixed-integer program over the instance, solved through PuLP.

Variables, for an :class:`~tempura.mqo.instance.Instance`:

- ``keep[c]``, binary: candidate ``c`` is kept — computed and saved at its time point;
- ``choose[n,o]``, binary: op ``o`` is the alternative chosen to compute node ``n`` (a node is
  one group under one property at one time point; at most one alternative each);
- ``runs[n,o]``, continuous: how many times op ``o`` of node ``n`` runs (a node that is not kept
  is recomputed by each consumer, so a shared node may run more than once); for a load op, how
  many times the state is read.

Constraints:

- each node runs as often as its consumers need it: ``Σ_o runs[n,o]`` equals the number of
  deliveries it is, plus one if it is kept, plus ``runs`` of every op reading it;
- an op runs only if chosen (``runs ≤ M·choose``, ``M`` the most times any plan can run the node),
  and a load only if its candidate is kept — every consumer's inputs are available when it runs;
- a kept node is computed, not loaded, at least once.

The objective is ``Σ cost·runs + Σ save·keep``, the same objective the greedy's cost propagation
evaluates, so the two are comparable and the ILP's optimum is never above the greedy's.

With a **budget** on kept bytes, binary ``reads[n,c]`` marks a node loading ``c``, and
``live[c,t]`` a state still needed at time point ``t`` (from its time point to its last read);
at every time point the kept bytes alive must fit. :func:`smallest_budget` minimises that peak
instead: what an unmeetable budget's error reports.

The solver is HiGHS through ``highspy`` (:class:`pulp.HiGHS`); without it, an installed CBC
(``COIN_CMD``), then the CBC that older PuLP versions bundle. Costs are scaled to the largest
one before solving, so that the solver's tolerances mean the same on every instance.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import pulp

from tempura.errors import TempuraError
from tempura.mqo.costs import CostTable
from tempura.mqo.instance import Instance

DEFAULT_TIME_LIMIT = 30.0
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


class NoSolver(TempuraError):
    """No MILP solver is installed."""


def solver(time_limit: float = DEFAULT_TIME_LIMIT, preferred: tuple[str, ...] = SOLVERS) -> Any:
    """The first available solver of ``preferred``, exact to the optimum (no relative gap)."""
    for name in preferred:
        if name == "HiGHS":
            candidate = pulp.HiGHS(msg=False, timeLimit=time_limit, gapRel=1e-6, threads=1)
        elif name in ("COIN_CMD", "PULP_CBC_CMD") and hasattr(pulp, name):
            candidate = getattr(pulp, name)(msg=False, timeLimit=time_limit, gapRel=0.0)
        else:
            continue
        if candidate.available():
            return candidate
    raise NoSolver(f"no MILP solver is available (tried {', '.join(preferred)}): install highspy")


class _Model:
    """The PuLP problem for one instance."""

    def __init__(self, instance: Instance, budget: float | None, peak: bool) -> None:
        self.instance = instance
        inst = instance
        self.scale = max([1e-12, *(op.cost for ops in inst.ops for op in ops), *(c.save for c in inst.candidates)])
        most = inst.bounds()
        prob = pulp.LpProblem("tempura_states", pulp.LpMinimize)
        binary = pulp.LpBinary
        self.keep = [prob.add_variable(f"keep_{c}", cat=binary) for c in range(len(inst.candidates))]
        self.choose: dict[tuple[int, int], pulp.LpVariable] = {}
        self.runs: dict[tuple[int, int], pulp.LpVariable] = {}
        self.reads: dict[tuple[int, int], pulp.LpVariable] = {}
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
                if op.is_load:
                    # a load runs only if its state is kept: every consumer's input is available
                    prob += runs <= most[n] * self.keep[op.candidate]
                    if limited:
                        read = self.reads[(n, i)] = prob.add_variable(f"reads_{n}_{i}", cat=binary)
                        prob += runs <= most[n] * read
                        prob += read <= self.keep[op.candidate]
                    continue
                if len(computed) > 1:  # the alternative chosen for the node: one for all its runs
                    choose = self.choose[(n, i)] = prob.add_variable(f"choose_{n}_{i}", cat=binary)
                    prob += runs <= most[n] * choose
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
            pulp.lpSum((cand.save / scale) * self.keep[c] for c, cand in enumerate(inst.candidates) if cand.save)
        if limited:
            self.peak = prob.add_variable("peak", lowBound=0)
            self._live(prob, budget)
        prob += self.peak if peak else cost
        self.problem = prob

    def _live(self, prob: pulp.LpProblem, budget: float | None) -> None:
        inst = self.instance
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
                prob += pulp.lpSum(b * v for b, v in terms) <= self.peak
        if budget is not None:
            prob += self.peak <= budget / scale
        self.bytes_scale = scale

    @property
    def binaries(self) -> int:
        return len(self.keep) + len(self.choose) + len(self.reads)

    def solve(self, time_limit: float) -> tuple[str, bool, str, float]:
        started = time.perf_counter()
        chosen = solver(time_limit)
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
            if c in last and (self.runs[(n, i)].varValue or 0.0) > 0.5:
                last[c] = max(last[c], inst.times[n])
        return last


def solve(instance: Instance, budget: float | None = None, time_limit: float = DEFAULT_TIME_LIMIT) -> IlpResult:
    """The cheapest kept set (within ``budget`` bytes kept at once, if given)."""
    model = _Model(instance, budget, peak=False)
    status, optimal, name, seconds = model.solve(time_limit)
    if status in ("Infeasible", "No solution"):
        return IlpResult(set(), math.inf, False, status, name, seconds, model.binaries,
                         model.problem.numVariables(), model.problem.numConstraints())
    kept, until = model.kept(), model.until()
    table = CostTable(instance, kept, until)
    return IlpResult(kept, table.objective(), optimal, status, name, seconds, model.binaries,
                     model.problem.numVariables(), model.problem.numConstraints(), until)


def smallest_budget(instance: Instance, time_limit: float = DEFAULT_TIME_LIMIT) -> tuple[float, bool]:
    """The least peak of kept bytes any plan needs, and whether it is proven the least."""
    model = _Model(instance, None, peak=True)
    status, optimal, _name, _seconds = model.solve(time_limit)
    if status in ("Infeasible", "No solution"):
        raise TempuraError("no plan delivers the results, whatever is kept")
    return (model.peak.varValue or 0.0) * model.bytes_scale, optimal
