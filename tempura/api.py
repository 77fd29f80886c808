"""The Python API: a :class:`Session` binds SQL against a catalog and runs tempura's plans.

>>> import tempura
>>> session = tempura.Session(catalog="catalog.yaml")          # doctest: +SKIP
>>> session.sql("SELECT COUNT(*) AS n FROM lineitem").show()   # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tempura.algebra import Query, format_plan
from tempura.catalog import Catalog
from tempura.sql import parse_query, to_spark_sql

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class Session:
    """SQL over a catalog, planned by tempura and computed by Spark.

    ``spark`` is used if given; otherwise the process's session is created on first need
    (:func:`tempura.runtime.get_spark`). Planning alone (``plan``, ``explain``) needs no Spark
    when the catalog declares every table's schema.
    """

    def __init__(
        self, catalog: str | Path | Catalog, spark: SparkSession | None = None, dialect: str = "spark"
    ) -> None:
        self.catalog = catalog if isinstance(catalog, Catalog) else Catalog.load(catalog)
        self.dialect = dialect
        self._spark = spark
        self._registered = False

    @property
    def spark(self) -> SparkSession:
        if self._spark is None:
            from tempura.runtime import get_spark

            self._spark = get_spark()
        if not self._registered:
            self.catalog.register(self._spark)
            self._registered = True
        return self._spark

    def plan(self, text: str) -> Query:
        """The bound logical plan of ``text``."""
        spark = self.spark if self.catalog.needs_spark_for_schemas else self._spark
        return parse_query(text, self.catalog.schemas(spark), self.dialect)

    def explain(self, text: str) -> str:
        """The printed logical plan of ``text``."""
        return format_plan(self.plan(text).plan)

    def spark_sql(self, text: str) -> str:
        """The Spark SQL that tempura runs for ``text``."""
        return to_spark_sql(self.plan(text), pretty=True)

    def sql(self, text: str) -> DataFrame:
        """A DataFrame computed by tempura's plan of ``text`` (not by Spark's planning of it)."""
        from tempura.runtime import execute

        spark = self.spark
        return execute(self.plan(text), spark)
