"""Cost vectors and the objective, and the Tempura seed's compute / save / load example."""

from __future__ import annotations

import pytest

from tempura.cost.model import Cost
from tempura.cost.vector import DEADLINE_EPSILON, CostVector, Objective
from tempura.errors import TempuraError


def seed_plans(weights: tuple[float, float]) -> tuple[CostVector, CostVector]:
    """Compute 10, save 5, load 4: (1) compute and save at t1, load at t2; (2) compute at t2."""
    objective = Objective(weights)
    compute, save, load = Cost(cpu=10), Cost(io=5), Cost(io=4)
    early = CostVector.at(1, compute, objective) + CostVector.at(1, save, objective) + CostVector.at(2, load, objective)
    late = CostVector.at(2, compute, objective)
    return early, late


def test_seed_example_vectors() -> None:
    early, late = seed_plans((1.0, 1.0))
    assert early.times == (15.0, 4.0)
    assert late.times == (0.0, 10.0)


@pytest.mark.parametrize("w1, w2", [(1.0, 1.0), (0.1, 1.0), (0.001, 1.0), (0.5, 1.0), (0.4, 1.0), (1.0, 0.0), (0.3, 0.7)])
def test_seed_example_choice(w1: float, w2: float) -> None:
    early, late = seed_plans((w1, w2))
    chosen_early = early.total < late.total
    assert chosen_early == (15 * w1 + 4 * w2 < 10 * w2)


def test_presets() -> None:
    assert Objective.total(3).weights == (1.0, 1.0, 1.0)
    assert Objective.deadline(3).weights == (DEADLINE_EPSILON, DEADLINE_EPSILON, 1.0)
    with pytest.raises(TempuraError, match="unknown objective preset"):
        Objective.preset("soon", 2)
    with pytest.raises(TempuraError, match="must not be negative"):
        Objective((1.0, -1.0))


def test_ties_broken_by_total_work() -> None:
    objective = Objective((0.0, 1.0))
    a = CostVector.at(2, Cost(cpu=10), objective)
    b = CostVector.at(2, Cost(cpu=10), objective) + CostVector.at(1, Cost(cpu=5), objective)
    assert a.weighted == b.weighted
    assert a.total < b.total


def test_a_vector_keeps_the_cpu_part_and_the_stages_of_its_work() -> None:
    """What the run history splits an estimate by: of the work over every time point, the CPU
    part (per-row work and the stages' fixed costs) and the stages charged."""
    objective = Objective((0.5, 1.0))
    scan = Cost(cpu=100.0, io=900.0, stages=1)  # a stage's fixed cost is CPU
    join = Cost(cpu=30.0, network=40.0)
    total = CostVector.at(1, scan, objective) + CostVector.at(2, join, objective) + CostVector.at(2, Cost(io=-200.0), objective)
    assert total.work == 100 + 900 + 30 + 40 - 200
    assert (total.cpu, total.stages) == (130.0, 1)
    assert total.with_rows(7.0).cpu == 130.0
