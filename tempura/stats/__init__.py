"""Statistics: the model, collection through Spark, storage, and cardinality estimation."""

from tempura.stats.estimate import Estimator
from tempura.stats.model import ColumnStats, Histogram, HistogramBin, TableStats
from tempura.stats.relation import RelStats
from tempura.stats.store import StatsCatalog, StatsStore

__all__ = [
    "ColumnStats",
    "Estimator",
    "Histogram",
    "HistogramBin",
    "RelStats",
    "StatsCatalog",
    "StatsStore",
    "TableStats",
]
