"""The optimizer's pipeline and its rule registry: phases run in order, are timed and recorded,
and are disabled by name like rules; every rule is one named unit with a family, a pattern and
its algebra, and one check refuses an unknown name for every engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from statsfile import StatsFile
from tempura import tpch
from tempura.cli import main
from tempura.cost.vector import Objective
from tempura.errors import TempuraError
from tempura.optimizer import ONE_OFF, PHASES, STANDING, Arrival, Optimizer
from tempura.rules.registry import FAMILIES, REGISTRY
from tempura.rules.tvr import RULES as TVR_RULES
from tempura.sql import parse_query
from tempura.stats import Estimator, TableStats
from tempura.tvr import TimePoints
from tempura.tvr.plan import MultiTimePlan

QUERIES = Path(tpch.__file__).parent / "data" / "tpch" / "queries"
STATS = Path(__file__).parent / "testdata" / "stats" / "tpch-sf0.01.json"


def estimator() -> Estimator:
    stats = StatsFile(tpch.SCHEMA)
    stats.tables.update({n: TableStats.from_json(s) for n, s in json.loads(STATS.read_text()).items()})
    return Estimator(stats.lookup)


def standing(name: str, disabled: tuple[str, ...] = (), k: int = 4) -> MultiTimePlan:
    sql = (QUERIES / f"{name}.sql").read_text()
    return Optimizer(estimator(), Arrival.uniform(k)).plan_standing(
        parse_query(sql, tpch.SCHEMA), sql, TimePoints(tuple(range(1, k + 1))), Objective.deadline(k), "auto", disabled)


def test_every_rule_is_one_named_unit_with_family_pattern_and_algebra() -> None:
    infos = REGISTRY.infos()
    assert len({i.name for i in infos}) == len(infos)
    assert {i.family for i in infos} == set(FAMILIES)
    for info in infos:
        assert info.pattern and info.doc, info
    assert not set(PHASES) & set(REGISTRY.names()), "a phase and a rule share a name"
    assert [r.name for r in TVR_RULES] == REGISTRY.names("tvr")
    groups = {i.group for i in REGISTRY.infos("tvr")}
    assert {"scan", "join", "outer join", "aggregate"} <= groups  # grouped by operator family


def test_one_check_refuses_unknown_names_with_the_closest_one() -> None:
    query = parse_query("SELECT 1 AS x", tpch.SCHEMA)
    for attempt in (lambda: Optimizer(estimator()).plan(query, ["join-comute"]),
                    lambda: standing("q01", ("tvr-delta-joins",))):
        with pytest.raises(TempuraError) as raised:
            attempt()
        assert str(raised.value).startswith("unknown rule(s): ")
        assert "did you mean" in str(raised.value)


def test_a_one_off_plan_records_each_phase_in_order() -> None:
    query = parse_query((QUERIES / "q05.sql").read_text(), tpch.SCHEMA)
    planned = Optimizer(estimator()).plan(query)
    assert [p.name for p in planned.phases] == ONE_OFF.names
    assert all(p.ran and p.seconds >= 0 for p in planned.phases)
    explored = next(p for p in planned.phases if p.name == "explore")
    assert explored.note.endswith(f"{planned.report.rule_firings} rule firings"), explored.note
    unexplored = Optimizer(estimator()).plan(query, ["explore"])
    assert not next(p for p in unexplored.phases if p.name == "explore").ran
    assert unexplored.memo.size()[1] < planned.memo.size()[1]  # the written join order only
    with pytest.raises(TempuraError, match="the implement phase cannot be disabled"):
        Optimizer(estimator()).plan(query, ["implement"])


def test_a_standing_plan_times_every_phase_and_disabling_one_changes_what_it_does() -> None:
    plan = standing("q03")
    assert list(plan.search["phase_seconds"]) == STANDING.names
    assert plan.search["seconds"] == pytest.approx(sum(plan.search["phase_seconds"].values()), abs=1e-3)
    assert plan.search["copied"] > 0
    full = standing("q03", ("copy",))
    assert full.search["copied"] == 0 and full.search["phase_notes"]["copy"].startswith("the expand phase")
    unselected = standing("q03", ("select-states",))
    assert unselected.selector == "off" and "mqo" not in unselected.search


def test_a_disabled_implementation_leaves_the_plan() -> None:
    query = parse_query((QUERIES / "q03.sql").read_text(), tpch.SCHEMA)
    planned = Optimizer(estimator()).plan(query, ["broadcast-hash-join", "shuffled-hash-join"])
    operators = {n.operator for n in planned.physical.walk()}
    assert "BroadcastHashJoin" not in operators and "ShuffledHashJoin" not in operators
    assert "SortMergeJoin" in operators
    with pytest.raises(TempuraError, match="no physical plan"):
        Optimizer(estimator()).plan(query, ["hash-aggregate"])


def test_tempura_rules_lists_every_phase_and_rule() -> None:
    result = CliRunner().invoke(main, ["rules", "--format", "json"])
    assert result.exit_code == 0, result.output
    listed = json.loads(result.output)
    assert [r["name"] for r in listed["rules"]] == REGISTRY.names()
    assert [p["name"] for p in listed["phases"]["standing"]] == STANDING.names
    text = CliRunner().invoke(main, ["rules", "--family", "tvr"]).output
    assert all(name in text for name in REGISTRY.names("tvr"))


def test_a_standing_plannings_memo_is_freed_without_the_garbage_collector(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dropping a standing planning frees its memos by reference counting alone: nothing holds
    them in a reference cycle (which would leave them to a collector pass over every object)."""
    import gc
    import weakref

    from tempura.memo import memo as memo_module

    made: list[weakref.ref[memo_module.Memo]] = []
    init = memo_module.Memo.__init__

    def tracked(self: memo_module.Memo, *args: object) -> None:
        init(self, *args)  # type: ignore[arg-type]
        made.append(weakref.ref(self))

    monkeypatch.setattr(memo_module.Memo, "__init__", tracked)
    enabled = gc.isenabled()
    gc.disable()
    try:
        plan = standing("q03")
        assert plan.fragments and made
        assert [ref for ref in made if ref() is not None] == []
    finally:
        if enabled:
            gc.enable()
