"""Keyed reads in the search: a join offers its probed side a probe, a source read or a kept
state's load under it is priced by the buckets the probe's keys touch plus writing the layout,
and the plans the search and the state selection choose that way run on Spark as pruned reads.

Planning cases use the TPC-H statistics at scale 0.01 (``tests/testdata/stats``); the Spark
case is a small standing query whose one fragment reads a catalog under two different probes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlglot import exp

from statsfile import StatsFile
from tempura import tpch
from tempura.algebra import Field, Join, JoinKind, Scan, ScanColumn, Union
from tempura.cost.model import CostConstants
from tempura.cost.vector import Objective
from tempura.memo.properties import Distribution, Probing, Props
from tempura.optimizer import Arrival, Optimizer
from tempura.rules.physical.tvr import KEYED_READ
from tempura.scheduler.history import history_at
from tempura.sql import parse_query
from tempura.standing import StandingQuery
from tempura.stats import Estimator, TableStats
from tempura.tvr import TimePoints
from tempura.tvr.layout import (MIN_BUCKET_BYTES, Probe, bucket_counts, keyed_reads, pruned, scans_of, touched,
                                worth_probing)
from tempura.tvr.plan import MultiTimePlan

QUERIES = Path(tpch.__file__).parent / "data" / "tpch" / "queries"
STATS = Path(__file__).parent / "testdata" / "stats" / "tpch-sf0.01.json"
INT = exp.DataType.build("int")


def scan(table: str, *names: str) -> Scan:
    return Scan(table, tuple(ScanColumn(n, Field(n, INT, True)) for n in names), table)


def eq(a: str, b: str) -> exp.Expr:
    return exp.EQ(this=exp.column(a), expression=exp.column(b))


def test_a_probe_is_an_offer_every_plan_meets() -> None:
    probe = Probing("k", 16.0)
    offered = Props(Distribution.hashed("k"), (), 3, probe)
    assert Props(Distribution.hashed("k")).satisfies(offered)  # a whole read meets it
    assert not Props().satisfies(offered)  # the distribution is still required
    assert offered.at(4) == Props(Distribution.hashed("k"), (), 4, probe)
    assert offered.probed(None) == Props(Distribution.hashed("k"), (), 3)
    assert offered.without_ordering().probe == probe
    assert "probed by k" in str(offered)


def test_a_keyed_read_costs_its_touched_buckets_and_the_layout_costs_its_writing() -> None:
    k = CostConstants()
    options = keyed_reads(1e10, 20e6, 1e6, 8, k)
    assert [n for n, _, _ in options] == [n for n in bucket_counts() if 20e6 >= n * MIN_BUCKET_BYTES]
    for n, cost, upkeep in options:
        hit = touched(n, 8)
        assert cost == pytest.approx(1e10 * hit / n + hit * k.file_open + k.stage)
        assert upkeep == pytest.approx(20e6 * (k.network + k.local_write + k.local_read) + min(n, 1e6) * k.file_open)
    # keys as many as the buckets touch them all: no layout reads less than the whole
    assert all(cost >= 1e10 for _, cost, _ in keyed_reads(1e10, 20e6, 1e6, 1e6, k))
    assert keyed_reads(1e10, 2 * MIN_BUCKET_BYTES - 1, 10, 1, k) == []  # too small for two buckets
    assert worth_probing(100, 1e9) and not worth_probing(5_000, 1e9) and not worth_probing(100, 1e4)


def test_reads_probed_by_two_joins_are_pruned_by_the_keys_of_both() -> None:
    big = scan("big", "k", "v")
    a, b = scan("a", "j"), scan("b", "i")
    plan = Union(Join(JoinKind.SEMI, big, a, eq("k", "j")), Join(JoinKind.SEMI, scan("big", "k", "v"), b, eq("k", "i")),
                 True, tuple(big.schema.fields))
    by_a = Probe("big", "k", a, "j", 10, 1e6, 8e6, 2)
    by_b = Probe("big", "k", b, "i", 20, 1e6, 8e6, 2)
    united = pruned([by_a, by_b], plan)["big"]
    assert united.distinct == 30 and united.key == "j" and list(united.on.schema.names) == ["j"]
    assert isinstance(united.on, Union) and scans_of(united.on, "a") == 1 and scans_of(united.on, "b") == 1
    by_v = Probe("big", "v", b, "i", 20, 1e6, 8e6, 2)
    assert pruned([by_a, by_v], plan) == {}  # one layout cannot serve two columns


def planner() -> Optimizer:
    stats = StatsFile(tpch.SCHEMA)
    stats.tables.update({n: TableStats.from_json(s) for n, s in json.loads(STATS.read_text()).items()})
    return Optimizer(Estimator(stats.lookup), Arrival.uniform(4))


def plan(name: str, method: str, disabled: tuple[str, ...] = ()) -> MultiTimePlan:
    sql = (QUERIES / f"{name}.sql").read_text()
    return planner().plan_standing(parse_query(sql, tpch.SCHEMA), sql, TimePoints((1, 2, 3, 4), (4,)),
                                   Objective.deadline(4), method, disabled=disabled)


@pytest.mark.parametrize("method", ["auto", "ivm"])
def test_the_search_chooses_a_plan_for_the_buckets_its_probes_read(method: str) -> None:
    """Q17's maintained plan probes the part and lineitem snapshots by the changed parts: priced
    whole, the search keeps a plan the layouts phase finds nothing to lay out in; priced by the
    buckets its keys touch, it reads lineitem as a keyed read of its own, the plan lays lineitem
    out, and the whole plan costs less."""
    keyed = plan("q17", method)
    whole = plan("q17", method, (KEYED_READ.name,))
    assert keyed.cost.weighted < whole.cost.weighted * 0.99, (keyed.cost.times, whole.cost.times)
    assert keyed.layouts and not whole.layouts
    views = [r for f in keyed.fragments for r in f.sources if r.keyed]
    assert views and all(r.view.endswith(f"__by_{r.keyed}") for r in views)
    assert any("keyed by" in f.physical for f in keyed.fragments)
    assert not any(r.keyed for f in whole.fragments for r in f.sources)
    for read in views:  # each keyed view is a pruned read of a laid-out source
        fragment = next(f for f in keyed.fragments if read in f.sources)
        assert read.view in pruned(fragment.probes, fragment.plan)
        assert read.scan.table in keyed.layouts


def test_replanning_from_laid_out_states_and_landings_finds_the_first_plans_cost() -> None:
    """Q18's maintained plan reads kept states under probes of several joins: the layouts phase
    lays out each state the search priced a keyed load of, so re-planning from the committed
    states (their layouts with them) finds the same plan at the same cost."""
    from tempura.optimizer import CommittedState, Resume

    sql = (QUERIES / "q18.sql").read_text()
    query = parse_query(sql, tpch.SCHEMA)
    points = TimePoints((1, 2, 3, 4), (4,))
    first = planner().plan_standing(query, sql, points, Objective.deadline(4), "ivm")
    laid = [s for s in first.states if s.layout is not None]
    assert laid, "no state laid out"
    committed = tuple(CommittedState(s.id, s.produced_at, s.key, s.layout) for s in first.states if s.produced_at < 4)
    landed = tuple((source, i, layout) for source, by in first.layouts.items() for i, layout in by.items() if i < 4)
    again = planner().plan_standing(query, sql, points, Objective.deadline(4), "ivm", resume=Resume(4, committed, landed))
    assert again.cost.times[3] == pytest.approx(first.cost.times[3], rel=1e-6)


def test_intervals_that_landed_are_read_by_the_layouts_they_landed_in() -> None:
    """Re-planning Q17 at its last point: told how lineitem's intervals landed (bucketed by part),
    the plan reads them as keyed, at the first plan's cost; told nothing, they landed as they came,
    and no keyed read assumes otherwise: the plan costs what it costs without keyed reads."""
    from tempura.optimizer import CommittedState, Resume

    sql = (QUERIES / "q17.sql").read_text()
    query = parse_query(sql, tpch.SCHEMA)
    points = TimePoints((1, 2, 3, 4), (4,))

    def again(resume: Resume | None, disabled: tuple[str, ...] = ()) -> MultiTimePlan:
        return planner().plan_standing(query, sql, points, Objective.deadline(4), "ivm", disabled=disabled, resume=resume)

    first = again(None)
    assert set(first.layouts) == {"lineitem"}
    committed = tuple(CommittedState(s.id, s.produced_at, s.key, s.layout) for s in first.states if s.produced_at < 4)
    landed = tuple((source, i, layout) for source, by in first.layouts.items() for i, layout in by.items() if i < 4)
    told = again(Resume(4, committed, landed))
    assert told.cost.times[3] == pytest.approx(first.cost.times[3], rel=1e-6)
    assert any("keyed by l_partkey as its intervals landed" in f.physical for f in told.fragments)
    bare = again(Resume(4, committed))
    whole = again(Resume(4, committed), (KEYED_READ.name,))
    assert bare.cost.times[3] == pytest.approx(whole.cost.times[3], rel=1e-6)
    assert bare.cost.times[3] > told.cost.times[3] * 1.01
    assert not any("keyed by" in f.physical for f in bare.fragments)


WATCHED = """\
name: watched
query_file: query.sql
sources:
  catalog:
    path: data/catalog
    format: parquet
    arrival: {column: at}
  list_a:
    path: data/list_a
    format: parquet
    arrival: {column: at}
  list_b:
    path: data/list_b
    format: parquet
    arrival: {column: at}
schedule:
  start: "2026-11-22T00:00:00"
  every: 6h
  points: 2
  deliver: last
objective:
  preset: deadline
late: reject
"""

WATCHED_SQL = """\
SELECT 'a' AS list, k, SUM(v) AS total FROM catalog WHERE k IN (SELECT k FROM list_a) GROUP BY k
UNION ALL
SELECT 'b' AS list, k, SUM(v) AS total FROM catalog WHERE k IN (SELECT k FROM list_b) GROUP BY k
"""


def test_one_read_under_two_probes_reads_the_buckets_of_both(fast_spark: Any, tmp_path: Path) -> None:
    """A catalog of 400,000 rows lands at t1; at t2 two watch lists of a few keys each arrive,
    and the result sums the catalog's rows of each list's keys. Each of the fragment's two
    scans of the catalog is under its own semi join: one pruned read by the keys of both lists,
    every delivery equal to ``spark.sql``'s and the run history showing a fraction read."""
    job = tmp_path / "watched"
    (job / "data").mkdir(parents=True)
    (job / "spec.yaml").write_text(WATCHED)
    (job / "query.sql").write_text(WATCHED_SQL)
    fast_spark.range(400_000).selectExpr(
        "CAST(id % 50000 AS INT) AS k", "id AS v", "TIMESTAMP '2026-11-22 01:00:00' AS at",
    ).write.parquet(str(job / "data" / "catalog"))
    for name, keys in (("list_a", (7, 4242, 31337)), ("list_b", (11, 4242, 49999, 123))):
        rows = " UNION ALL ".join(f"SELECT {k} AS k, TIMESTAMP '2026-11-22 07:00:00' AS at" for k in keys)
        fast_spark.sql(rows).write.parquet(str(job / "data" / name))
    query = StandingQuery(job / "spec.yaml", tmp_path / "work", spark=fast_spark)
    run = query.simulate("batch", check=True)
    assert [p.correct for p in run.points] == [None, True], [p.detail for p in run.points]
    planned = run.results[0].plan
    assert planned is not None and "catalog" in planned.layouts
    last = next(f for f in planned.fragments if f.time == 2 and f.delivers)
    united = [p for v, p in pruned(last.probes, last.plan).items() if v.startswith("catalog")]
    assert united and isinstance(united[0].on, Union), ([(p.view, p.key) for p in last.probes], last.physical)
    rows = [f for f in history_at(tmp_path / "work" / "jobs" / "watched" / "simulate-batch" / "history.sqlite",
                                  read_only=True).fragments() if f["pruned_bytes"]]
    assert rows, "no pruned read recorded"
    assert all(0 < f["pruned_bytes_read"] < f["pruned_bytes"] / 4 for f in rows)
