"""Named fault points of a time point's run, for testing recovery from a crash.

The runtime calls :func:`reached` at each phase of a time point (:data:`PHASES`). Normally that
does nothing. When the environment variable ``TEMPURA_FAULT`` names the phase, the process kills
itself with ``SIGKILL`` there, as ``kill -9`` or a lost machine would: no ``finally`` block, no
clean-up, no flush. The fault-injection tests and ``tempura bench faults`` run ``tempura run`` in
a subprocess with it set, then run again and compare every delivery with the reference.

``TEMPURA_FAULT`` is ``PHASE`` (the first time the phase is reached), ``PHASE@tN`` (at time point
``N``), or either followed by ``#K`` (the ``K``-th time it is reached there, 1-based: a phase that a
time point reaches once per fragment or per source).
"""

from __future__ import annotations

import os
import re
import signal

VARIABLE = "TEMPURA_FAULT"

# The phases of one time point, in the order it reaches them.
PHASES: tuple[str, ...] = (
    "locked",  # the job lock is held, nothing of the time point is done
    "planned",  # the time point is planned, before anything is landed
    "landing",  # a source's interval is written under .pending/, not yet renamed into place
    "landed",  # a source's interval is in place
    "fragment",  # a fragment is about to run
    "state-written",  # a state is written under .pending/, not yet renamed into place
    "state-saved",  # a state is in place
    "delivery-written",  # a delivery is written under .pending/, not yet in place
    "delivered",  # a delivery is in place
    "manifest",  # everything is in place; the manifest is about to be written
    "committed",  # the manifest is written; states not yet dropped
    "cleaned",  # old states and checkpoints are dropped; the history not yet written
    "recorded",  # the history holds the run; the rest is not yet re-planned
)

_SPEC = re.compile(r"(?P<phase>[a-z-]+)(?:@t(?P<index>\d+))?(?:#(?P<count>\d+))?")
_counts: dict[tuple[str, int], int] = {}


def reached(phase: str, index: int) -> None:
    """Phase ``phase`` of time point ``index`` is reached: die here if ``TEMPURA_FAULT`` says so."""
    wanted = os.environ.get(VARIABLE)
    if not wanted:
        return
    match = _SPEC.fullmatch(wanted.strip())
    if match is None or match.group("phase") != phase:
        return
    if match.group("index") is not None and int(match.group("index")) != index:
        return
    key = (phase, index)
    _counts[key] = _counts.get(key, 0) + 1
    if _counts[key] == int(match.group("count") or 1):
        os.kill(os.getpid(), signal.SIGKILL)


__all__ = ["PHASES", "VARIABLE", "reached"]
