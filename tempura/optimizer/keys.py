"""What two plannings of one standing query agree on: group signatures, state keys, and the
committed states a re-planning may read.

A state an earlier run saved is found again by its key, not by a memo group id (a later planning
may number groups differently): a TVR form of a template group is keyed by the form and the
group's signature, any other group by a digest of its first expression in full.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass

from tempura.algebra import Join, JoinKind, LogicalPlan
from tempura.algebra.expressions import conjuncts
from tempura.memo import GroupRef, Memo
from tempura.rules.tvr import Expansion
from tempura.tvr.forms import Form
from tempura.tvr.layout import Layout


@dataclass(frozen=True)
class CommittedState:
    """A state an earlier run saved: its id, the time point it was saved at, its
    :attr:`~tempura.tvr.plan.KeptState.key`, how it was laid out (if it was), and its rows."""

    id: str
    produced_at: int
    key: str
    layout: Layout | None = None
    rows: int | None = None  # as saved: the relation's measured rows


@dataclass(frozen=True)
class Resume:
    """Re-planning a cycle whose time points before ``floor`` are committed: new work runs at
    ``floor`` or later, ``states`` saved before it may be read at the cost of a read, and the
    intervals that have landed keep the layouts they landed in (``landed``)."""

    floor: int
    states: tuple[CommittedState, ...] = ()
    # intervals whose landing is done, by source: every one before the floor (laid out as listed
    # here, else as they came), and those at or after it listed here (with their layout or None)
    landed: tuple[tuple[str, int, Layout | None], ...] = ()

    def landed_layout(self, source: str, interval: int) -> tuple[bool, Layout | None]:
        """Whether ``source``'s ``interval`` has landed, and the layout it landed in."""
        for name, index, layout in self.landed:
            if name == source and index == interval:
                return True, layout
        return interval < self.floor, None


def template_signatures(memo: Memo, groups: int) -> dict[int, str]:
    """A signature of each of the first ``groups`` groups that two plannings of one query agree
    on: a digest of the group's first expression, its inputs replaced by their signatures. A
    state's key pairs its TVR form with its template group's signature, so a later planning finds
    the same relation even where it numbers groups differently.

    A tree of inner joins is signed by what it joins, not in which order: its leaves' signatures
    and its conditions' conjuncts, each sorted, and its columns as a set. A large template keeps
    the one join order the costs chose, and a re-planning with measured arrivals and calibrated
    costs may choose another; the relation above the joins (an aggregate, the result) is the same,
    and so is its signature, so the states kept of it are found again."""
    out: dict[int, str] = {}
    for g in range(groups):
        _sign(memo, out, g, frozenset())
    return out


# The recursions below are functions of the module, not closures: a recursive closure holds
# itself, and with it the memo, in a cycle only the garbage collector frees.

def _inner(expr: LogicalPlan) -> bool:
    return isinstance(expr, Join) and expr.kind in (JoinKind.INNER, JoinKind.CROSS)


def _joined(memo: Memo, out: dict[int, str], group: int, active: frozenset[int], leaves: list[str],
            conditions: list[str]) -> None:
    group = memo.find(group)
    expr = memo.group(group).exprs[0]
    if not _inner(expr) or group in active:
        leaves.append(_sign(memo, out, group, active))
        return
    assert isinstance(expr, Join)
    conditions.extend(_conjunct_texts(expr))
    for child in expr.inputs:
        if isinstance(child, GroupRef):
            _joined(memo, out, child.group, active | {group}, leaves, conditions)


def _sign(memo: Memo, out: dict[int, str], group: int, active: frozenset[int]) -> str:
    group = memo.find(group)
    made = out.get(group)
    if made is not None:
        return made
    if group in active:
        return "cycle"
    expr = memo.group(group).exprs[0]
    if _inner(expr):
        leaves: list[str] = []
        conditions: list[str] = []
        _joined(memo, out, group, active, leaves, conditions)
        text = (f"inner joins|{','.join(sorted(leaves))}|{' AND '.join(sorted(conditions))}|"
                f"{','.join(sorted(memo.group(group).schema.names))}")
    else:
        inputs = [_sign(memo, out, c.group, active | {group}) for c in expr.inputs if isinstance(c, GroupRef)]
        text = f"{expr.operator}|{expr.details()}|{','.join(inputs)}|{','.join(memo.group(group).schema.names)}"
    made = out[group] = hashlib.sha1(text.encode()).hexdigest()[:16]
    return made


def _conjunct_texts(join: Join) -> list[str]:
    """A join condition's conjuncts as SQL, an equality's two sides in one order whichever input
    each came from."""
    from sqlglot import exp

    out = []
    for c in conjuncts(join.condition):
        if isinstance(c, (exp.EQ, exp.NullSafeEQ)):
            sides = sorted((c.this.sql(dialect="spark"), c.expression.sql(dialect="spark")))
            out.append(f"{type(c).__name__}({sides[0]}, {sides[1]})")
        else:
            out.append(c.sql(dialect="spark"))
    return out


def _payload(expr: LogicalPlan) -> str:
    """What an expression holds besides its inputs, in full: its display details and every
    field that is not an input (aggregate calls, predicates and projections as SQL)."""
    from sqlglot import exp

    def text(value: object) -> str:
        if isinstance(value, LogicalPlan):
            return ""
        if isinstance(value, exp.Expr):
            return value.sql(dialect="spark")
        if isinstance(value, (tuple, list)):
            return "(" + ",".join(text(v) for v in value) + ")"
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return type(value).__name__ + "(" + ",".join(text(getattr(value, f.name)) for f in dataclasses.fields(value)) + ")"
        return repr(value)

    def printed() -> str:
        own: list[str] = [text(getattr(expr, f.name)) for f in dataclasses.fields(expr)] if dataclasses.is_dataclass(expr) else []
        return f"{expr.details()}|{';'.join(own)}"

    return expr.remembered("_state_payload", printed)


def state_keys(memo: Memo, forms: dict[tuple[int, Form], int], signatures: dict[int, str]) -> dict[int, str]:
    """A key for every group of an expanded memo that two plannings of one query agree on, so a
    state saved under one planning is found by the next. A group that is a TVR form of a
    template group is keyed ``form|signature``; any other group (a rule's intermediate
    relation, e.g. a consolidated Z-set) by a digest of its first expression in full, its
    inputs replaced by their keys. A group whose expression reaches back into itself gets no key:
    it is then never matched, which costs a recomputation, never a wrong state."""
    out: dict[int, str] = {memo.find(g): f"{f}|{signatures[t]}" for (t, f), g in forms.items() if t in signatures}
    unkeyed: set[int] = set()
    for g in memo.groups:
        _state_key(memo, out, unkeyed, g.id, frozenset())
    return out


def _state_key(memo: Memo, out: dict[int, str], unkeyed: set[int], group: int, active: frozenset[int]) -> str | None:
    group = memo.find(group)
    if group in out:
        return out[group]
    if group in active or group in unkeyed:
        return None
    expr = memo.group(group).exprs[0]
    inputs = []
    for child in expr.inputs:
        if isinstance(child, GroupRef):
            made = _state_key(memo, out, unkeyed, child.group, active | {group})
            if made is None:
                unkeyed.add(group)
                return None
            inputs.append(made)
    schema = ",".join(f"{f.name}:{f.type}" for f in memo.group(group).schema.fields)
    digest = hashlib.sha1(f"{type(expr).__name__}|{_payload(expr)}|{'/'.join(inputs)}|{schema}".encode()).hexdigest()[:20]
    out[group] = f"expr|{digest}"
    return out[group]


def committed_groups(memo: Memo, expansion: Expansion, signatures: dict[int, str], resume: Resume | None) -> dict[int, tuple[int, str]]:
    """The groups of the committed states this planning can read: group -> (time point, id)."""
    if resume is None or not resume.states:
        return {}
    groups: dict[str, int] = {}
    for group, key in state_keys(memo, expansion._forms, signatures).items():
        groups.setdefault(key, group)
    out: dict[int, tuple[int, str]] = {}
    for state in sorted(resume.states, key=lambda s: s.produced_at):
        found = groups.get(state.key)
        if found is not None and state.produced_at < resume.floor:
            out[found] = (state.produced_at, state.id)
    return out



__all__ = ["CommittedState", "Resume", "committed_groups", "state_keys", "template_signatures"]
