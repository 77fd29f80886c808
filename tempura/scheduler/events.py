"""The event log of a job: one record per attempt to run it, whatever came of it.

A run by the clock (``tempura run``, each wake of the daemon) appends to the job's history
(:mod:`tempura.scheduler.history`, table ``events``):

- ``committed``, per time point it took: the method, executor CPU and wall seconds, rows landed,
  the delivery, and whether the rest of the cycle was re-planned and why;
- ``nothing due``: when the next time point is;
- ``refused``: the one line saying why (another run holds the lock);
- ``failed``: the time point in flight, if any, and the one-line message; ``kind`` says whether
  the user's input (``user``) or tempura itself (``internal``) is at fault. The spec's
  ``hooks.on_failure`` is called with the record.

``tempura history`` and ``tempura status`` read it.
"""

from __future__ import annotations

import datetime as dt
import os
import secrets
import socket
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from tempura.scheduler.history import History
    from tempura.scheduler.runner import PointResult


class EventLog:
    """Appends the records of one job's attempts to its history."""

    def __init__(self, history: History, method: str, on_failure: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.history = history
        self.method = method
        self.on_failure = on_failure

    def _record(self, outcome: str, message: str, cycle: str | None = None, index: int | None = None,
                time: Any = None, details: dict[str, Any] | None = None) -> dict[str, Any]:
        at = dt.datetime.now().astimezone()
        event = {"event_id": f"{at.strftime('%Y%m%dT%H%M%S%f')}-{secrets.token_hex(4)}", "at": at.isoformat(),
                 "outcome": outcome, "cycle": cycle, "time_index": index,
                 "time_value": None if time is None else str(time), "method": self.method, "message": message,
                 "details": details or {}, "host": socket.gethostname(), "pid": os.getpid()}
        self.history.record_event(event)
        return event

    def committed(self, result: PointResult) -> None:
        run = result.manifest.get("run", {})
        if result.skipped:
            self._record("committed", f"t{result.index} was committed already", result.cycle, result.index, result.time)
            return
        details = {key: run.get(key) for key in ("method", "cpu_seconds", "wall_seconds", "rows_landed", "rejected_rows",
                                                 "planning_seconds")}
        details.update(delivered=result.delivered, replanned=result.replanned, plan_changed=result.plan_changed,
                       reason=result.reason)
        self._record("committed", f"t{result.index} committed ({run.get('method')})", result.cycle, result.index,
                     result.time, details)

    def nothing_due(self, upcoming: Any) -> None:
        message = "no time point is due" + (f"; the next is at {upcoming}" if upcoming is not None else
                                            "; the schedule has no time point left")
        self._record("nothing due", message, details={"next": None if upcoming is None else str(upcoming)})

    def refused(self, error: Exception) -> None:
        self._record("refused", str(error))

    def failed(self, error: Exception, internal: bool, cycle: str | None = None, index: int | None = None,
               time: Any = None) -> None:
        event = self._record("failed", str(error), cycle, index, time, {"kind": "internal" if internal else "user"})
        if self.on_failure is not None:
            self.on_failure(event)
