"""The cost model: CPU, IO and network cost of Spark's operators, and streaming NodeStats."""

from tempura.cost.model import INFINITE, ZERO, Cost, CostConstants, format_time
from tempura.cost.operators import SparkCosts
from tempura.cost.plan import NodeCost, PlanCost
from tempura.cost.streaming import NodeStats, StreamCost, StreamingEstimator

__all__ = [
    "Cost",
    "CostConstants",
    "INFINITE",
    "NodeCost",
    "NodeStats",
    "PlanCost",
    "SparkCosts",
    "StreamCost",
    "StreamingEstimator",
    "ZERO",
    "format_time",
]
