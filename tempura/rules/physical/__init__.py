"""Physical rules for Spark: join algorithms and build sides, split hash aggregation, top-k,
and the exchange and sort enforcers (:class:`SparkImplementer`)."""

from tempura.rules.physical.aggregate import PartialAggregate
from tempura.rules.physical.implementer import RULES, SparkImplementer

__all__ = ["RULES", "PartialAggregate", "SparkImplementer"]
