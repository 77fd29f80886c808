"""Multi-query optimization over time: which intermediate results to keep, and when.

A multi-time-point plan pays off when it keeps the right intermediate results — a partial
aggregate computed early, a join input a later delta probes, a snapshot several later deltas
read — each with a save cost, a load cost and possibly several consumers. This package chooses
them (the Tempura seed's MQO step):

- :mod:`~tempura.mqo.instance`: the problem, an AND-OR DAG of nodes (a result at a time point),
  ops (ways to obtain it) and candidates (nodes that may be kept);
- :mod:`~tempura.optimizer.choosers` (above this package) builds the instance from a standing query's memo and search, and
  maps the choice back to the plan's fragments and states;
- :mod:`~tempura.mqo.costs`: cost propagation — the best plan for a kept set, with staged
  changes;
- :mod:`~tempura.mqo.greedy`: the seed's Algorithm 1 with lazy re-evaluation;
- :mod:`~tempura.mqo.ilp`: the exact mixed-integer program, solved with HiGHS through PuLP;
- :mod:`~tempura.mqo.select`: which of them decides, budgets, and the error for a budget no plan
  meets;
- :mod:`~tempura.mqo.synthetic`: random instances for the tests and the benchmark.
"""

from tempura.mqo.costs import CostTable
from tempura.mqo.greedy import GreedyResult, greedy
from tempura.mqo.ilp import IlpResult, smallest_budget, solve
from tempura.mqo.instance import Candidate, Instance, Op
from tempura.mqo.select import BudgetError, MqoOptions, Selection, select

__all__ = [
    "BudgetError",
    "Candidate",
    "CostTable",
    "GreedyResult",
    "IlpResult",
    "Instance",
    "MqoOptions",
    "Op",
    "Selection",
    "greedy",
    "select",
    "smallest_budget",
    "solve",
]
