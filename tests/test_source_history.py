"""Rows from before a cycle's origin, on Spark: a daily report over the day's clicks joined with
*all* users. The users keep their history (``history: keep``): a user who registered days before
the cycle still joins its clicks. The clicks start afresh each cycle. Every method delivers, at
every time point of two cycles, what ``spark.sql`` gives over that time point's snapshot — with
each source's rows as its ``history`` says — and the spec's checks refuse ``history`` where it
cannot mean anything."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path
from typing import Any

import pytest

from tempura.runtime import compare_results
from tempura.scheduler import load_spec
from tempura.scheduler.reference import reference
from tempura.scheduler.runner import Runner
from tempura.scheduler.spec import SpecError
from tempura.standing import METHODS

START = dt.datetime(2026, 11, 20)
QUERY = ("SELECT u.country, COUNT(*) AS clicks, SUM(c.cost) AS cost FROM clicks c JOIN users u ON c.user_id = u.id "
         "GROUP BY u.country")


def write_data(spark: Any, folder: Path) -> None:
    """200 users registering over the ten days before the schedule starts and its first two
    days; 2,000 clicks over the same days, each by a user registered before it."""
    rng = random.Random(7)
    users = []
    for i in range(200):
        registered = START - dt.timedelta(days=10) + dt.timedelta(hours=rng.randrange(12 * 24))
        users.append((i, rng.choice(["de", "fr", "jp", "us"]), registered))
    clicks = []
    for _ in range(2000):
        user = rng.choice(users)
        when = user[2] + dt.timedelta(minutes=rng.randrange(1, 4 * 24 * 60))
        clicks.append((user[0], rng.randrange(1, 50), when))
    spark.createDataFrame(users, "id INT, country STRING, registered_at TIMESTAMP").coalesce(1) \
        .write.mode("overwrite").parquet(str(folder / "data" / "users"))
    spark.createDataFrame(clicks, "user_id INT, cost INT, clicked_at TIMESTAMP").coalesce(1) \
        .write.mode("overwrite").parquet(str(folder / "data" / "clicks"))


def spec_text(users_history: str | None) -> str:
    history = f"    history: {users_history}\n" if users_history else ""
    return (f"name: daily_clicks\nquery: |\n  {QUERY}\nsources:\n"
            f"  users:\n    path: data/users\n    arrival: {{column: registered_at}}\n{history}"
            f"  clicks:\n    path: data/clicks\n    arrival: {{column: clicked_at}}\n"
            f"schedule:\n  start: '{START.isoformat()}'\n  every: 12h\n  points: 2\n  deliver: every\n")


@pytest.fixture(scope="module")
def job(fast_spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("history")
    write_data(fast_spark, folder)
    (folder / "spec.yaml").write_text(spec_text("keep"))
    return folder


def rows(frame: Any) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in frame.collect()]


@pytest.mark.spark
@pytest.mark.parametrize("method", METHODS)
def test_every_method_joins_the_days_clicks_with_all_users(method: str, fast_spark: Any, job: Path, tmp_path: Path) -> None:
    spec = load_spec(job / "spec.yaml")
    runner = Runner(spec, fast_spark, tmp_path / "work", method, simulate=True)
    for n in (0, 1):
        cycle = spec.cycle(n)
        assert cycle is not None
        for result in runner.run_cycle(cycle):
            assert result.delivered is not None
            expected = rows(reference(fast_spark, spec, cycle, result.index))
            outcome = compare_results(expected, rows(fast_spark.read.parquet(result.delivered)))
            assert outcome.equal, f"{method} cycle {n} t{result.index}: {outcome.reason}"


@pytest.mark.spark
def test_kept_history_counts_users_from_before_the_origin_and_fresh_clicks_do_not(fast_spark: Any, job: Path,
                                                                                  tmp_path: Path) -> None:
    """The reference itself: with the users' history, cycle 1 counts every click of its day; had
    the users started afresh, the clicks of users registered earlier would be lost; the clicks
    of the day before never count."""
    kept = load_spec(job / "spec.yaml")
    (tmp_path / "data").symlink_to(job / "data")
    (tmp_path / "spec.yaml").write_text(spec_text(None))
    fresh = load_spec(tmp_path / "spec.yaml")
    cycle = kept.cycle(1)
    assert cycle is not None and cycle.origin == START + dt.timedelta(days=1)
    clicks = fast_spark.read.parquet(str(job / "data" / "clicks"))
    day = clicks.where((clicks.clicked_at > cycle.origin) & (clicks.clicked_at <= START + dt.timedelta(days=2))).count()
    total = {r[0]: r[1] for r in rows(reference(fast_spark, kept, cycle, 2))}
    assert sum(total.values()) == day > 0
    lost = sum(r[1] for r in rows(reference(fast_spark, fresh, cycle, 2)))
    assert lost < day  # users registered before the day: their clicks are lost without history
    landed = Runner(kept, fast_spark, tmp_path / "work", "batch", simulate=True).run_cycle(cycle)
    users = landed[0].manifest["landed"]["users"]["rows"] if landed[0].manifest else None
    assert users == 200 - sum(1 for r in rows(fast_spark.read.parquet(str(job / "data" / "users")))
                              if r[2] > cycle.time_points.values[0])  # interval 1: every user registered by t_1


@pytest.mark.parametrize(("extra", "source", "message"), [
    ("    history: fresh\n", "  users:\n    path: data/users\n    arrival: {by: file}\n",
     "sources.users.history: a source arriving by file has no arrival values"),
    ("    history: keep\n", "  users:\n    path: data/users\n    arrival: {column: registered_at}\n",
     "sources.users.history: a range query's window says which rows count"),
])
def test_history_where_it_cannot_mean_anything_is_refused(extra: str, source: str, message: str, tmp_path: Path) -> None:
    (tmp_path / "data" / "users").mkdir(parents=True)
    window = "  range: {length: 1d, slide: 12h}\n" if "keep" in extra else ""
    (tmp_path / "spec.yaml").write_text(
        f"name: h\nquery: SELECT COUNT(*) AS n FROM users\nsources:\n{source}{extra}"
        f"schedule:\n  start: '{START.isoformat()}'\n  points: 2\n" + ("  every: 12h\n" if not window else "") + window)
    with pytest.raises(SpecError) as raised:
        load_spec(tmp_path / "spec.yaml")
    assert message in str(raised.value) and "spec.yaml, line 7" in str(raised.value), str(raised.value)
