"""The cost model: CPU, IO and network cost of Spark's operators, and streaming NodeStats."""

from tempura.cost.model import INFINITE, ZERO, Cost, CostConstants, format_time
from tempura.cost.operators import SparkCosts
from tempura.cost.plan import NodeCost, PlanCost
from tempura.cost.vector import CostVector, Objective
from tempura.cost.streaming import NodeStats, StreamCost, StreamingEstimator

__all__ = [
    "Cost",
    "CostConstants",
    "CostVector",
    "INFINITE",
    "NodeCost",
    "NodeStats",
    "Objective",
    "PlanCost",
    "SparkCosts",
    "StreamCost",
    "StreamingEstimator",
    "ZERO",
    "format_time",
]
