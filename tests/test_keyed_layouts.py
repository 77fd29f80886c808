"""Keyed layouts of landings: finding the reads a delta probes, choosing how a source lands, and
reading only the buckets a probe's keys fall in — on Spark, every method delivering what
``spark.sql`` gives at every time point, and the run history recording what a pruned read read.

The scenario is ``price_watch``: a catalog of offers kept from before the day (``history:
keep``), then a few products' offers changing each interval; MIN and MAX over deletions make
the maintained plan recompute the changed products from the offers' snapshot, a probe of the
catalog by the changed products.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from sqlglot import exp

from tempura.algebra import Field, Filter, Join, JoinKind, Project, Projection, Scan, ScanColumn, Union
from tempura.cost.model import CostConstants
from tempura.optimizer.layouts import find_probes, interval_gain
from tempura.runtime.layout import PrunedRead, Pruning, probe_buckets, select_buckets, write_laid_out
from tempura.scheduler.calibration import MIN_OWN
from tempura.scheduler.history import history_at
from tempura.scheduler.reference import References
from tempura.standing import METHODS, StandingQuery
from tempura.stats.relation import RelStats
from tempura.tvr.layout import BUCKET, Layout, Probe, leaves, pruned, touched
from tempura.tvr.operators import Consolidate

from scenarios import prepared_scenario

INT = exp.DataType.build("int")


def scan(table: str, *names: str) -> Scan:
    return Scan(table, tuple(ScanColumn(n, Field(n, INT, True)) for n in names), table)


def col(name: str) -> exp.Column:
    return exp.column(name)


def eq(a: str, b: str) -> exp.Expr:
    return exp.EQ(this=col(a), expression=col(b))


def test_touched_buckets_follow_the_formula() -> None:
    """The expected buckets ``N·(1-(1-1/N)^d)`` against keys hashed at random: within a few
    buckets at every density, and every bucket once the keys far outnumber them."""
    rng = random.Random(3)
    for n, d in ((64, 10), (64, 64), (256, 100), (1024, 300), (16, 1000)):
        runs = [len({rng.randrange(n) for _ in range(d)}) for _ in range(200)]
        mean = sum(runs) / len(runs)
        assert abs(mean - touched(n, d)) < 0.02 * n + 1, (n, d, mean, touched(n, d))
    assert touched(16, 1000) == pytest.approx(16.0)
    assert touched(1, 5) == 1.0


def test_leaves_follow_the_key_through_operators_that_a_filter_passes() -> None:
    old, delta = scan("s_old", "k", "v"), scan("s_delta", "k", "v")
    merged = Consolidate(Union(old, delta, True, tuple(old.schema.fields)))
    renamed = Project(Filter(merged, exp.GT(this=col("v"), expression=exp.Literal.number(0))),
                      (Projection(Field("key", INT, True), col("k")), Projection(Field("w", INT, True), col("v"))))
    assert [(s.table, c) for s, c in leaves(renamed, "key")] == [("s_old", "k"), ("s_delta", "k")]
    assert leaves(renamed, "w") == [(old, "v"), (delta, "v")]
    computed = Project(merged, (Projection(Field("key", INT, True), exp.Add(this=col("k"), expression=col("v"))),))
    assert leaves(computed, "key") == []  # a computed key is not the read's column


def test_probes_take_the_side_whose_unmatched_rows_drop_out() -> None:
    big, small = scan("big", "k", "v"), scan("small", "j")
    sizes = {id(big): RelStats(1e6, 8, {}), id(small): RelStats(10, 4, {})}

    def stats(node: Any) -> RelStats | None:
        return sizes.get(id(node))

    for kind, probed in ((JoinKind.SEMI, True), (JoinKind.INNER, True), (JoinKind.RIGHT, True),
                         (JoinKind.LEFT, False), (JoinKind.ANTI, False), (JoinKind.FULL, False)):
        join = Join(kind, big, small, eq("k", "j"))
        sizes[id(join)] = RelStats(10, 8, {})
        found = find_probes(join, stats, 2)
        assert bool(found) == probed, kind
        if found:
            assert (found[0].view, found[0].column, found[0].key, found[0].on) == ("big", "k", "j", small)
    # a semi join's inner side is probed by its outer one, and never the smaller by the bigger
    assert [p.view for p in find_probes(Join(JoinKind.SEMI, small, big, eq("j", "k")), stats, 2)] == ["big"]


def test_a_read_scanned_outside_its_probe_is_not_pruned() -> None:
    big, small = scan("big", "k", "v"), scan("small", "j")
    join = Join(JoinKind.SEMI, big, small, eq("k", "j"))
    probe = Probe("big", "k", small, "j", 10, 1e6, 8e6, 2)
    assert set(pruned([probe], join)) == {"big"}
    again = Union(join, scan("big", "k", "v"), True, tuple(big.schema.fields))
    assert pruned([probe], again) == {}


def test_an_interval_is_laid_out_only_where_its_probes_save_more_than_its_landing_costs() -> None:
    k = CostConstants()
    weights = (0.001, 1.0)
    few = Probe("r", "k", scan("d", "j"), "j", 20, 1e6, 20e6, 2, 5e10)
    many = Probe("r", "k", scan("d", "j"), "j", 50_000, 1e6, 20e6, 2, 5e10)
    assert interval_gain([few], 1, 20e6, 20, 256, weights, k) > 0
    assert interval_gain([many], 1, 20e6, 20, 256, weights, k) < 0  # every bucket is touched
    assert interval_gain([few], 2, 20e6, 20, 256, weights, k) < 0  # landed at the deadline itself
    assert interval_gain([few], 1, 2e3, 20, 256, weights, k) < 0  # too small to split


def test_a_pruned_read_keeps_a_key_in_every_interval_or_in_none(fast_spark: Any, tmp_path: Path) -> None:
    """Two intervals laid out with different bucket counts and one as it landed: the pruned read
    takes the touched buckets' folders, filters every interval by the buckets of every count,
    and so keeps all rows of the probe's keys and, of any other key, all of its rows or none."""
    from pyspark.sql import functions as F

    spark = fast_spark
    rows = spark.range(3000).selectExpr("CAST(id % 500 AS INT) AS k", "id AS v")
    folders = []
    for i, layout in enumerate((Layout("k", 64), Layout("k", 16), None)):
        part = rows.where(f"v % 3 = {i}")
        target = tmp_path / f"i={i + 1}"
        if layout is None:
            part.write.parquet(str(target))
        else:
            write_laid_out(part, layout, target)
        folders.append(target)
    assert sorted(p.name for p in folders[0].iterdir() if p.name.startswith(BUCKET))[:1] == [f"{BUCKET}=0"]
    keys = spark.createDataFrame([(7,), (42,), (499,)], "j INT")  # an INT probe of BIGINT-hashed keys
    layouts = [Layout("k", 64), Layout("k", 16), None]
    found = probe_buckets(keys, "j", [x for x in layouts if x is not None])
    prune = Pruning("k", rows.schema["k"].dataType, found, PrunedRead("r", "k"))
    listings = [{str(f.relative_to(folder)): f.stat().st_size for f in folder.rglob("*.parquet")} for folder in folders]
    chosen = select_buckets([str(f) for f in folders], listings, [prune.usable(x) for x in layouts], found, prune.read)
    read = spark.read.option("recursiveFileLookup", "true").parquet(*chosen).where(prune.where)
    got = {(r.k, r.v) for r in read.collect()}
    kept = {k for k, _ in got}
    assert {7, 42, 499} <= kept
    whole = {(r.k, r.v) for r in rows.where(F.col("k").isin(sorted(kept))).collect()}
    assert got == whole  # each kept key with all its rows, from every interval
    assert len(kept) < 500 and prune.read.buckets_read < prune.read.buckets == 80
    assert 0 < prune.read.bytes_read < prune.read.bytes


@pytest.fixture(scope="module")
def price_watch(fast_spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``price_watch`` at a scale where the plan lays the catalog out (5,000 products)."""
    return prepared_scenario(fast_spark, "price_watch", tmp_path_factory.mktemp("pw"), 0.05)


@pytest.fixture(scope="module")
def price_watch_references(fast_spark: Any, price_watch: Path, tmp_path_factory: pytest.TempPathFactory
                           ) -> References:
    """The scenario's reference results, computed once for every method's run."""
    return StandingQuery(price_watch, tmp_path_factory.mktemp("pw-references"), spark=fast_spark).references()


@pytest.mark.parametrize("method", METHODS)
def test_every_method_delivers_the_reference_over_laid_out_landings(fast_spark: Any, price_watch: Path,
                                                                   price_watch_references: References,
                                                                   tmp_path: Path, method: str) -> None:
    query = StandingQuery(price_watch, tmp_path / "work", spark=fast_spark)
    run = query.simulate(method, check=True, references=price_watch_references)
    assert all(p.correct for p in run.points), [p.detail for p in run.points]
    plan = run.results[0].plan
    assert plan is not None
    if method in ("auto", "ivm"):
        # the catalog, landed at t1, is bucketed by product; the maintained plan probes it
        assert plan.layouts and set(plan.layouts["offers"]) == {1}
        first = run.results[0].manifest
        assert first["landed"]["offers"]["layout"]["column"] == "product_id"
        assert first["layouts"]["offers"]["1"] == first["landed"]["offers"]["layout"]
        job = tmp_path / "work" / "jobs" / "price_watch" / f"simulate-{method}"
        rows = [f for f in history_at(job / "history.sqlite", read_only=True).fragments() if f["pruned_bytes"]]
        assert rows, "no pruned read recorded"
        for f in rows:
            assert 0 < f["pruned_bytes_read"] < f["pruned_bytes"] / 4
            assert 0 < f["pruned_buckets_read"] <= f["estimated_buckets_read"] * 2 + 4
            assert f["pruned_buckets"] % first["landed"]["offers"]["layout"]["buckets"] == 0  # one read or more of it
        # a point planned after two pruned reads has its key estimates calibrated by them (a withdrawn
        # and a posted offer of a product count as two keys in the estimate, one in the read)
        before = [f for f in rows if f["time_index"] < rows[-1]["time_index"]]
        assert len(before) >= MIN_OWN or method == "auto", before  # auto may plan a point without one
        if len(before) >= MIN_OWN:
            last = run.results[-1].plan
            assert last is not None and last.constants.probe_keys < 0.9, last.constants.probe_keys
            assert rows[-1]["probe_keys"] == pytest.approx(last.constants.probe_keys)
            off = [abs(f["estimated_buckets_read"] - f["pruned_buckets_read"]) / f["pruned_buckets_read"] for f in rows]
            assert off[-1] < off[0], off


def test_a_deletion_of_an_absent_row_is_refused_through_a_pruned_check(fast_spark: Any, price_watch: Path,
                                                                       tmp_path: Path) -> None:
    """The landing's check that each deletion removes a row that is there reads only the
    catalog's buckets the deletions fall in; a deletion of an offer never posted still stops
    the time point, naming the file."""
    job = tmp_path / "pw"
    shutil.copytree(price_watch.parent, job)
    bogus = fast_spark.sql("SELECT CAST(999999999 AS BIGINT) AS offer_id, 17 AS product_id, CAST(5 AS BIGINT) AS price, "
                           "TIMESTAMP '2026-11-22 13:00:00' AS changed_at, 'D' AS _op")
    bogus.coalesce(1).write.mode("overwrite").parquet(str(job / "data" / "bogus"))
    for f in (job / "data" / "bogus").glob("*.parquet"):
        f.rename(job / "data" / "offers" / "zz-bogus.parquet")
    query = StandingQuery(job / "spec.yaml", tmp_path / "work", spark=fast_spark)
    with pytest.raises(Exception, match="deletes a row that is not there") as raised:
        query.simulate("ivm")
    assert "zz-bogus.parquet" in str(raised.value)


FREE_SHUFFLES = "cost: {file_open: 0, stage: 0, network: 0, local_write: 0, local_read: 0}\n"


def test_laid_out_states_are_read_at_their_probes_buckets(fast_spark: Any, price_watch: Path, tmp_path: Path) -> None:
    """With shuffles, file opens and stages priced at nothing (``cost:`` in the spec), even this
    small scale's kept result snapshot is worth writing bucketed by product, and the later
    fragments that recompute the changed products read only its buckets they fall in: every
    delivery is still ``spark.sql``'s, and the state's layout is in the manifest."""
    job = tmp_path / "pw"
    shutil.copytree(price_watch.parent, job, ignore=shutil.ignore_patterns("work"))
    spec = job / "spec.yaml"
    spec.write_text(spec.read_text().replace("preset: deadline", "preset: total") + FREE_SHUFFLES)
    run = StandingQuery(spec, tmp_path / "work", spark=fast_spark).simulate("ivm", check=True)
    assert all(p.correct for p in run.points), [p.detail for p in run.points]
    plan = run.results[0].plan
    assert plan is not None
    laid = {s.id: s.layout for s in plan.states if s.layout is not None}
    assert laid, "no state laid out"
    saved = [s for r in run.results for s in r.manifest["states"] if s["id"] in laid]
    assert saved and all(s["layout"] == laid[s["id"]].to_json() for s in saved)
    states = [p for r in run.results for f in r.manifest["fragments"] for p in f.get("pruned_reads", [])
              if p["read"] in laid]
    assert states, "no pruned read of a state"
    assert all(p["bytes_read"] < p["bytes"] and p["buckets_read"] < p["buckets"] for p in states)


def write_sparse_changes(spark: Any, folder: Path) -> None:
    """A catalog of 100,000 offers on 20,000 products from before the day, then two products an
    interval whose offer is withdrawn and replaced: a big report, few changes."""
    catalog = spark.range(100_000).selectExpr(
        "id AS offer_id", "CAST(id DIV 5 AS INT) AS product_id", "CAST(100 + pmod(hash(id, 1), 9900) AS BIGINT) AS price",
        "TIMESTAMP '2026-11-21 12:00:00' AS changed_at", "'I' AS _op")
    changes = []
    for interval in range(4):
        for n in range(2):
            product = (97 + 4111 * (interval * 2 + n)) % 20_000
            at = f"TIMESTAMP '2026-11-22 00:00:00' + make_interval(0, 0, 0, 0, {6 * interval + 1 + n}, 0, 0)"
            changes.append(f"SELECT CAST({product * 5} AS BIGINT), {product}, CAST(100 + pmod(hash(CAST({product * 5} AS BIGINT), 1), 9900) "
                           f"AS BIGINT), {at}, 'D'")
            changes.append(f"SELECT CAST({1_000_000 + interval * 2 + n} AS BIGINT), {product}, CAST({50 + n} AS BIGINT), "
                           f"{at} + INTERVAL 1 SECOND, 'I'")
    changed = spark.sql(" UNION ALL ".join(changes)).toDF(*catalog.columns)
    catalog.unionByName(changed).coalesce(2).write.mode("overwrite").parquet(str(folder / "data" / "offers"))


def test_a_keyed_merge_rewrites_only_the_buckets_its_changes_touch(fast_spark: Any, tmp_path: Path) -> None:
    """``price_watch``'s query delivered as snapshots under ``total`` weights, over a big catalog
    with two products changing an interval: ``ivm`` keeps the report at every time point by
    merging the changed products into the one before, a chain of states each a keyed merge of
    the one before. Laid out by product (with opening a file priced at nothing, ``cost:`` in the
    spec, which only the layouts weigh: this small chain is then worth it), each merge reads and
    rewrites only the buckets the changed products fall in and takes the other buckets over as
    they are: Spark writes fewer rows than the state holds, and every delivery is still
    ``spark.sql``'s."""
    from scenarios import copy_scenario

    spec = copy_scenario("price_watch", tmp_path)
    write_sparse_changes(fast_spark, spec.parent)
    spec.write_text(spec.read_text().replace("preset: deadline", "preset: total")
                    .replace("output: {path: out, mode: delta}\n", "") + "cost: {file_open: 0}\n")
    run = StandingQuery(spec, tmp_path / "work", spark=fast_spark).simulate("ivm", check=True)
    assert all(p.correct for p in run.points), [p.detail for p in run.points]
    plan = run.results[0].plan
    assert plan is not None
    chain = {s.id for s in plan.states if s.key.startswith("SS[") and s.layout is not None}
    assert len(chain) >= 2, [(s.id, s.key, s.layout) for s in plan.states]
    merged = 0
    for result in run.results[1:]:
        for fragment in result.manifest["fragments"]:
            before = [p for p in fragment.get("pruned_reads", []) if p["read"] in chain]
            if not before or "state" not in fragment["output"]:
                continue
            merged += 1
            assert before[0]["buckets_read"] <= 4 < before[0]["buckets"]
            # what Spark wrote of the state (the delivery, when the fragment delivers it too, is all of it)
            state_written = fragment["rows_written"] - (fragment["rows_out"] if "result" in fragment["output"] else 0)
            assert 0 < state_written < fragment["rows_out"] / 4, fragment  # the untouched buckets were shared
    assert merged >= 1


def test_runs_killed_as_a_laid_out_interval_lands_and_as_a_keyed_merge_is_written_are_finished(
        fast_spark: Any, tmp_path: Path) -> None:
    """The keyed merges above, run by ``tempura run`` and killed twice (``kill -9``, each a
    subprocess): once the catalog's interval 1 is in place bucket by bucket but before ``t1``
    commits, and then, run again, while ``t2``'s merged report is written under the pending
    folder, its untouched buckets already shared with the ``t1`` state. Run once more, the day
    is finished: interval 1 is laid out, each merge rewrote only the buckets its changes touch
    (the state before stayed whole), and every time point's delivery is ``spark.sql``'s."""
    import json

    from benchmarks import faults
    from scenarios import copy_scenario
    from tempura.runtime import compare_results, spark_rows
    from tempura.scheduler.reference import reference

    spec_path = copy_scenario("price_watch", tmp_path)
    write_sparse_changes(fast_spark, spec_path.parent)
    spec_path.write_text(spec_path.read_text().replace("preset: deadline", "preset: total")
                         .replace("output: {path: out, mode: delta}\n", "")
                         + f"cost: {{file_open: 0}}\nspark: {json.dumps(faults.SHORT_LIVED_SPARK)}\n")
    trial = faults.Trial(faults.Scenario("price_watch", spec_path.parent, tmp_path), "spec")  # the spec itself
    store, cycle = trial.store(), trial.cycle()
    landed = faults.run_subprocess(trial.run_args("ivm", 1), "landed@t1")
    assert landed.code == -9, f"not killed at landed@t1: {landed.last_lines()}"
    assert not store.manifest_path(cycle.label, 1).exists()
    assert any(p.name.startswith(BUCKET) for p in store.landing_interval(cycle.label, "offers", 1).iterdir())
    merging = faults.run_subprocess(trial.run_args("ivm", 2), "state-written@t2")
    assert merging.code == -9, f"not killed at state-written@t2: {merging.last_lines()}"
    assert store.manifest_path(cycle.label, 1).exists() and not store.manifest_path(cycle.label, 2).exists()
    pending = store.pending(cycle.label) / "states"
    assert any(p.name.startswith(BUCKET) for folder in pending.iterdir() for p in folder.iterdir()), "no keyed write"
    again = faults.run_in_process(trial.run_args("ivm"))
    assert again.code == 0 and not again.exception, again.last_lines()
    spec = trial.spec()
    for index in range(1, 5):
        found = fast_spark.read.parquet(str(store.cycle_dir(cycle.label) / "results" / f"t{index:03d}"))
        outcome = compare_results(spark_rows(reference(fast_spark, spec, cycle, index)), [tuple(r) for r in found.collect()])
        assert outcome.equal, f"t{index}: {outcome.reason}"
    assert store.manifest(cycle.label, 1)["landed"]["offers"]["layout"]["column"] == "product_id"  # type: ignore[index]
    merges = [p for i in (2, 3, 4) for f in store.manifest(cycle.label, i)["fragments"]  # type: ignore[index]
              for p in f.get("pruned_reads", []) if "state" in f["output"]]
    assert merges and all(p["buckets_read"] < p["buckets"] for p in merges), merges
