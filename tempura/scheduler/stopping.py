"""Stopping a daemon cleanly on SIGTERM and SIGINT.

The first signal asks the daemon to stop: a time point in flight is finished and committed, none
is started after it, and a wait for the next time point ends at once. A second signal abandons the
time point in flight: :class:`Abandoned` unwinds it before its commit, which is atomic, so nothing
of it is committed and the next run starts it afresh. Either way the job's lock is released on the
way out, and the command prints one line.

The handlers are the process's while the daemon runs, and the ones before are put back after.
Spark's JVM does not see a SIGINT pyspark's launcher sends it none of (it starts the JVM ignoring
it), so a time point in flight is not cut off under it by the first Ctrl-C.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from types import FrameType
from typing import Any, Iterator


class Abandoned(BaseException):
    """A second signal: the time point in flight is abandoned, uncommitted. A ``BaseException``,
    so that no ``except Exception`` on the way takes it for an error of the time point's."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


class Stopper:
    """What a daemon asks between its steps: whether to stop, and a wait the signal ends."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.signal_name: str | None = None  # the first signal's name, once one came

    def stopped(self) -> bool:
        return self._event.is_set()

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``, or until a stop is asked."""
        self._event.wait(seconds)

    def _handle(self, number: int, _frame: FrameType | None) -> None:
        name = signal.Signals(number).name
        if self._event.is_set():
            raise Abandoned(name)
        self.signal_name = name
        self._event.set()

    @contextmanager
    def installed(self) -> Iterator[Stopper]:
        """This stopper as the handler of SIGTERM and SIGINT while the block runs (in the main
        thread; elsewhere signals cannot be handled, and it only stops when asked to)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        before: dict[signal.Signals, Any] = {}
        for number in (signal.SIGTERM, signal.SIGINT):
            before[number] = signal.signal(number, self._handle)
        try:
            yield self
        finally:
            for number, handler in before.items():
                signal.signal(number, handler)
