"""State selection on hand-made instances with known optima, and on random ones: the greedy, the
ILP, cost propagation, pruning and budgets."""

from __future__ import annotations

import math

import pytest

from tempura.errors import TempuraError
from tempura.mqo import BudgetError, Candidate, CostTable, Instance, MqoOptions, Op, greedy, select, solve
from tempura.mqo.ilp import NoSolver, _Shared, smallest_budget, solver
from tempura.mqo.instance import keep_times, prune
from tempura.mqo.synthetic import random_instance

EPS = 1e-6


def seed_example(w1: float, w2: float) -> Instance:
    """The Tempura seed's example: a result needed at t2 costs 10 to compute, 5 to save and 4
    to load; computed at t1 and kept, or computed at t2."""
    inst = Instance(2)
    at1 = inst.add_node(1, "R@t1")
    at2 = inst.add_node(2, "R@t2")
    inst.add_op(at1, Op(10 * w1))
    kept = inst.add_candidate(Candidate(at1, 1, 5 * w1, 100.0))
    inst.add_op(at2, Op(10 * w2))
    inst.add_op(at2, Op(4 * w2, (), kept))
    inst.roots = [at2]
    inst.validate()
    return inst


@pytest.mark.parametrize(("w1", "w2", "optimum", "kept"), [
    (1.0, 1.0, 10.0, set()),          # [0, 10] beats [15, 4] under total
    (0.001, 1.0, 4.015, {0}),          # deadline: 15·0.001 + 4
    (0.1, 1.0, 5.5, {0}),              # 15·0.1 + 4 = 5.5 < 10
    (0.5, 1.0, 10.0, set()),           # 7.5 + 4 = 11.5 > 10
])
def test_seed_example_both_selectors_find_the_optimum(w1: float, w2: float, optimum: float, kept: set[int]) -> None:
    inst = seed_example(w1, w2)
    found = greedy(inst)
    exact = solve(inst)
    assert found.objective == pytest.approx(optimum)
    assert exact.objective == pytest.approx(optimum)
    assert found.kept == kept and exact.kept == kept and exact.optimal


def shared_at_one_time() -> Instance:
    """A result read twice by the delivery at one time point: recomputing it twice costs 20;
    keeping it costs 10 + 1 (save) + 2 × 1 (loads)."""
    inst = Instance(1)
    x = inst.add_node(1, "X")
    inst.add_op(x, Op(10.0))
    c = inst.add_candidate(Candidate(x, 1, 1.0, 8.0))
    inst.add_op(x, Op(1.0, (), c))
    root = inst.add_node(1, "root")
    inst.add_op(root, Op(3.0, (x, x)))
    inst.roots = [root]
    inst.validate()
    return inst


def test_sharing_at_one_time_point_keeps_the_shared_result() -> None:
    inst = shared_at_one_time()
    assert CostTable(inst).objective() == pytest.approx(23.0)
    for result in (greedy(inst), solve(inst)):
        assert result.objective == pytest.approx(16.0)
        assert result.kept == {0}


def complementary() -> Instance:
    """Two states that pay off only together: the delivery recomputes A and B (20) or loads both
    (1 each). Each costs 1 to compute and 4 to save at t1. Keeping one alone adds 5 and saves
    nothing, so the greedy from nothing kept stays at 20; the optimum keeps both: 2·(1 + 4) + 2 = 12."""
    inst = Instance(2)
    a1, b1 = inst.add_node(1, "A@t1"), inst.add_node(1, "B@t1")
    inst.add_op(a1, Op(1.0))
    inst.add_op(b1, Op(1.0))
    ca = inst.add_candidate(Candidate(a1, 1, 4.0, 10.0))
    cb = inst.add_candidate(Candidate(b1, 1, 4.0, 10.0))
    root = inst.add_node(2, "root@t2")
    inst.add_op(root, Op(20.0))  # recompute both
    both = inst.add_node(2, "both loaded@t2")
    la, lb = inst.add_node(2, "A@t2"), inst.add_node(2, "B@t2")
    inst.add_op(la, Op(1.0, (), ca))
    inst.add_op(lb, Op(1.0, (), cb))
    inst.add_op(both, Op(0.0, (la, lb)))
    inst.add_op(root, Op(0.0, (both,)))
    inst.roots = [root]
    inst.validate()
    return inst


def test_complementary_states_the_greedy_misses_and_the_ilp_finds() -> None:
    inst = complementary()
    found = greedy(inst)  # from nothing kept: each state alone leaves the plan at 20
    assert found.objective == pytest.approx(20.0) and found.kept == set()
    exact = solve(inst)
    assert exact.objective == pytest.approx(12.0) and exact.kept == {0, 1} and exact.optimal
    chosen = select(inst, options=MqoOptions(ilp_limit=1000))  # small: the ILP decides
    assert chosen.selector == "ilp" and chosen.objective == pytest.approx(12.0)
    assert chosen.gap == pytest.approx(20.0 / 12.0)
    above = select(inst, options=MqoOptions(ilp_limit=0))
    assert above.selector == "greedy" and above.objective == pytest.approx(20.0) and above.ilp is None


def test_greedy_started_from_a_plan_keeps_it_when_nothing_improves() -> None:
    inst = complementary()
    assert greedy(inst, start={0, 1}).objective == pytest.approx(12.0)


@pytest.mark.parametrize("seed", range(12))
def test_ilp_never_worse_than_greedy_on_random_instances(seed: int) -> None:
    inst = random_instance(seed, k=3 + seed % 3, size=1 + seed % 4)
    found = greedy(inst)
    exact = solve(inst, time_limit=60)
    assert exact.optimal
    assert exact.objective <= found.objective * (1 + EPS)
    # the ILP's objective is the cost propagation's value of its kept set
    assert CostTable(inst, exact.kept).objective() == pytest.approx(exact.objective)


def recomputed_twice() -> Instance:
    """A node two consumers read at one time point, with no candidate for it: each recomputes
    it, 2·(10 + 1) = 22. Keeping a state R can load instead costs 11 + 6 to keep and 1 to load:
    11 + 1 + 17 = 29. The optimum keeps nothing."""
    inst = Instance(1)
    shared = inst.add_node(1, "S")
    inst.add_op(shared, Op(10.0))
    left, right = inst.add_node(1, "L"), inst.add_node(1, "R")
    inst.add_op(left, Op(1.0, (shared,)))
    inst.add_op(right, Op(1.0, (shared,)))
    other = inst.add_node(1, "L kept")
    inst.add_op(other, Op(1.0, (shared,)))
    kept = inst.add_candidate(Candidate(other, 1, 6.0, 10.0))
    inst.add_op(right, Op(1.0, (), kept))
    root = inst.add_node(1, "root")
    inst.add_op(root, Op(0.0, (left, right)))
    inst.roots = [root]
    inst.validate()
    return inst


def kept_for_its_own_time_point(save: float = 6.0, load: float = 1.0) -> Instance:
    """S (10) read by L and R (1 each) at one time point, and S may be kept then and loaded.
    With the defaults, recomputing it for each costs 22, keeping it 10 + 6 + 2·(1 + 1) = 20. S's
    least way is a load, but of a state of its own time point: only a kept one, so with nothing
    kept the relaxation prices S's second read at its computation (22), not at the load (13)."""
    inst = Instance(1)
    shared = inst.add_node(1, "S")
    inst.add_op(shared, Op(10.0))
    kept = inst.add_candidate(Candidate(shared, 1, save, 10.0))
    inst.add_op(shared, Op(load, (), kept))
    left, right = inst.add_node(1, "L"), inst.add_node(1, "R")
    inst.add_op(left, Op(1.0, (shared,)))
    inst.add_op(right, Op(1.0, (shared,)))
    root = inst.add_node(1, "root")
    inst.add_op(root, Op(0.0, (left, right)))
    inst.roots = [root]
    inst.validate()
    return inst


def test_the_relaxation_proves_the_optimum_or_hands_over_to_the_exact_program() -> None:
    proven = solve(seed_example(0.001, 1.0))
    assert proven.program == "relaxation" and proven.optimal and proven.objective == pytest.approx(4.015)
    inst = recomputed_twice()  # a second read of S costs at least S's least way: the relaxation counts 22
    assert CostTable(inst).objective() == pytest.approx(22.0) and CostTable(inst, {0}).objective() == pytest.approx(29.0)
    exact = solve(inst)
    assert exact.program == "relaxation" and exact.optimal and exact.objective == pytest.approx(22.0) and exact.kept == set()
    inst = kept_for_its_own_time_point()
    assert CostTable(inst).objective() == pytest.approx(22.0) and CostTable(inst, {0}).objective() == pytest.approx(20.0)
    exact = solve(inst)
    assert exact.program == "relaxation" and exact.optimal and exact.objective == pytest.approx(20.0) and exact.kept == {0}
    inst = loaded_from_an_earlier_time_point()
    assert CostTable(inst).objective() == pytest.approx(32.0) and CostTable(inst, {0}).objective() == pytest.approx(30.0)
    exact = solve(inst)  # the relaxation's plan costs more than it says: the run-counting program decides
    assert exact.program == "flow" and exact.optimal and exact.objective == pytest.approx(30.0) and exact.kept == {0}


def loaded_from_an_earlier_time_point() -> Instance:
    """S computed at t1 (10) for the first result, and may be kept then (6); at t2 S is computed
    again (10) or the state loaded (1), and read by L and R (1 each). Keeping nothing costs
    10 + 2·(10 + 1) = 32; keeping S costs 10 + 10 + 6 at t1 (the result's computation, and the
    state's) and 2·(1 + 1) at t2: 30. The relaxation pays S once at each time point and prices
    the second read at t2 at a load, which an earlier time point's state allows whether kept or
    not: 10 + 6 + 1 + 1 + 2 = 20 for the plan that keeps S, which costs 30."""
    inst = Instance(2)
    first = inst.add_node(1, "S@1")
    inst.add_op(first, Op(10.0))
    result = inst.add_node(1, "root@1")
    inst.add_op(result, Op(0.0, (first,)))
    kept = inst.add_candidate(Candidate(first, 1, 6.0, 10.0))
    second = inst.add_node(2, "S@2")
    inst.add_op(second, Op(10.0))
    inst.add_op(second, Op(1.0, (), kept))
    left, right = inst.add_node(2, "L"), inst.add_node(2, "R")
    inst.add_op(left, Op(1.0, (second,)))
    inst.add_op(right, Op(1.0, (second,)))
    root = inst.add_node(2, "root@2")
    inst.add_op(root, Op(0.0, (left, right)))
    inst.roots = [result, root]
    inst.validate()
    return inst


def test_a_proof_gap_lets_a_known_plan_within_it_stand() -> None:
    """The known plan keeps S (30); the relaxation's bound is below it, and only the run-counting
    program proves it exactly. Within a gap that covers the distance, the bound proves it
    instead, the result saying which gap it was proven to; a gap too small still hands over."""
    inst = loaded_from_an_earlier_time_point()
    exact = solve(inst, upper=30.0, known={0})
    assert exact.program == "flow" and exact.gap == 0.0 and exact.objective == pytest.approx(30.0)
    loose = solve(inst, upper=30.0, known={0}, gap=0.6)
    assert loose.program == "bound" and loose.optimal and loose.gap == 0.6
    assert loose.kept == {0} and loose.objective == pytest.approx(30.0)
    tight = solve(inst, upper=30.0, known={0}, gap=0.001)
    assert tight.program == "flow" and tight.optimal and tight.objective == pytest.approx(30.0)


def test_the_relaxation_bound_proves_a_known_plan() -> None:
    """S read twice at one time point, kept for free (save and load cost nothing): keeping it
    costs 10 + 2 = 12, and the relaxation values its plan that keeps nothing at 12 too, though
    that plan recomputes S (22). Whichever it picks, the known plan that keeps S meets its bound,
    so no run-counting program is needed."""
    inst = kept_for_its_own_time_point(save=0.0, load=0.0)
    assert CostTable(inst, {0}).objective() == pytest.approx(12.0) and CostTable(inst).objective() == pytest.approx(22.0)
    exact = solve(inst, upper=12.0, known={0})
    assert exact.program in ("relaxation", "bound") and exact.optimal
    assert exact.objective == pytest.approx(12.0) and exact.kept == {0}


def spread_over_two_ways() -> Instance:
    """X (10) read twice by P and twice by Q, the root's two ways: whichever it takes, X is
    computed twice, so every plan costs 20."""
    inst = Instance(1)
    x = inst.add_node(1, "X")
    inst.add_op(x, Op(10.0))
    p, q = inst.add_node(1, "P"), inst.add_node(1, "Q")
    inst.add_op(p, Op(0.0, (x, x)))
    inst.add_op(q, Op(0.0, (x, x)))
    root = inst.add_node(1, "root")
    inst.add_op(root, Op(0.0, (p,)))
    inst.add_op(root, Op(0.0, (q,)))
    inst.roots = [root]
    inst.validate()
    return inst


def test_the_relaxations_lp_pays_the_further_reads_of_a_node_its_plan_is_spread_over() -> None:
    """The LP of the relaxation spreads the root half over P and half over Q: X is read twice in
    all and used half, so it pays 5 for X and 15 for the reads beyond its use, the plan's 20.
    Counting the reads less one, it paid 5 + 10: the LP's bound fell short of every plan."""
    import pulp

    inst = spread_over_two_ways()
    assert CostTable(inst).objective() == pytest.approx(20.0)
    relaxation = _Shared(inst, None, peak=False, upper=20.0)
    for variable in relaxation.problem.variables():
        variable.cat = pulp.LpContinuous
    relaxation.solve(10)
    assert relaxation.value == pytest.approx(20.0)


@pytest.mark.parametrize("seed", range(8))
def test_ilp_is_the_best_of_every_kept_set(seed: int) -> None:
    """Against brute force: the cost propagation's value of every subset of candidates."""
    inst = prune(random_instance(100 + seed, k=2 + seed % 3, size=1 + seed % 3)).instance
    if len(inst.candidates) > 12:
        inst = prune(random_instance(100 + seed, k=2, size=1)).instance
    best = min(CostTable(inst, {c for c in range(len(inst.candidates)) if mask >> c & 1}).objective()
               for mask in range(1 << len(inst.candidates)))
    exact = solve(inst, time_limit=60)
    assert exact.optimal and exact.objective == pytest.approx(best, rel=EPS)


def test_the_relaxation_is_a_lower_bound_of_every_kept_set() -> None:
    """Against brute force, over random instances whose states may be loaded at their own time
    point (where a state is loaded only if kept) and at later ones: the relaxation's optimum is
    never above the cheapest plan, and is that plan's cost whenever the relaxation claims it."""
    checked = tight = 0
    for seed in range(80):
        inst = prune(random_instance(300 + seed, k=2 + seed % 4, size=1 + seed % 5, all_times=seed % 2 == 0)).instance
        if len(inst.candidates) > 12 or not inst.candidates:
            continue
        best = min(CostTable(inst, {c for c in range(len(inst.candidates)) if mask >> c & 1}).objective()
                   for mask in range(1 << len(inst.candidates)))
        relaxation = _Shared(inst, None, peak=False, upper=best)
        relaxation.solve(60)
        assert relaxation.value <= best * (1 + EPS), seed
        result = solve(inst, time_limit=60)
        assert result.objective == pytest.approx(best, rel=EPS), seed
        checked += 1
        tight += result.program == "relaxation"
    assert checked >= 20 and tight >= 1, (checked, tight)


@pytest.mark.parametrize("seed", range(6))
def test_pruning_keeps_every_optimum(seed: int) -> None:
    inst = random_instance(100 + seed, k=4, size=3)
    pruned = prune(inst)
    assert pruned.instance.op_count <= inst.op_count
    assert greedy(pruned.instance).objective == pytest.approx(greedy(inst).objective)
    assert solve(pruned.instance).objective == pytest.approx(solve(inst).objective)


def test_staging_rolls_back_and_commits() -> None:
    inst = seed_example(0.001, 1.0)
    table = CostTable(inst)
    before = table.objective()
    staged = table.stage(add=[0])
    assert staged == pytest.approx(4.015) and table.objective() == pytest.approx(4.015)
    table.rollback()
    assert table.objective() == pytest.approx(before) and table.kept == set()
    table.stage(add=[0])
    table.commit()
    assert table.kept == {0} and table.objective() == pytest.approx(4.015)
    assert table.stage(remove=[0]) == pytest.approx(before)


def two_states_at_once() -> Instance:
    """The delivery at t3 must load two states (it cannot recompute them): A kept at t1 (10
    bytes) and B kept at t2 (30 bytes), both alive at t2 and t3: at least 40 bytes at once."""
    inst = Instance(3)
    a1, b2 = inst.add_node(1, "A@t1"), inst.add_node(2, "B@t2")
    inst.add_op(a1, Op(1.0))
    inst.add_op(b2, Op(1.0))
    ca = inst.add_candidate(Candidate(a1, 1, 1.0, 10.0))
    cb = inst.add_candidate(Candidate(b2, 2, 1.0, 30.0))
    la, lb = inst.add_node(3, "A@t3"), inst.add_node(3, "B@t3")
    inst.add_op(la, Op(1.0, (), ca))
    inst.add_op(lb, Op(1.0, (), cb))
    root = inst.add_node(3, "root")
    inst.add_op(root, Op(1.0, (la, lb)))
    inst.roots = [root]
    inst.validate()
    return inst


def test_budget_that_no_plan_meets_names_the_smallest_that_works() -> None:
    inst = two_states_at_once()
    assert smallest_budget(inst)[0] == pytest.approx(40.0)
    with pytest.raises(BudgetError, match=r"smallest budget that works is 40 B"):
        select(inst, options=MqoOptions(budget=39.0))
    chosen = select(inst, options=MqoOptions(budget=40.0))
    assert chosen.kept == {0, 1}


def test_budget_is_a_constraint_of_the_ilp_and_a_stopping_rule_of_the_greedy() -> None:
    inst = shared_at_one_time()  # keeping X (8 bytes) saves 7
    for selector in ("greedy", "ilp"):
        tight = select(inst, options=MqoOptions(selector=selector, budget=7.0))
        assert tight.kept == set() and tight.objective == pytest.approx(23.0)
        roomy = select(inst, options=MqoOptions(selector=selector, budget=8.0))
        assert roomy.kept == {0} and roomy.objective == pytest.approx(16.0)


def test_keep_times_are_the_prefix_minima_of_the_weights() -> None:
    assert keep_times(2, (0.001, 0.001, 0.001, 1.0), 4) == [2]
    assert keep_times(1, (1.0, 1.0, 1.0), 3) == [1]
    assert keep_times(1, (1.0, 0.5, 0.7, 0.1), 4) == [1, 2, 4]


def test_malformed_instances_and_options_are_refused() -> None:
    inst = Instance(2)
    node = inst.add_node(1)
    c = inst.add_candidate(Candidate(node, 2, 1.0, 1.0))
    inst.add_op(node, Op(1.0, (), c))
    inst.roots = [node]
    with pytest.raises(TempuraError, match="later time point"):
        inst.validate()
    with pytest.raises(TempuraError, match="unknown state selector"):
        MqoOptions(selector="magic")
    with pytest.raises(TempuraError, match="proof gap"):
        MqoOptions(proof_gap=1.0)
    with pytest.raises(NoSolver, match="install highspy"):
        solver(preferred=("no-such-solver",))


def test_greedy_has_no_plan_when_every_way_needs_a_state_and_nothing_is_kept() -> None:
    inst = two_states_at_once()
    assert math.isinf(CostTable(inst).objective())
    chosen = select(inst, options=MqoOptions(selector="greedy"))  # the ILP finds the start
    assert chosen.selector == "ilp" and chosen.kept == {0, 1}


def test_structure_indexes_follow_later_additions() -> None:
    inst = seed_example(1.0, 1.0)
    assert inst.parents[0] == [] and inst.loads[0] == [1]
    extra = inst.add_node(2, "reads R@t1")
    inst.add_op(extra, Op(1.0, (0,)))
    inst.add_op(extra, Op(1.0, (), 0))
    assert inst.parents[0] == [extra] and inst.loads[0] == [1, extra]
    assert inst.order.index(0) < inst.order.index(extra)


def test_the_solver_writes_nothing_to_standard_output() -> None:
    """HiGHS prints a banner on the process's file descriptor 1 when its first model is made;
    the exact selection must not, or ``tempura plan --format json`` is no longer JSON. Run in a
    fresh interpreter, where no model has been made yet."""
    import pathlib
    import subprocess
    import sys

    code = ("from tests.test_mqo import seed_example\n"
            "from tempura.mqo import solve\n"
            "print(round(solve(seed_example(0.001, 1.0)).objective, 6))\n")
    root = pathlib.Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120,
                          cwd=root)
    assert done.stdout == "4.015\n"
