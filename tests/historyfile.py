"""Run histories written for tests: fragments whose measured CPU follows known rates."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from tempura.scheduler.history import History

# (variable model seconds, stages charged) of the fragments a test history holds
SHAPES: tuple[tuple[float, int], ...] = ((200.0, 11), (8.0, 3), (150.0, 3), (70.0, 8), (30.0, 5), (400.0, 6))


def write_history(path: Path, alpha: float, beta: float, stage: float = 1e9,
                  shapes: Sequence[tuple[float, int]] = SHAPES) -> None:
    """A committed time point whose fragments measured ``alpha`` CPU seconds per model second of
    variable work plus ``beta`` per stage, estimated with ``stage`` model-ns per stage."""
    fragments = []
    for n, (variable, stages) in enumerate(shapes, 1):
        fixed = stages * stage / 1e9
        fragments.append({"id": f"f{n}", "method": "ivm", "form": "SD[0,1]", "output": "state", "streaming": False,
                          "estimated_rows": 1000.0, "estimated_seconds": variable + fixed, "estimated_stages": stages,
                          "estimated_fixed_seconds": fixed, "rows_in": 1000, "rows_out": 1000, "wall_seconds": 1.0,
                          "cpu_seconds": alpha * variable + beta * stages, "bytes_in": 1, "bytes_out": 1,
                          "shuffle_bytes": 0, "jobs": 1, "stages": stages})
    run = {"mode": "schedule", "method": "ivm", "plan_id": "p0", "estimated_seconds": 1.0, "wall_seconds": 1.0,
           "cpu_seconds": 1.0, "rows_landed": 1, "late_rows": 0, "rejected_rows": 0}
    History(path).record_run({"cycle": "earlier", "index": 1, "time": "1", "committed_at": "then", "run": run,
                              "fragments": fragments})
