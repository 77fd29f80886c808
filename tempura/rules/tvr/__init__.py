"""The TVR rules, one named rule per rewrite, and the incremental methods as rule selections.

Each rule names its operator family and pattern (:class:`TvrRule`); :mod:`tempura.rules.registry`
lists them with the other rules. By family:

| family | rules |
|---|---|
| generating, snapshots | ``tvr-snapshot-scan``, ``tvr-snapshot`` (recompute: always on) |
| generating, deltas | ``tvr-delta-scan``, ``tvr-delta-filter``, ``tvr-delta-project``, ``tvr-delta-generate``, ``tvr-delta-join``, ``tvr-delta-join-keyed``, ``tvr-delta-union`` |
| semi- and anti-joins | ``tvr-delta-semi-anti-join``, ``tvr-delta-semi-anti-join-keyed`` |
| outer-join view maintenance | ``tvr-delta-outer-join``, ``tvr-delta-outer-join-probe``, ``tvr-aggregate-below-outer-join``, ``tvr-outer-join-count-update`` |
| aggregates | ``tvr-partial-snapshot``, ``tvr-value-delta``, ``tvr-value-delta-merge``, ``tvr-finalize``, ``tvr-aggregate-affected-groups``, ``tvr-aggregate-new-groups``, ``tvr-count-distinct-split`` |
| windows | ``tvr-window-partitions`` |
| intra-TVR | ``tvr-delta-merge``, ``tvr-snapshot-to-delta``, ``tvr-delivered-delta`` (every method) |
| expanded groups | ``tvr-narrow-keyed-read`` |
| higher-order deltas | ``tvr-delta-merge-inner`` |
| inter-TVR, streaming | ``tvr-streaming-outer-join-split``, ``tvr-streaming-aggregate-split``, ``tvr-streaming-accumulate`` |

Forcing a method (``--method ivm``) selects the rules of that method; ``auto`` has them all, so
each forced method's plans are in ``auto``'s space.
"""

from __future__ import annotations

from tempura.errors import TempuraError
from tempura.rules.tvr.aggregate import (
    AffectedGroupsDelta,
    CountDistinctSplit,
    FinalizeSnapshot,
    NewGroupsDelta,
    PartialSnapshotRule,
    ValueDeltaMerge,
    ValueDeltaRule,
)
from tempura.rules.tvr.base import TvrRule
from tempura.rules.tvr.eager import AggregateBelowOuterJoin, OuterJoinCountUpdate
from tempura.rules.tvr.expansion import Expansion, ExpansionReport, available
from tempura.rules.tvr.generating import (
    DeltaFilter,
    DeltaGenerate,
    DeltaJoin,
    DeltaJoinKeyed,
    DeltaOuterJoin,
    DeltaOuterJoinProbe,
    DeltaProject,
    DeltaScan,
    DeltaUnion,
    SnapshotOperator,
    SnapshotScan,
)
from tempura.rules.tvr.narrowing import NarrowKeyedRead
from tempura.rules.tvr.intra import DeliveredDelta, DeltaMerge, DeltaMergeInner, SnapshotToDelta, StreamingAccumulate
from tempura.rules.tvr.semijoin import DeltaSemiAntiJoin, DeltaSemiAntiJoinKeyed
from tempura.rules.tvr.streaming import StreamingAggregateSplit, StreamingOuterJoinSplit
from tempura.rules.tvr.window import WindowPartitionsDelta

RULES: tuple[TvrRule, ...] = (
    SnapshotScan(),
    SnapshotOperator(),
    DeltaScan(),
    DeltaFilter(),
    DeltaProject(),
    DeltaGenerate(),
    DeltaJoin(),
    DeltaJoinKeyed(),
    DeltaUnion(),
    DeltaOuterJoin(),
    DeltaOuterJoinProbe(),
    DeltaSemiAntiJoin(),
    DeltaSemiAntiJoinKeyed(),
    PartialSnapshotRule(),
    ValueDeltaRule(),
    AffectedGroupsDelta(),
    NewGroupsDelta(),
    CountDistinctSplit(),
    WindowPartitionsDelta(),
    AggregateBelowOuterJoin(),
    StreamingOuterJoinSplit(),
    StreamingAggregateSplit(),
    ValueDeltaMerge(),
    OuterJoinCountUpdate(),
    FinalizeSnapshot(),
    DeltaMerge(),
    DeltaMergeInner(),
    StreamingAccumulate(),
    SnapshotToDelta(),
    DeliveredDelta(),
    NarrowKeyedRead(),
)

RULE_NAMES = tuple(r.name for r in RULES)

_BATCH = {"tvr-snapshot-scan", "tvr-snapshot", "tvr-delivered-delta"}
_DELTAS = {"tvr-delta-scan", "tvr-delta-filter", "tvr-delta-project", "tvr-delta-generate", "tvr-delta-join", "tvr-delta-join-keyed",
           "tvr-delta-union"}
_SEMI = {"tvr-delta-semi-anti-join", "tvr-delta-semi-anti-join-keyed"}
_AGGREGATES = {"tvr-partial-snapshot", "tvr-value-delta", "tvr-value-delta-merge", "tvr-finalize", "tvr-aggregate-affected-groups",
               "tvr-aggregate-new-groups", "tvr-count-distinct-split"}
_WINDOWS = {"tvr-window-partitions"}
_IVM = _BATCH | _DELTAS | _SEMI | _AGGREGATES | _WINDOWS | {"tvr-delta-merge", "tvr-snapshot-to-delta", "tvr-narrow-keyed-read"}
_OJV = _IVM | {"tvr-delta-outer-join", "tvr-delta-outer-join-probe", "tvr-aggregate-below-outer-join", "tvr-outer-join-count-update"}

METHODS: dict[str, frozenset[str]] = {
    "batch": frozenset(_BATCH),
    "ivm": frozenset(_IVM),
    "ojv": frozenset(_OJV),
    "higher-order": frozenset(_OJV | {"tvr-delta-merge-inner"}),
    "streaming": frozenset(
        _BATCH | _DELTAS | _AGGREGATES
        | {"tvr-streaming-outer-join-split", "tvr-streaming-aggregate-split", "tvr-streaming-accumulate",
           "tvr-narrow-keyed-read"}
    ),
    "auto": frozenset(RULE_NAMES),
}


def rules_for(method: str, disabled: set[str] | frozenset[str] = frozenset()) -> list[TvrRule]:
    """The rules of ``method`` minus ``disabled`` (whose names :mod:`tempura.rules.registry`
    checks)."""
    if method not in METHODS:
        raise TempuraError(f"unknown method '{method}' (known: {', '.join(METHODS)})")
    chosen = METHODS[method] - set(disabled)
    return [r for r in RULES if r.name in chosen]


__all__ = ["METHODS", "RULES", "RULE_NAMES", "Expansion", "ExpansionReport", "TvrRule", "available", "rules_for"]
