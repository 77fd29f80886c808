"""Time-varying relations: time points and versions, the TVR forms (snapshots, deltas, value
deltas, the streaming split), the Z-set merges ``+#`` and ``+sum``, the operators that compute
them, and the arrival model. ``docs/SEMANTICS.md`` is the specification."""

from tempura.tvr.forms import Form, FormKind, Snapshot, Delta, PartialSnapshot, ValueDelta
from tempura.tvr.time import TimePoints
from tempura.tvr.zset import MULT, MULT_FIELD

__all__ = [
    "MULT",
    "MULT_FIELD",
    "Delta",
    "Form",
    "FormKind",
    "PartialSnapshot",
    "Snapshot",
    "TimePoints",
    "ValueDelta",
]
