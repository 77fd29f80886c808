"""Calibrating the stage cost from a run history: the fit recovers the fixed and variable rates
that generated a history, refuses histories that cannot tell them apart, stays within its bounds
of the declared constant, and reads the history's rows as the runner records them."""

from __future__ import annotations

import math
import random
from typing import Sequence

import pytest

from historyfile import SHAPES
from tempura.cost.model import CostConstants
from tempura.scheduler.calibration import BOUNDS, MIN_CPU_SECONDS, MIN_FRAGMENTS, Sample, calibrate, calibrated, fit

DECLARED = 1e9


def history(alpha: float, beta: float, shapes: Sequence[tuple[float, float]], noise: float = 0.0,
            seed: int = 7) -> list[Sample]:
    """Fragments of ``(variable model seconds, stages)`` whose CPU is ``alpha·x + beta·s``, each
    off by up to ``noise`` (relative)."""
    rng = random.Random(seed)
    return [Sample(x, s, (alpha * x + beta * s) * (1 + rng.uniform(-noise, noise))) for x, s in shapes]


@pytest.mark.parametrize("alpha, beta", [(1e-3, 0.04), (1e-2, 0.01), (5e-3, 0.2)])
def test_the_fit_recovers_the_rates_of_an_exact_history(alpha: float, beta: float) -> None:
    found = fit(history(alpha, beta, SHAPES), DECLARED)
    assert found.fragments == len(SHAPES)
    assert found.per_model_second == pytest.approx(alpha, rel=1e-9)
    assert found.per_stage == pytest.approx(beta, rel=1e-9)
    assert found.stage == pytest.approx(beta / alpha * 1e9, rel=1e-9)
    assert found.error == pytest.approx(0.0, abs=1e-9)


def test_the_fit_stays_close_under_noise() -> None:
    alpha, beta = 2e-3, 0.03
    found = fit(history(alpha, beta, SHAPES * 4, noise=0.2), DECLARED)
    assert found.stage is not None
    assert found.stage == pytest.approx(beta / alpha * 1e9, rel=0.35)
    assert 0 < found.error < 0.2


def test_too_few_fragments_keep_the_declared_constant() -> None:
    found = fit(history(1e-3, 0.04, SHAPES[: MIN_FRAGMENTS - 1]), DECLARED)
    assert found.stage is None
    assert f"{MIN_FRAGMENTS} needed" in found.reason
    assert "as declared" in found.describe(DECLARED)


def test_fragments_with_the_same_work_per_stage_cannot_separate_the_two() -> None:
    proportional = [(10.0 * s, float(s)) for s in (1, 2, 3, 5, 8)]  # every fragment 10 model seconds per stage
    found = fit(history(1e-3, 0.04, proportional), DECLARED)
    assert found.stage is None
    assert "too alike" in found.reason


def test_a_fit_that_makes_stages_free_is_refused() -> None:
    # CPU falls as stages grow at equal variable work: no positive stage cost explains it
    samples = [Sample(100.0, 2, 0.9), Sample(100.0, 10, 0.5), Sample(50.0, 2, 0.45), Sample(50.0, 10, 0.25)]
    found = fit(samples, DECLARED)
    assert found.stage is None
    assert "stages no positive cost" in found.reason


@pytest.mark.parametrize("beta, bound", [(10.0, DECLARED * BOUNDS), (1e-7, DECLARED / BOUNDS)])
def test_the_constant_is_held_within_its_bounds(beta: float, bound: float) -> None:
    found = fit(history(1e-3, beta, SHAPES), DECLARED)
    assert found.stage == pytest.approx(bound)
    assert "held to" in found.reason


def test_history_rows_are_read_as_recorded() -> None:
    alpha, beta, stage = 1e-3, 0.05, 2e9
    rows = []
    for x, s in SHAPES:
        fixed = s * stage / 1e9
        rows.append({"estimated_seconds": x + fixed, "estimated_fixed_seconds": fixed, "estimated_stages": s,
                     "cpu_seconds": alpha * x + beta * s})
    rows.append({"estimated_seconds": 5.0, "estimated_fixed_seconds": None, "estimated_stages": None,
                 "cpu_seconds": 1.0})  # recorded before the split was: left out
    rows.append({"estimated_seconds": 5.0, "estimated_fixed_seconds": 1.0, "estimated_stages": 1,
                 "cpu_seconds": MIN_CPU_SECONDS / 2})  # too small to measure: left out
    found = calibrate(rows, stage)
    assert found.fragments == len(SHAPES)
    assert found.stage == pytest.approx(beta / alpha * 1e9)


def test_a_pinned_stage_is_never_calibrated() -> None:
    rows = [{"estimated_seconds": x + s, "estimated_fixed_seconds": float(s), "estimated_stages": s,
             "cpu_seconds": 1e-3 * x + 0.05 * s} for x, s in SHAPES]
    constants = CostConstants(stage=3e9, network=300.0)
    same, none = calibrated(constants, {"stage"}, rows)
    assert same == constants and none is None
    moved, found = calibrated(constants, {"network"}, rows)
    assert found is not None and found.stage is not None
    assert moved.stage == pytest.approx(50e9) and moved.network == 300.0
    assert not math.isclose(moved.stage, constants.stage)
