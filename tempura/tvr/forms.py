"""The forms of a time-varying relation, as memo semantics keys (Tempura's ``TvrSemantics``).

A TVR meta-set maps each form to the memo group computing it:

- ``Snapshot(v)``: ``SS[v]``, the relation's content at version ``v`` (a bag);
- ``Delta(i, j)``: ``SD[i,j]``, a Z-set with ``SS[j] = SS[i] +# SD[i,j]``; ``positive`` marks
  the insert-only ``SD+`` (every multiplicity positive);
- ``PartialSnapshot(v)``: for an aggregate, its partial states at version ``v`` (the value
  snapshot that ``finalize`` turns into ``SS[v]``);
- ``ValueDelta(i, j)``: ``VD[i,j]``, partial states with ``PS[j] = PS[i] +sum VD[i,j]``.

The streaming split ``QP``/``QN`` needs no forms of its own: ``QP`` of an outer join is the TVR of
the matching inner join, and ``QN`` the padded anti-join at the last version
(``rules/tvr/streaming.py``), so the split is an edge between two meta-sets.

Forms are values: hashable, ordered and printable, so that memo dumps and plans print the same
way every time. ``shifted`` moves a form along the time axis, which is what copying one
interval's memo structure to another substitutes.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class FormKind(enum.Enum):
    SNAPSHOT = "SS"
    DELTA = "SD"
    PARTIAL = "PS"
    VALUE_DELTA = "VD"


@dataclass(frozen=True, order=True)
class Form:
    """A TVR form: ``kind`` between versions ``start`` (exclusive) and ``end`` (inclusive);
    snapshots have ``start == 0``."""

    kind: FormKind
    start: int
    end: int

    @property
    def version(self) -> int:
        """The newest version this form reads: it is available from time point ``end`` on."""
        return self.end

    @property
    def is_delta(self) -> bool:
        return self.kind in (FormKind.DELTA, FormKind.VALUE_DELTA)

    def shifted(self, by: int) -> Form:
        """The same form ``by`` intervals later (snapshots keep starting at version 0)."""
        start = self.start if self.start == 0 and not self.is_delta else self.start + by
        return Form(self.kind, start, self.end + by)

    def describe(self) -> str:
        """The form as a user reads it: ``snapshot at t2``, ``changes in (t1, t3]``, ``changes
        up to t2``, ``partial aggregates at t2``, ``partial-aggregate changes in (t1, t3]``."""
        span = f"up to t{self.end}" if self.start == 0 else f"in (t{self.start}, t{self.end}]"
        return {FormKind.SNAPSHOT: f"snapshot at t{self.end}", FormKind.DELTA: f"changes {span}",
                FormKind.PARTIAL: f"partial aggregates at t{self.end}",
                FormKind.VALUE_DELTA: f"partial-aggregate changes {span}"}[self.kind]

    def __str__(self) -> str:
        if self.is_delta:
            return f"{self.kind.value}[{self.start},{self.end}]"
        return f"{self.kind.value}[{self.end}]"


def Snapshot(version: int) -> Form:  # noqa: N802 - reads as the form's name
    return Form(FormKind.SNAPSHOT, 0, version)


def Delta(start: int, end: int) -> Form:  # noqa: N802
    return Form(FormKind.DELTA, start, end)


def PartialSnapshot(version: int) -> Form:  # noqa: N802
    return Form(FormKind.PARTIAL, 0, version)


def ValueDelta(start: int, end: int) -> Form:  # noqa: N802
    return Form(FormKind.VALUE_DELTA, start, end)
