"""Keyed layouts of landings and states: which reads a delta probes, and how each is clustered.

:func:`find_probes` finds, in a fragment's plan, the reads whose rows matter only where a key
column holds one of the keys of the other side of an equi-join (:class:`~tempura.tvr.layout.Probe`):
the join's condition equates a column of each side, and from the join down to the read the key
passes only operators a filter on it would pass (filters; projections keeping the column;
unions; duplicate removal, consolidation and repetition; groupings, partial-state merges and
window partitions by it; the preserved side of a join). Both sides of an inner join, the left
of a semi join and the inner side of a semi, anti or outer join can be probed.

:func:`choose_layouts` then decides, per source, whether its intervals land hash-bucketed by one
of its probed columns, and into how many buckets: the bucket count minimising, over the plan's
probes of that column, the read cost of the buckets each is expected to touch
(:func:`~tempura.tvr.layout.touched`, from its keys' estimated distinct count) plus an open per
bucket read, and the landing's upkeep (a shuffle of each interval's rows by bucket and a file
per bucket written), each at its time point's weight. A layout is kept only when it is cheaper
than landing as it is; each probed fragment's cost then prices the pruned read.
:func:`choose_state_layouts` does the same for kept states: a state is written bucketed when the
probes that read it save more than the bucketing costs at the time point it is saved at.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

from tempura.algebra import (Aggregate, Distinct, Filter, Join, JoinKind, LogicalPlan, PartialAggregate, Project, Scan,
                             Sort, Union, Window)
from tempura.cost.model import Cost, CostConstants
from tempura.cost.vector import CostVector, Objective
from tempura.stats.relation import RelStats
from tempura.tvr.layout import (MIN_BUCKET_BYTES, Layout, Leaf, Merge, Probe, Since, bucket_counts, bucket_read, column_of,
                                equalities, leaves, probed_sides, pruned, scans_of, touched, upkeep)
from tempura.tvr.operators import (Consolidate, Finalize, SourceRead, StateAggregate, StateMerge, StateRows,
                                   ToDelta)
from tempura.tvr.plan import Fragment, KeptState, MultiTimePlan


def find_probes(plan: LogicalPlan, stats: Callable[[LogicalPlan], RelStats | None], time: int,
                cost: Callable[[LogicalPlan], float] = lambda _node: 0.0) -> list[Probe]:
    """The probes of a fragment's ``plan`` at ``time`` (``stats``: a node's estimate, or
    ``None``; ``cost``: a read's estimated cost). Each joined side is probed by the other only when the other is estimated
    smaller, and a read is a probe only once (by its first join from the top)."""
    found: list[Probe] = []
    seen: set[int] = set()

    def visit(node: LogicalPlan) -> None:
        if isinstance(node, Join):
            left_ok, right_ok = probed_sides(node.kind)
            ls, rs = stats(node.left), stats(node.right)
            for a, b in equalities(node.condition):
                if a in node.right.schema.names and b in node.left.schema.names:
                    a, b = b, a
                if a not in node.left.schema.names or b not in node.right.schema.names:
                    continue
                for probed, key, other, column, ok, mine, theirs in (
                        (node.left, b, node.right, a, left_ok, ls, rs), (node.right, a, node.left, b, right_ok, rs, ls)):
                    if not ok or mine is None or theirs is None or theirs.rows >= mine.rows:
                        continue
                    column_stats = theirs.columns.get(key)
                    distinct = column_stats.ndv if column_stats is not None and column_stats.ndv else theirs.rows
                    for scan, source_column in leaves(probed, column):
                        if id(scan) in seen or scans_of(other, scan.table):
                            continue
                        seen.add(id(scan))
                        leaf = stats(scan)
                        found.append(Probe(scan.table, source_column, other, key, min(distinct, theirs.rows),
                                           leaf.rows if leaf else 0.0, leaf.bytes if leaf else 0.0, time, cost(scan)))
        for child in node.inputs:
            visit(child)

    visit(plan)
    return found


def scans(plan: LogicalPlan) -> list[Scan]:
    """Every scan below ``plan``."""
    if isinstance(plan, Scan):
        return [plan]
    return [s for child in plan.inputs for s in scans(child)]


def change_keys(plan: LogicalPlan, column: str, state: str, stats: Callable[[LogicalPlan], RelStats | None],
                top: bool = True) -> tuple[list[Leaf], float] | None:
    """The scans (with their key column) whose keys hold every key of ``plan``'s ``column`` whose
    rows may differ from ``state``'s, and their estimated distinct keys; ``None`` when no scan
    bounds them. At the top, through unions, consolidation, filters and projections, the
    state's own rows are merged in as they are and change nothing (a group or a window partition
    of the key is the state's own where nothing else falls in it); below a join, the state's
    rows are no longer the merged-in ones, and a join's rows are bounded by either side's keys
    (the side with fewer is taken)."""
    def distinct_of(scan: Scan, leaf_column: str) -> float:
        found = stats(scan)
        if found is None:
            return math.inf
        column_stats = found.columns.get(leaf_column)
        return min(found.rows, column_stats.ndv) if column_stats is not None and column_stats.ndv else found.rows

    if isinstance(plan, Scan):
        found = next((c for c in plan.columns if c.field.name == column), None)
        if found is None:
            return None
        if plan.table == state:
            return ([], 0.0) if top else None
        return [(plan, found.source)], distinct_of(plan, found.source)
    if isinstance(plan, Union):
        names = list(plan.schema.names)
        if column not in names:
            return None
        i = names.index(column)
        parts = [change_keys(side, side.schema.names[i], state, stats, top) for side in (plan.left, plan.right)]
        if any(p is None for p in parts):
            return None
        return [leaf for p in parts if p for leaf in p[0]], sum(p[1] for p in parts if p)
    if isinstance(plan, Project):
        kept = next((p for p in plan.projections if p.field.name == column), None)
        name = column_of(kept.expression) if kept is not None else None
        return change_keys(plan.input, name, state, stats, top) if name is not None else None
    if isinstance(plan, StateMerge):  # partial states merged by key: a union of the two, grouped
        if column not in plan.keys:
            return None
        merged = [change_keys(side, column, state, stats, top) for side in (plan.left, plan.right)]
        if any(m is None for m in merged):
            return None
        return [leaf for m in merged if m for leaf in m[0]], sum(m[1] for m in merged if m)
    if isinstance(plan, Join):
        sides = []
        left_has = column in plan.left.schema.names
        partner = next((b if a == column else a for a, b in equalities(plan.condition) if column in (a, b)), None)
        own, other = (plan.left, plan.right) if left_has else (plan.right, plan.left)
        if plan.kind in (JoinKind.INNER, JoinKind.SEMI) or (plan.kind in (JoinKind.LEFT, JoinKind.ANTI) and left_has) or (
                plan.kind == JoinKind.RIGHT and not left_has):
            sides.append(change_keys(own, column, state, stats, False))
        if plan.kind in (JoinKind.INNER, JoinKind.SEMI) and partner is not None and partner in other.schema.names:
            sides.append(change_keys(other, partner, state, stats, False))
        bounded = [s for s in sides if s is not None]
        return min(bounded, key=lambda s: s[1]) if bounded else None
    if plan.operator == "Repeat" or isinstance(plan, (Filter, Consolidate, ToDelta, Sort, Distinct)):
        return change_keys(plan.inputs[0], column, state, stats, top)
    if isinstance(plan, (Aggregate, PartialAggregate, StateAggregate, StateRows, Finalize)) and column in plan.keys:
        return change_keys(plan.inputs[0], column, state, stats, top)
    if isinstance(plan, Window) and column in plan.partition_keys:
        return change_keys(plan.input, column, state, stats, top)
    return None


def find_merges(plan: LogicalPlan, stats: Callable[[LogicalPlan], RelStats | None], states: Iterable[str]) -> list[Merge]:
    """The ways ``plan`` merges one of the kept ``states`` it reads with its other reads keyed
    by one of its output columns (:class:`~tempura.tvr.layout.Merge`): every scan of the plan is
    reached from the column, one state's scans by the column itself, and some scans bound the
    keys that may change (:func:`change_keys`)."""
    every = scans(plan)
    kept = set(states)
    out = []
    for column in plan.schema.names:
        reached = leaves(plan, column)
        if len(reached) != len(every) or {id(s) for s, _ in reached} != {id(s) for s in every}:
            continue
        mine = {s.table for s, c in reached if s.table in kept}
        if len(mine) != 1 or any(c != column for s, c in reached if s.table in mine):
            continue
        state = mine.pop()
        changing = change_keys(plan, column, state, stats)
        if changing is None or not math.isfinite(changing[1]):
            continue
        out.append(Merge(state, column, changing[1], tuple((scan.table, c) for scan, c in changing[0])))
    return out


@dataclass(frozen=True)
class Choice:
    """A source's layout: the intervals that land bucketed (each interval's index → its
    layout), and what it is expected to save, in the objective's units."""

    source: str
    layout: Layout
    intervals: tuple[int, ...]
    saving: float


def read_share(probe: Probe | Since, size: float, k: CostConstants) -> float:
    """The part of ``probe``'s read cost an interval of ``size`` bytes makes (at least its
    bytes' read; a snapshot's consolidation of them too); of a read bounded in time alike."""
    whole = max(probe.cost, probe.bytes * k.dfs_read)
    return whole * size / probe.bytes if probe.bytes > 0 else 0.0


def interval_gain(probes: Sequence[Probe], interval: int, size: float, row_bytes: float, buckets: int,
                  weights: Sequence[float], k: CostConstants) -> float:
    """What landing interval ``interval`` (``size`` bytes, rows of ``row_bytes``) in ``buckets``
    buckets saves, weighted: each probe reading it reads the buckets its keys touch and opens
    their files, instead of the whole interval (its share of the read's cost); the landing
    shuffles its rows by bucket and writes a file per non-empty bucket."""
    gain = 0.0
    for probe in probes:
        whole = read_share(probe, size, k)
        gain += weights[probe.time - 1] * (whole - bucket_read(whole, buckets, probe.distinct, k))
    return gain - weights[interval - 1] * upkeep(size, size / max(row_bytes, 1.0), buckets, k)


Landing = Callable[[str, int], tuple[bool, Layout | None]]  # whether a source's interval has landed, and its layout


def not_landed(_source: str, _interval: int) -> tuple[bool, Layout | None]:
    return False, None


def choose_layouts(plan: MultiTimePlan, reads: Mapping[str, SourceRead], sizes: Mapping[str, Sequence[float]],
                   constants: CostConstants, landed: Landing = not_landed) -> list[Choice]:
    """Each source's layout (``reads``: the probed reads by view; ``sizes``: per source, each
    interval's estimated bytes): per bucket count and interval, whether bucketing the interval
    saves its probes more than it costs to land (an interval is split only into buckets of
    :data:`~tempura.tvr.layout.MIN_BUCKET_BYTES` on average at least); per source the column and bucket count saving
    the most, net of the job each pruned read runs to find its buckets. A source no layout
    saves anything on lands as it is; an interval that has landed (``landed``) keeps its layout."""
    weights = plan.objective.weights
    by_column: dict[tuple[str, str], list[tuple[Probe, SourceRead]]] = {}
    for fragment in plan.fragments:
        for view, probe in pruned(fragment.probes, fragment.plan).items():
            if view in reads:
                by_column.setdefault((reads[view].scan.table, probe.column), []).append((probe, reads[view]))
    best: dict[str, Choice] = {}
    for (source, column), probes in sorted(by_column.items()):
        size = list(sizes.get(source, ()))
        row_bytes = max((p.bytes / p.rows for p, _ in probes if p.rows), default=64.0)
        for n in bucket_counts():
            gains = {i: interval_gain([p for p, r in probes if r.start < i <= r.end], i, size[i - 1], row_bytes, n,
                                      weights, constants) for i in range(1, len(size) + 1)
                     if size[i - 1] >= n * MIN_BUCKET_BYTES and not landed(source, i)[0]}
            laid = tuple(i for i, g in gains.items() if g > 0)
            jobs = sum(weights[p.time - 1] * constants.stage for p, r in probes if any(r.start < i <= r.end for i in laid))
            saving = sum(gains[i] for i in laid) - jobs
            if laid and saving > 0 and (source not in best or saving > best[source].saving):
                best[source] = Choice(source, Layout(column, n), laid, saving)
    return sorted(best.values(), key=lambda c: c.source)


def price(fragment: Fragment, choices: Iterable[Choice], reads: Mapping[str, SourceRead], sizes: Mapping[str, Sequence[float]],
          constants: CostConstants, objective: Objective, landed: Landing = not_landed) -> None:
    """Price ``fragment``'s pruned reads by the buckets they are expected to touch: in each
    interval laid out by the probe's column, as it landed (``landed``) or as chosen."""
    chosen = {c.source: c for c in choices}
    k = constants
    for view, probe in pruned(fragment.probes, fragment.plan).items():
        read = reads.get(view)
        if read is None or read.scan.table not in sizes:
            continue
        table, choice = read.scan.table, chosen.get(read.scan.table)
        saved, laid = 0.0, False
        for i in range(read.start + 1, read.end + 1):
            done, layout = landed(table, i)
            if not done:
                layout = choice.layout if choice is not None and i in choice.intervals else None
            if layout is None or not layout.hashes(probe.column):
                continue
            whole = read_share(probe, sizes[table][i - 1], k)
            saved += whole - bucket_read(whole, layout.buckets, probe.distinct, k)
            laid = True
        if laid:
            fragment.cost = fragment.cost + CostVector.at(fragment.time, Cost(io=-(saved - k.stage)), objective)


def choose_state_layouts(plan: MultiTimePlan, constants: CostConstants) -> dict[str, tuple[Layout, float]]:
    """Each kept state's layout, by the same account as a landed interval's: the state is
    written bucketed at the time point it is saved at, and read by its probes at theirs. Only
    states that some probe reads, and that a layout saves something on, are laid out; each
    with what it saves."""
    weights = plan.objective.weights
    states = {s.id: s for s in plan.states}
    by_column: dict[tuple[str, str], list[Probe]] = {}
    for fragment in plan.fragments:
        for view, probe in pruned(fragment.probes, fragment.plan).items():
            if view in states:
                by_column.setdefault((view, probe.column), []).append(probe)
    best: dict[str, tuple[Layout, float]] = {}
    for (state_id, column), probes in sorted(by_column.items()):
        state = states[state_id]
        row_bytes = state.bytes / state.rows if state.rows else 64.0
        for n in bucket_counts():
            if state.bytes < n * MIN_BUCKET_BYTES:
                break
            saving = interval_gain(probes, state.produced_at, state.bytes, row_bytes, n, weights, constants) - sum(
                weights[p.time - 1] * constants.stage for p in probes)
            if saving > 0 and (state_id not in best or saving > best[state_id][1]):
                best[state_id] = (Layout(column, n), saving)
    return best


def versions_of_one_relation(a: str, b: str) -> bool:
    """Whether the state keys ``a`` and ``b`` (``SS[3]|<signature>``) are two versions of one
    relation's snapshot, or of its partial states."""
    form_a, _, sig_a = a.partition("|")
    form_b, _, sig_b = b.partition("|")
    return bool(sig_a) and sig_a == sig_b and form_a[:3] == form_b[:3] and form_a[:3] in ("SS[", "PS[")


def merge_chains(plan: MultiTimePlan) -> list[tuple[list[str], list[tuple[Fragment, Merge]]]]:
    """The plan's chains of kept states each kept by merging the one before (a
    :class:`~tempura.tvr.layout.Merge` of the same relation), each with its merges."""
    import networkx as nx

    states = {s.id: s for s in plan.states}
    graph = nx.Graph()
    merges: list[tuple[Fragment, Merge]] = []
    for fragment in plan.fragments:
        kept = states.get(fragment.keeps or "")
        for merge in fragment.merges:
            before = states.get(merge.state)
            if kept is not None and before is not None and versions_of_one_relation(kept.key, before.key):
                graph.add_edge(before.id, kept.id)
                merges.append((fragment, merge))
    out = []
    for component in nx.connected_components(graph):
        out.append((sorted(component), [(f, m) for f, m in merges if m.state in component]))
    return out


def merge_saving(merge: Merge, size: float, buckets: int, k: CostConstants) -> float:
    """What a keyed merge into a state of ``size`` bytes laid out in ``buckets`` buckets saves at
    its time point: the untouched buckets' write and read, less an open per touched bucket and
    the jobs finding the buckets its changes touch (one per read bounding them)."""
    whole = (k.dfs_write + k.dfs_read) * size
    return whole - bucket_read(whole, buckets, merge.distinct, k) - len({view for view, _ in merge.keys}) * k.stage


def _merge_gain(plan: MultiTimePlan, chain: Sequence[str], merges: Sequence[tuple[Fragment, Merge]], layout: Layout,
                k: CostConstants) -> float:
    """What keeping the states of ``chain`` laid out by ``layout`` saves: each merge rewrites only
    the buckets the other reads' keys touch (and reads only those of the state before), less the
    shuffle of what each state writes bucketed and a file per bucket."""
    weights = plan.objective.weights
    states = {s.id: s for s in plan.states}
    merged_into = {f.keeps for f, _ in merges}
    n = layout.buckets
    gain = 0.0
    for fragment, merge in merges:
        if merge.column != layout.column or fragment.keeps is None:
            continue
        gain += weights[fragment.time - 1] * merge_saving(merge, states[fragment.keeps].bytes, n, k)
    for state_id in chain:
        state = states[state_id]
        share = 1.0
        if state_id in merged_into:
            share = max((touched(n, m.distinct) / n for f, m in merges if f.keeps == state_id), default=1.0)
        files = min(float(n), state.rows) * share
        gain -= weights[state.produced_at - 1] * (
            share * state.bytes * (k.network + k.local_write + k.local_read) + files * k.file_open)
    return gain


def choose_merge_layouts(plan: MultiTimePlan, constants: CostConstants) -> dict[str, tuple[Layout, float]]:
    """Per chain of states kept by keyed merges, the layout (column and bucket count) saving the
    most over the chain, if any saves: each of its states is then written bucketed, and each
    merge rewrites the touched buckets only."""
    states = {s.id: s for s in plan.states}
    out: dict[str, tuple[Layout, float]] = {}
    for chain, merges in merge_chains(plan):
        smallest = min(states[s].bytes for s in chain)
        best: tuple[Layout, float] | None = None
        for column in sorted({m.column for _, m in merges}):
            for n in bucket_counts():
                if smallest < n * MIN_BUCKET_BYTES:
                    break
                gain = _merge_gain(plan, chain, merges, Layout(column, n), constants)
                if gain > 0 and (best is None or gain > best[1]):
                    best = (Layout(column, n), gain)
        if best is not None:
            for state_id in chain:
                out[state_id] = (best[0], best[1] / len(chain))
    return out


def price_merges(fragment: Fragment, layouts: Mapping[str, Layout], states: Mapping[str, KeptState],
                 constants: CostConstants, objective: Objective) -> None:
    """Price ``fragment``'s keyed merge by the buckets it rewrites, when the state it keeps and
    the one it merges are laid out alike by the merge's column."""
    k = constants
    kept = layouts.get(fragment.keeps or "")
    for merge in fragment.merges:
        if (kept is None or fragment.keeps is None or layouts.get(merge.state) != kept or merge.column != kept.column
                or fragment.keeps not in states):
            continue
        saved = merge_saving(merge, states[fragment.keeps].bytes, kept.buckets, k)
        fragment.cost = fragment.cost + CostVector.at(fragment.time, Cost(io=-saved), objective)
        return


def price_states(fragment: Fragment, layouts: Mapping[str, Layout], constants: CostConstants, objective: Objective) -> None:
    """Price ``fragment``'s pruned reads of laid-out states by the buckets they touch."""
    k = constants
    for view, probe in pruned(fragment.probes, fragment.plan).items():
        layout = layouts.get(view)
        if layout is None or layout.column != probe.column:
            continue
        whole = read_share(probe, probe.bytes, k)
        saved = whole - bucket_read(whole, layout.buckets, probe.distinct, k) - k.stage
        fragment.cost = fragment.cost + CostVector.at(fragment.time, Cost(io=-saved), objective)


__all__ = ["Choice", "choose_layouts", "choose_merge_layouts", "choose_state_layouts", "merge_chains",
           "merge_saving", "price_merges", "versions_of_one_relation", "change_keys", "find_merges", "find_probes", "interval_gain",
           "price", "price_states"]
