"""The Python API: a :class:`Session` binds SQL against a catalog and runs tempura's plans.

>>> import tempura
>>> session = tempura.Session(catalog="catalog.yaml")          # doctest: +SKIP
>>> session.sql("SELECT COUNT(*) AS n FROM lineitem").show()   # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from tempura.algebra import Query, format_plan
from tempura.catalog import Catalog
from tempura.cost import CostConstants, PlanCost
from tempura.optimizer.explain import StatsExplainer
from tempura.optimizer import Optimizer, PlannedQuery
from tempura.runtime.executor import SparkPlanning, analyzed_types, spark_result
from tempura.runtime.storage import location, storage_for
from tempura.sql import parse_query, to_spark_sql
from tempura.stats import Estimator, StatsCatalog, StatsStore

DEFAULT_WORKDIR = ".tempura"

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from tempura.stats.collect import ProgressCallback
    from tempura.stats.model import TableStats


class Session:
    """SQL over a catalog, planned by tempura and computed by Spark.

    ``spark`` is used if given; otherwise the process's session is created on first need
    (:func:`tempura.runtime.get_spark`). Planning alone (``plan``, ``explain``) needs no Spark
    when the catalog declares every table's schema.
    """

    def __init__(
        self,
        catalog: str | Path | Catalog,
        spark: SparkSession | None = None,
        dialect: str = "spark",
        workdir: str | Path = DEFAULT_WORKDIR,
        cost_constants: CostConstants | None = None,
        spark_planning: SparkPlanning | None = None,
    ) -> None:
        self.catalog = catalog if isinstance(catalog, Catalog) else Catalog.load(catalog)
        self.dialect = dialect
        self.workdir = location(workdir)
        self.cost_constants = cost_constants or CostConstants()
        self.spark_planning = spark_planning or SparkPlanning()
        self._spark = spark
        self._registered = False
        self._stats: StatsCatalog | None = None

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
        """The bound logical plan of ``text``; once Spark runs, under Spark's names and types of the
        query (:func:`~tempura.runtime.executor.spark_result`)."""
        spark = self.spark if self.catalog.needs_spark_for_schemas or self._spark is not None else None
        describe = analyzed_types(spark) if spark is not None else None  # Spark types what sqlglot cannot, once it runs
        result = spark_result(spark, text, self.dialect) if spark is not None else None
        analyze = (lambda part: spark_result(spark, part)) if spark is not None else None
        return parse_query(text, self.catalog.schemas(spark), self.dialect, describe, result, analyze)

    def explain(self, text: str) -> str:
        """The printed logical plan of ``text``."""
        return format_plan(self.plan(text).plan)

    @property
    def stats(self) -> StatsCatalog:
        """The statistics the estimator uses: those ``tempura analyze`` stored under the
        workdir, else defaults from file sizes."""
        if self._stats is None:
            spark = self.spark if self.catalog.needs_spark_for_schemas else self._spark
            store = StatsStore(self.workdir, storage_for(self.workdir, spark))
            self._stats = StatsCatalog(self.catalog, store, self.catalog.schemas(spark), spark)
        return self._stats

    def explainer(self) -> StatsExplainer:
        """Estimates and costs for plans of this session (fresh caches each call)."""
        estimator = Estimator(self.stats)
        return StatsExplainer(estimator, PlanCost(estimator, self.cost_constants))

    def explain_stats(self, text: str) -> str:
        """The plan of ``text`` with estimated rows, size and cost on every operator."""
        return self.explainer().text(self.plan(text))

    def analyze(self, tables: list[str] | None = None, histograms: bool = True, progress: ProgressCallback | None = None) -> dict[str, TableStats]:
        """Collect statistics of ``tables`` (all by default) through Spark and store them."""
        from tempura.stats.collect import analyze_tables

        names = tables or sorted(self.catalog.tables)
        store = StatsStore(self.workdir, storage_for(self.workdir, self.spark))
        result = analyze_tables(self.spark, self.catalog, names, store, histograms, progress)
        self._stats = None
        return result

    def optimize(self, text: str, disabled: Iterable[str] = (), trace: bool = False) -> PlannedQuery:
        """The cost-based plan of ``text``: join order, algorithms, and how they were found."""
        return Optimizer(Estimator(self.stats), constants=self.cost_constants).plan(self.plan(text), disabled, trace)

    def spark_sql(self, text: str) -> str:
        """The Spark SQL that tempura runs for ``text`` (its join order, with join hints)."""
        planned = self.optimize(text)
        return to_spark_sql(planned.query, pretty=True, hints=planned.hints)

    def sql(self, text: str, disabled: Iterable[str] = ()) -> DataFrame:
        """A DataFrame computed by tempura's plan of ``text`` (not by Spark's planning of it)."""
        from tempura.runtime import execute

        spark = self.spark
        planned = self.optimize(text, disabled)
        return execute(planned.query, spark, planned.hints, self.spark_planning)
