"""Physical rules for Spark: join algorithms and build sides, split hash aggregation, top-k,
and the exchange and sort enforcers (:class:`SparkImplementer`), each a named
:class:`~tempura.rules.base.Implementation`."""

from tempura.rules.physical.implementer import ENFORCERS, IMPLEMENTATIONS, RULES, SparkImplementer

__all__ = ["ENFORCERS", "IMPLEMENTATIONS", "RULES", "SparkImplementer"]
