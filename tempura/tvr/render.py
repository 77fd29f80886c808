"""Printing multi-time-point plans: text per time point, the methods side by side, and DOT.

The text form lists, for each time point, the fragments that run then — method label, the TVR
form computed, what becomes of the output (result, kept state), estimated rows and cost, the
inputs, and the physical operator tree — then the kept states, the notes (constructs that forced
a recompute), and a table of every method's cost vector and objective beside the chosen plan's.
"""

from __future__ import annotations

from collections import Counter
from typing import Mapping

from tempura.cost.model import format_bytes, format_time
from tempura.tvr.layout import pruned, touched
from tempura.tvr.plan import Fragment, KeptState, MultiTimePlan
from tempura.tvr.time import time_point_words


def _vector(plan: MultiTimePlan) -> str:
    return "[" + ", ".join(format_time(t) for t in plan.cost.times) + "]"


def _computes(item: Fragment | KeptState, verbose: bool) -> str:
    """What a fragment or state computes, as the user wrote the query; with the memo's form
    (``SD[0,2] of G8``) only when ``verbose``."""
    text = item.computes or item.form
    return f"{text} ({item.form})" if verbose and item.computes else text


def plan_text(plan: MultiTimePlan, physical: bool = True, sql: bool = False, verbose: bool = False) -> str:
    """One plan, time point by time point; ``verbose`` adds the memo's names of forms and
    groups, and the physical plans' memo details."""
    tp = plan.time_points
    weights = ", ".join(f"{w:g}" for w in plan.objective.weights)
    lines = [
        f"time points: {tp}; deliver: {', '.join(f't{i}' for i in tp.deliver)}; output: {plan.output}",
        f"method: {plan.method} (uses {', '.join(plan.methods)}); weights: [{weights}]",
        f"the model's estimate (model seconds): cost vector {_vector(plan)}  objective {format_time(plan.cost.weighted)}  "
        f"work {format_time(plan.cost.work)}",
    ]
    for t in tp.indices:
        fragments = plan.at(t)
        lines.append(f"{time_point_words(t, tp.value(t))}: {len(fragments)} fragment{'s' if len(fragments) != 1 else ''}")
        for f in fragments:
            inputs = [s.describe() for s in f.sources] + [f"state {s}" for s in f.states]
            keeps = f" {f.keeps}" if f.keeps else ""
            lines.append(
                f"  {f.id} [{f.method}] {_computes(f, verbose)} -> {f.output}{keeps}  rows={f.rows:.4g} "
                f"cost={format_time(f.cost.times[t - 1])} stages={f.cost.stages:.0f}"
            )
            lines.append(f"    reads: {'; '.join(inputs) if inputs else 'nothing'}")
            lines.extend(f"    {line}" for line in probes_text(plan, f))
            if physical:
                lines.extend("    " + line for line in f.physical.splitlines())
            if sql:
                lines.extend("    " + line for line in f.sql().splitlines())
    lines.extend(states_text(plan, verbose))
    for name, by_index in sorted(plan.layouts.items()):
        for layout in sorted(set(by_index.values()), key=lambda x: (x.column, x.buckets)):
            intervals = ", ".join(str(i) for i, x in sorted(by_index.items()) if x == layout)
            lines.append(f"layout: {name} lands interval{'s' if ',' in intervals else ''} {intervals} {layout.describe()}")
    if plan.notes:
        lines.append("notes:")
        lines.extend(f"  {n}" for n in plan.notes)
    return "\n".join(lines)


def probes_text(plan: MultiTimePlan, fragment: Fragment) -> list[str]:
    """A fragment's pruned reads: the read, its key, the keys it is probed by, and the share of
    its laid-out intervals' buckets they are expected to touch."""
    views = {s.view: s for s in fragment.sources}
    states = {s.id: s for s in plan.states}
    out = []
    for probe in pruned(fragment.probes, fragment.plan).values():
        read = views.get(probe.view)
        state = states.get(probe.view)
        if state is not None and state.layout is not None and state.layout.column == probe.column:
            hit = touched(state.layout.buckets, probe.distinct)
            out.append(f"pruned read: state {state.id} by {probe.column} (the keys of {probe.key}, ≈{probe.distinct:.4g}): "
                       f"≈{hit:.3g} of its {state.layout.buckets} buckets")
        if read is None:
            continue
        laid = {i: layout for i, layout in plan.layouts.get(read.scan.table, {}).items()
                if read.start < i <= read.end and layout.hashes(probe.column)}
        if not laid:
            continue
        hit = sum(touched(layout.buckets, probe.distinct) for layout in laid.values())
        total = sum(layout.buckets for layout in laid.values())
        out.append(f"pruned read: {read.describe()} by {probe.column} (the keys of {probe.key}, ≈{probe.distinct:.4g}): "
                   f"≈{hit:.3g} of the {total} buckets of interval{'s' if len(laid) > 1 else ''} "
                   f"{', '.join(map(str, sorted(laid)))}")
    for since in fragment.since:
        read = views.get(since.view)
        sliced = {i: layout for i, layout in plan.layouts.get(since.source, {}).items()
                  if read is not None and read.start < i <= read.end and layout.sliced and layout.column == since.column}
        if read is None or not sliced:
            continue
        out.append(f"pruned read: {read.describe()} by {since.column} > {since.after} (the keys it is joined with arrived "
                   f"after it): the time slices after it of interval{'s' if len(sliced) > 1 else ''} "
                   f"{', '.join(map(str, sorted(sliced)))}")
    kept = states.get(fragment.keeps or "")
    for merge in fragment.merges:
        before = states.get(merge.state)
        layout = kept.layout if kept is not None else None
        if layout is not None and before is not None and before.layout == layout and merge.column == layout.column:
            hit = touched(layout.buckets, merge.distinct)
            out.append(f"keyed merge: {kept.id if kept else ''} from state {merge.state} by {merge.column}: rewrites "
                       f"≈{hit:.3g} of {layout.buckets} buckets (the keys that change, ≈{merge.distinct:.4g}), "
                       f"takes the others over")
            break
    return out


def states_text(plan: MultiTimePlan, verbose: bool = False) -> list[str]:
    """The kept states' own section: who chose them, the most bytes alive at once against the
    budget, and per state when it is saved, by which fragment, who reads it and its size."""
    budget = f", budget {format_bytes(plan.state_budget)}" if plan.state_budget is not None else ""
    chooser = {"off": "the memo search", "greedy": "the greedy", "ilp": "the ILP"}.get(plan.selector, plan.selector)
    if not plan.states:
        return [f"states: none kept (chosen by {chooser}{budget})"]
    lines = [f"states: {len(plan.states)} kept, chosen by {chooser}; at most "
             f"{format_bytes(plan.peak_state_bytes())} alive at once{budget}"]
    for s in plan.states:
        reads = Counter(zip(s.read_by, s.read_at))
        readers = ", ".join(f"{r}@t{at}" + (f" ×{n}" if n > 1 else "") for (r, at), n in reads.items())
        by = f" by {s.produced_by}" if s.produced_by else ""
        lines.append(f"  {s.id} {_computes(s, verbose)}: saved at t{s.produced_at}{by}, read by {readers or 'nothing'}, dropped after "
                     f"t{s.last_read}; rows={s.rows:.4g} size={format_bytes(s.bytes)}"
                     + (f"; laid out by {s.layout.describe()}" if s.layout is not None else ""))
    return lines


def alternatives_text(plans: Mapping[str, MultiTimePlan], chosen: str = "auto") -> str:
    """Every method's cost vector, objective and work (the model's estimates), side by side."""
    header = ("method", "uses", "model est.: cost vector", "objective", "work", "fragments", "states")
    rows = [header]
    for method, plan in plans.items():
        mark = "*" if method == chosen else " "
        rows.append((
            f"{mark}{method}",
            "+".join(plan.methods),
            _vector(plan),
            format_time(plan.cost.weighted),
            format_time(plan.cost.work),
            str(len(plan.fragments)),
            str(len(plan.states)),
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows)


def _quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def plan_dot(plan: MultiTimePlan, verbose: bool = False) -> str:
    """The plan in DOT: one column per time point, in order, each with the fragments that run
    then (the delivering ones bold; "nothing runs" when none do), and the kept states as edges
    from the fragment that saves each to those that read it."""
    tp = plan.time_points
    lines = ["digraph plan {", "  rankdir=LR; newrank=true; compound=true;",
             "  node [shape=box, fontname=Helvetica, fontsize=10]; edge [fontname=Helvetica, fontsize=9];"]
    for t in tp.indices:
        lines.append(f"  subgraph cluster_t{t} {{")
        lines.append(f'    label="{_quoted(time_point_words(t, tp.value(t)))}"; style=rounded; color=gray60;')
        lines.append(f'    t{t}_at [shape=plaintext, label="{"" if plan.at(t) else "nothing runs"}"];')
        for f in plan.at(t):
            reads = "\\n".join(_quoted(s.describe()) for s in f.sources)
            label = (f"{f.id} [{f.method}]\\n{_quoted(_computes(f, verbose))}\\n-> {f.output} rows={f.rows:.3g}"
                     + (f"\\nreads: {reads}" if reads else ""))
            style = ", style=bold" if f.delivers else ""
            lines.append(f'    {f.id} [label="{label}"{style}];')
        lines.append("  }")
    for a, b in zip(tp.indices, list(tp.indices)[1:]):  # the time axis, left to right: each time
        # point's fragments after its anchor and before the next time point's
        lines.append(f"  t{a}_at -> t{b}_at [style=invis, weight=10];")
        for f in plan.at(a):
            lines.append(f"  {f.id} -> t{b}_at [style=invis];")
    for t in tp.indices:
        for f in plan.at(t):
            lines.append(f"  t{t}_at -> {f.id} [style=invis];")
    producer = {f.keeps: f.id for f in plan.fragments if f.keeps}
    computes = {s.id: _computes(s, verbose) for s in plan.states}
    for f in plan.fragments:
        for s in f.states:
            source = producer.get(s)
            if source is None:  # a state an earlier run saved
                source = f"{s}_committed"
                lines.append(f'  {source} [shape=note, label="{s} (saved by an earlier run)"];')
            lines.append(f'  {source} -> {f.id} [label="{s}: {_quoted(computes.get(s, s))}"];')
    lines.append("}")
    return "\n".join(lines)
