"""The optimizer: one driver over named phases (:mod:`~tempura.optimizer.phases`) for one-off
and standing queries, extraction of standing plans into fragments and kept states, the plans of
every incremental method side by side, and EXPLAIN.

- :class:`Optimizer` — ``plan`` (one-off) and ``plan_standing`` (over a cycle's time points);
- :func:`plan_methods` — every method's plan, and ``auto``'s pick;
- :class:`Arrival`, :class:`Resume`, :class:`CommittedState` — what a standing planning is given.
"""

from tempura.optimizer.keys import CommittedState, Resume
from tempura.optimizer.methods import AUTO_MARGIN, FORCED, METHODS, best_of, plan_methods
from tempura.optimizer.optimizer import Arrival, Optimizer, check_names
from tempura.optimizer.phases import JOIN_ORDER_LIMIT, ONE_OFF, PHASES, STANDING
from tempura.optimizer.plans import JoinHint, PlannedQuery

__all__ = ["AUTO_MARGIN", "FORCED", "JOIN_ORDER_LIMIT", "METHODS", "ONE_OFF", "PHASES", "STANDING", "Arrival", "CommittedState",
           "JoinHint", "Optimizer", "PlannedQuery", "Resume", "best_of", "check_names", "plan_methods"]
