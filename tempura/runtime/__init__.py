"""Running plans on Spark: the session factory, plan execution and result comparison."""

from tempura.runtime.compare import Comparison, compare_results
from tempura.runtime.executor import BroadcastFallback, SparkPlanning, execute, run_with_fallback, spark_own_planning, spark_rows
from tempura.runtime.spark import DEFAULT_CONF, MASTER_ENV, check_java, get_spark

__all__ = ["BroadcastFallback", "Comparison", "DEFAULT_CONF", "MASTER_ENV", "check_java", "SparkPlanning", "compare_results", "execute", "get_spark", "run_with_fallback", "spark_own_planning", "spark_rows"]
