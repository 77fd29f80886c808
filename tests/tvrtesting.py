"""Running multi-time-point plans in tests: each distinct plan once (methods often agree)."""

from __future__ import annotations

from typing import Any

_RUNS: dict[tuple[Any, ...], Any] = {}


def plan_key(plan: Any) -> tuple[Any, ...]:
    """What makes two plans run the same: output mode and every fragment's SQL and role."""
    return (plan.output, tuple((f.time, f.delivers, f.keeps, f.sql()) for f in plan.fragments))


def run_plan(executor: Any, plan: Any, scope: object = None) -> Any:
    """``executor.run(plan)``, once per distinct plan within ``scope`` (the sources' identity)."""
    key = (id(scope) if scope is not None else id(executor), plan_key(plan))
    if key not in _RUNS:
        _RUNS[key] = executor.run(plan)
    return _RUNS[key]


def assert_methods_match_reference(spark: Any, sql: str, sources: dict[str, Any], plans: dict[str, Any], times: tuple[int, ...]) -> None:
    """Every method's plan, run on Spark, delivers what ``spark.sql(sql)`` returns on the
    snapshot at every time point in ``times``."""
    from tempura.runtime import compare_results
    from tempura.runtime.multitime import PlanExecutor, reference

    expected = {v: reference(spark, sql, sources, v) for v in times}
    with PlanExecutor(spark, sources) as executor:
        for method, plan in plans.items():
            run = run_plan(executor, plan)
            for v in times:
                assert compare_results(expected[v], run.results[v]), f"{method} at t{v}: {run.results[v]} != {expected[v]}"
