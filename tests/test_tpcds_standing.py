"""TPC-DS queries as standing queries on Spark: the facts arrive by date key over 4 time points,
the dimensions at the first; under every method the planner offers, every delivered time point
equals ``spark.sql`` on that snapshot (``tempura tpcds-check --standing`` runs all 99). q84 reads
dimensions whose deltas are empty after the first time point, which Spark's own plan validation
rejected (``FRAGILE_RULES``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tempura import tpcds

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def tpcds_session(fast_spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    """TPC-DS at scale 0.01 with statistics of the tables the checked queries read."""
    from tempura.api import Session

    catalog = tpcds.generate(0.01, tmp_path_factory.mktemp("tpcds-standing") / "sf0.01")
    session = Session(catalog, spark=fast_spark, workdir=catalog.parent / "work")
    from benchmarks.tpcds_check import tables_read

    session.analyze(tables_read(QUERIES), histograms=False)
    return session, catalog.parent


# a store-sales star join with an aggregate; a window over an aggregate's output; sales joined
# with their returns (the returns arrive after their sales)
QUERIES = ["q42", "q12", "q50", "q84"]


def test_facts_arrive_over_four_time_points_and_dimensions_at_the_first(tpcds_session: tuple[Any, Path]) -> None:
    from benchmarks.tpcds_standing import ARRIVAL, TIMES, sources

    session, data_dir = tpcds_session
    data = sources(session.spark, data_dir, ["store_sales", "item"])
    counts = {row[0]: row[1] for row in data["store_sales"].frame.groupBy(ARRIVAL).count().collect()}
    assert sorted(counts) == list(TIMES) and min(counts.values()) > 0
    assert {row[0] for row in data["item"].frame.select(ARRIVAL).distinct().collect()} == {1}


@pytest.mark.parametrize("name", QUERIES)
def test_every_method_equals_spark_at_every_time_point(tpcds_session: tuple[Any, Path], name: str) -> None:
    from benchmarks.tpcds_standing import check_standing

    session, data_dir = tpcds_session
    outcome = check_standing(session.spark, data_dir, session.stats.lookup, name)
    assert outcome.status == "equal", outcome
    assert "auto" in outcome.methods and len(outcome.methods) >= 5
    assert outcome.non_empty
