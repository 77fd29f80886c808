"""Plans reused under exactly the inputs that made them (tempura.scheduler.plan_cache): the key
is the same in every process, changes with every input, and a reused planning's plans are the
plans a fresh planning makes; a damaged file is planned again."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tempura.cost.model import CostConstants
from tempura.optimizer import Resume
from tempura.runtime.storage import as_location, storage_for
from tempura.scheduler import load_spec
from tempura.scheduler.plan_cache import KEEP, PlanCache, canonical, planning_key
from tempura.scheduler.planning import Prepared, plan_spec, planning_inputs, prepare
from tempura.stats import Estimator

SPEC = """\
name: reuse
query: |
  SELECT s.category, SUM(IF(r.cost IS NULL, s.price, -r.cost)) AS gross
  FROM sales s LEFT JOIN returns r ON s.o_id = r.o_id GROUP BY s.category
sources:
  sales:
    path: data/sales
    schema: {o_id: bigint, category: string, price: double, arrived_at: timestamp}
    arrival: {column: arrived_at}
    expected: [0.25, 0.25, 0.25, 0.25]
  returns:
    path: data/returns
    schema: {o_id: bigint, cost: double, arrived_at: timestamp}
    arrival: {column: arrived_at}
    expected: [0.1, 0.3, 0.3, 0.3]
schedule:
  start: "2026-11-22T00:00:00"
  every: 6h
  points: 4
  deliver: last
"""

KEY_OF_SPEC = """
import sys
from tempura.scheduler import load_spec
from tempura.scheduler.planning import planning_inputs, prepare
from tempura.scheduler.plan_cache import planning_key
prepared = prepare(load_spec(sys.argv[1]), None, measure_data=False)
print(planning_key(planning_inputs(prepared, ["auto"], (), "snapshot", None, None, None)))
"""


@pytest.fixture(scope="module")
def spec_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("reuse")
    path = folder / "spec.yaml"
    path.write_text(SPEC, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def prepared(spec_path: Path) -> Prepared:
    return prepare(load_spec(spec_path), None, measure_data=False)


def key_of(prepared: Prepared, **changed: object) -> str | None:
    inputs = planning_inputs(prepared, ["auto"], (), "snapshot", None, None, None)
    return planning_key({**inputs, **changed})


def test_the_key_is_the_same_in_another_process_with_another_hash_seed(spec_path: Path, prepared: Prepared) -> None:
    here = key_of(prepared)
    assert here is not None
    for seed in ("1", "12345"):
        done = subprocess.run([sys.executable, "-c", KEY_OF_SPEC, str(spec_path)], capture_output=True, text=True,
                              env=dict(os.environ, PYTHONHASHSEED=seed), check=True)
        assert done.stdout.strip() == here


def test_every_input_moves_the_key(prepared: Prepared) -> None:
    base = key_of(prepared)
    sales = prepared.estimator.tables("sales")
    more_rows = Estimator(lambda name: dataclasses.replace(sales, rows=sales.rows + 1) if name == "sales"
                          else prepared.estimator.tables(name))
    grown = dataclasses.replace(prepared, estimator=more_rows)
    arrival = prepared.arrival.with_source("returns", dataclasses.replace(
        prepared.arrival.source("returns"), fractions=(0.25, 0.25, 0.25, 0.25)))
    changed = [
        key_of(grown),
        key_of(dataclasses.replace(prepared, arrival=arrival)),
        key_of(prepared, resume=Resume(2)),
        key_of(prepared, constants=dataclasses.replace(CostConstants(), stage=CostConstants().stage * 2)),
        key_of(prepared, methods=["batch"]),
        key_of(prepared, disabled=["select-states"]),
        key_of(prepared, notes=["a note"]),
    ]
    assert None not in changed
    assert len({base, *changed}) == len(changed) + 1


def test_code_cannot_be_written_out_so_a_planning_with_it_is_not_kept() -> None:
    assert planning_key({"fraction": lambda t, a, b: 0.5}) is None
    with pytest.raises(Exception, match="code, not data"):
        canonical(len)
    assert canonical({"b": {2, 1}, "a": 0.1}) == canonical({"a": 0.1, "b": {1, 2}})


def test_a_reused_planning_gives_the_plans_a_fresh_one_makes(tmp_path: Path, prepared: Prepared) -> None:
    folder = as_location(str(tmp_path))
    first = PlanCache(storage_for(folder), folder / "plans")
    planned = plan_spec(prepared, ["auto", "batch"], cache=first)
    assert (first.hits, first.misses) == (0, 1)
    again = PlanCache(storage_for(folder), folder / "plans")  # another process: the folder only
    reused = plan_spec(prepared, ["auto", "batch"], cache=again)
    assert (again.hits, again.misses) == (1, 0)
    fresh = plan_spec(prepared, ["auto", "batch"])
    for method in ("auto", "batch"):
        for got in (reused[method], fresh[method]):
            assert got.to_json()["fragments"] == planned[method].to_json()["fragments"]
            assert got.cost.times == planned[method].cost.times
    reused["auto"].notes.append("changed by its caller")  # what is handed out is a copy
    assert "changed by its caller" not in plan_spec(prepared, ["auto", "batch"], cache=again)["auto"].notes


def test_a_damaged_plan_file_is_planned_again(tmp_path: Path, prepared: Prepared) -> None:
    folder = as_location(str(tmp_path))
    plan_spec(prepared, ["batch"], cache=PlanCache(storage_for(folder), folder / "plans"))
    (kept,) = (tmp_path / "plans").glob("*.plans")
    kept.write_text("not a plan", encoding="utf-8")
    cache = PlanCache(storage_for(folder), folder / "plans")
    plans = plan_spec(prepared, ["batch"], cache=cache)
    assert (cache.hits, cache.misses) == (0, 1)
    assert plans["batch"].fragments


def test_the_folder_keeps_the_last_plannings(tmp_path: Path) -> None:
    folder = as_location(str(tmp_path))
    cache = PlanCache(storage_for(folder), folder / "plans")
    for i in range(KEEP + 3):
        cache.put(f"k{i:02d}", ({"batch": i}, {}))
        os.utime(tmp_path / "plans" / f"k{i:02d}.plans", (1000 + i, 1000 + i))
    kept = sorted(p.stem for p in (tmp_path / "plans").glob("*.plans"))
    assert len(kept) == KEEP and "k00" not in kept and f"k{KEEP + 2:02d}" in kept


def test_a_cache_that_keeps_nothing_plans_every_time(prepared: Prepared) -> None:
    cache = PlanCache(keep=False)  # what tempura bench replanning measures reuse against
    for _ in range(2):
        assert plan_spec(prepared, ["batch"], cache=cache)["batch"].fragments
    assert (cache.hits, cache.misses) == (0, 2)
