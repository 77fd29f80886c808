"""The words users read, without Spark: a time point as ``t2 (2026-11-30 06:00)`` whatever kind
of value it has (or the text a manifest keeps of it), a cycle's folder name in words (``cycle of
2026-11-30 00:00``, ``cycle 1``), ``repair --cycle`` taking a cycle as ``check`` names it, and
the calibration factor ``history`` and ``plan`` show once beside the model's figures."""

from __future__ import annotations

import datetime as dt

import pytest

from tempura.cli import _cycle_folder
from tempura.scheduler.calibration import model_factor, model_factor_words
from tempura.scheduler.spec.schedule import Cycle
from tempura.tvr.time import TimePoints, cycle_words, time_point_words, time_value_words


@pytest.mark.parametrize(("value", "shown"), [
    (dt.datetime(2026, 11, 30, 6), "2026-11-30 06:00"),  # seconds dropped when zero
    (dt.datetime(2026, 11, 30, 6, 0, 5), "2026-11-30 06:00:05"),
    (dt.datetime(2026, 11, 30, 6, 0, 5, 250000), "2026-11-30 06:00:05.25"),
    (dt.datetime(2026, 11, 30, 6, tzinfo=dt.timezone(dt.timedelta(hours=1))), "2026-11-30 06:00+01:00"),
    (dt.date(2026, 11, 30), "2026-11-30"),
    (7, "7"),
    (2.5, "2.5"),
    ("2026-11-30 06:00:00", "2026-11-30 06:00"),  # as a manifest or the history keeps it: str(value)
    ("2026-11-30T06:00:00", "2026-11-30 06:00"),
    ("2026-11-30", "2026-11-30"),
    ("20261130", "20261130"),  # a number, not a date
    ("-3", "-3"),
    ("not a time", "not a time"),
])
def test_a_time_value_reads_as_a_user_writes_it(value: object, shown: str) -> None:
    assert time_value_words(value) == shown


def test_a_time_point_is_its_index_and_its_value() -> None:
    assert time_point_words(2, dt.datetime(2026, 11, 30, 6)) == "t2 (2026-11-30 06:00)"
    assert time_point_words(2, "2026-11-30 06:00:00") == "t2 (2026-11-30 06:00)"
    assert time_point_words(1, dt.date(2026, 11, 30)) == "t1 (2026-11-30)"
    assert time_point_words(3, 30) == "t3 (30)"
    assert str(TimePoints((dt.datetime(2026, 11, 30, 6), dt.datetime(2026, 11, 30, 12)))) == \
        "t1=2026-11-30 06:00, t2=2026-11-30 12:00"


@pytest.mark.parametrize(("label", "shown"), [
    ("20261130T000000", "cycle of 2026-11-30 00:00"),
    ("20261130T063000", "cycle of 2026-11-30 06:30"),
    ("20261130", "cycle of 2026-11-30"),
    ("00000", "cycle 1"),
    ("00004", "cycle 5"),
    ("elsewhere", "cycle elsewhere"),
])
def test_a_cycle_reads_as_its_origin_or_its_number(label: str, shown: str) -> None:
    assert cycle_words(label) == shown


def test_a_cycle_keeps_its_folder_name_and_has_a_title() -> None:
    points = TimePoints((dt.datetime(2026, 11, 30, 6),))
    by_time = Cycle(3, dt.datetime(2026, 11, 30), points)
    assert (by_time.label, by_time.title) == ("20261130T000000", "cycle of 2026-11-30 00:00")
    by_day = Cycle(0, dt.date(2026, 11, 30), TimePoints((dt.date(2026, 12, 1),)))
    assert (by_day.label, by_day.title) == ("20261130", "cycle of 2026-11-30")
    numbered = Cycle(1, 10, TimePoints((11, 12)))
    assert (numbered.label, numbered.title) == ("00001", "cycle 2")
    only = Cycle(0, None, TimePoints((1, 2)))
    assert (only.label, only.title) == ("00000", "cycle 1")


@pytest.mark.parametrize(("given", "folder"), [
    ("cycle of 2026-11-30 00:00", "20261130T000000"),  # as check prints it
    ("2026-11-30 06:00", "20261130T060000"),
    ("2026-11-30", "20261130"),
    ("20261130T000000", "20261130T000000"),  # the folder's own name
    ("20261130", "20261130"),
    ("00000", "00000"),
    (None, None),
])
def test_repair_takes_a_cycle_as_check_names_it(given: str | None, folder: str | None) -> None:
    assert _cycle_folder(given) == folder


def test_the_calibration_factor_is_measured_cpu_per_model_second() -> None:
    rows = [{"estimated_seconds": 2.0, "cpu_seconds": 1.0}, {"estimated_seconds": 2.0, "cpu_seconds": 2.0},
            {"estimated_seconds": None, "cpu_seconds": 5.0}, {"estimated_seconds": 0.0, "cpu_seconds": 5.0}]
    assert model_factor(rows) == (0.75, 2)
    assert model_factor_words(rows) == ("calibration: one second of the model's estimate came to 0.75 s of measured "
                                        "CPU (over the 2 fragments of this job that ran)")
    assert model_factor([]) == (None, 0)
    assert "no fragment of this job is measured yet" in model_factor_words([])
