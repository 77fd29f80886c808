"""The run history as JSON documents (what a workdir at a URI keeps, :class:`DocumentHistory`)
answers every query as the SQLite history does, after the same writes: runs recorded, re-planned,
recorded again, forgotten by a repair, and plans adopted. Written here through the local storage,
without Spark (``tests/test_workdir_uri.py`` writes them through Hadoop's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tempura.runtime.storage import LOCAL, Uri
from tempura.scheduler.history import DocumentHistory, History, history_at


def manifest(cycle: str, index: int, fragments: int) -> dict[str, Any]:
    run = {"mode": "schedule", "method": "ivm", "plan_id": f"p{index}", "estimated_seconds": 0.5 * index,
           "wall_seconds": 1.0, "cpu_seconds": 0.25, "rows_landed": 10 * index, "late_rows": 0, "rejected_rows": 1}
    return {"cycle": cycle, "index": index, "time": f"2026-01-0{index}", "committed_at": "then", "delivered": None,
            "run": run, "fragments": [
                {"id": f"f{n}", "method": "ivm", "form": "SD[0,1]", "output": "state", "streaming": n % 2 == 0,
                 "estimated_rows": 100.0, "estimated_seconds": 0.1, "rows_in": 5, "rows_out": 4, "wall_seconds": 0.5,
                 "cpu_seconds": 0.2, "bytes_in": 50, "bytes_out": 40, "shuffle_bytes": 0, "jobs": 1, "stages": 2,
                 "estimated_stages": 2, "estimated_fixed_seconds": 0.02, "fallback": "no keys" if n == 2 else ""}
                for n in range(1, fragments + 1)]}


def written(history: History) -> History:
    for cycle in ("c1", "c2"):
        for index in (1, 2, 3):
            history.record_run(manifest(cycle, index, index))
    history.set_replan("c1", 1, True, "plan changed")
    history.set_replan("c1", 2, False, "plan kept")
    history.record_run(manifest("c1", 2, 1))  # run again: its fragments replaced
    history.forget("c2", 2)
    history.record_plan("p1", "c1", 1, "ivm", [1.0, 2.0], 3.0, "first", "then")
    history.record_plan("p1", "c1", 2, "batch", [2.0], 2.0, "again", "later")  # one row per plan id
    return history


def test_documents_answer_as_sqlite_does(tmp_path: Path) -> None:
    sqlite = written(History(tmp_path / "history.sqlite"))
    documents = written(DocumentHistory(tmp_path / "history", storage=LOCAL))
    assert documents.runs() == sqlite.runs() and len(sqlite.runs()) == 4
    assert documents.fragments() == sqlite.fragments() and documents.fragments("c1") == sqlite.fragments("c1")
    assert [documents.has_run("c2", i) for i in (1, 2, 3)] == [True, False, False]
    assert documents._rows("SELECT * FROM plans") == sqlite._rows("SELECT * FROM plans")
    assert sorted(p.name for p in (tmp_path / "history" / "runs" / "c1").iterdir()) == ["t001.json", "t002.json",
                                                                                          "t003.json"]


def test_a_document_cut_short_is_a_row_never_written(tmp_path: Path) -> None:
    documents = written(DocumentHistory(tmp_path / "history", storage=LOCAL))
    (tmp_path / "history" / "runs" / "c1" / "t003.json").write_text('{"run": {"cyc')
    assert [(r["cycle"], r["time_index"]) for r in documents.runs()] == [("c1", 1), ("c1", 2), ("c2", 1)]
    assert DocumentHistory(tmp_path / "nothing", read_only=True, storage=LOCAL).runs() == []


def test_a_uri_names_documents_and_a_path_sqlite(tmp_path: Path) -> None:
    assert isinstance(history_at(Uri("hdfs://nn/w/jobs/a/history"), storage=LOCAL), DocumentHistory)
    assert type(history_at(tmp_path / "history.sqlite")) is History
