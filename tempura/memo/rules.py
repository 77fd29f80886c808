"""The rule engine: rules with pattern operands, matched against the memo from a rule queue.

A rule's pattern is a tree of :class:`Operand` values. The root operand matches one memo
expression by operator class (and an optional predicate); a child operand matches *some*
expression of the corresponding input group, so one expression can bind a rule in many ways
(``Join(Join(A, B), C)`` binds once per join expression in the left input's group).

Whenever the memo gains an expression, the engine queues a match attempt for every rule whose
root operand accepts it, and — because the new expression can also complete a multi-level
pattern rooted above it — for every rule with child operands rooted at a parent expression of
its group (Calcite's VolcanoPlanner fires rules on parents the same way). The queue is drained
first in, first out until it is empty: exploration reaches a fixpoint. Rules return new plan
fragments (operators over group references) that the engine registers in the matched
expression's group. A rule never fires twice on the same binding.

Every firing that adds something is recorded in the :class:`Trace` when tracing is on.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

from tempura.algebra import LogicalPlan
from tempura.memo.memo import GroupRef, Memo


@dataclass(frozen=True)
class Operand:
    """Matches a memo expression of class ``kind`` that passes ``test``, whose inputs match
    ``children`` (an empty tuple matches any inputs)."""

    kind: type[LogicalPlan]
    children: tuple[Operand, ...] = ()
    test: Callable[[LogicalPlan], bool] | None = None

    def accepts(self, expr: LogicalPlan) -> bool:
        return isinstance(expr, self.kind) and (self.test is None or self.test(expr))


@dataclass
class RuleCall:
    """One binding of a rule: ``exprs`` are the matched expressions in pre-order, ``group`` the
    group of the root."""

    memo: Memo
    group: int
    exprs: tuple[LogicalPlan, ...]
    notes: list[str] = field(default_factory=list)

    @property
    def root(self) -> LogicalPlan:
        return self.exprs[0]


class Rule:
    """A named exploration rule. Subclasses set ``name`` and ``pattern`` and implement
    :meth:`apply`."""

    name: str = ""
    pattern: Operand

    def apply(self, call: RuleCall) -> Sequence[LogicalPlan]:
        """New plans equivalent to the binding's root (operators over group references)."""
        raise NotImplementedError


@dataclass(frozen=True)
class Firing:
    """One rule firing: what it matched and what it added."""

    rule: str
    group: int
    matched: str
    added: tuple[str, ...]

    def __str__(self) -> str:
        added = "; ".join(self.added) if self.added else "nothing new"
        return f"{self.rule} on G{self.group} {self.matched} -> {added}"


@dataclass
class Trace:
    """The rule firings of one optimization, in order, plus whole-group rules' notes."""

    firings: list[Firing] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for f in self.firings:
            out[f.rule] = out.get(f.rule, 0) + 1
        return out


def describe(expr: LogicalPlan) -> str:
    """One-line form of a memo expression or a fragment over group references."""
    if isinstance(expr, GroupRef):
        return expr.details()
    details = expr.details()
    head = expr.operator + (f"[{details}]" if details else "")
    if not expr.inputs:
        return head
    return head + "(" + ", ".join(describe(c) for c in expr.inputs) + ")"


class RuleEngine:
    """Drains a queue of (rule, expression) match attempts over a memo to a fixpoint."""

    def __init__(self, memo: Memo, rules: Sequence[Rule], trace: Trace | None = None, max_firings: int = 200_000):
        self.memo = memo
        self.rules = list(rules)
        self.trace = trace
        self.max_firings = max_firings
        self.firings = 0
        self._queue: deque[tuple[Rule, LogicalPlan]] = deque()
        self._queued: set[tuple[str, LogicalPlan]] = set()
        self._fired: set[tuple[str, tuple[LogicalPlan, ...]]] = set()
        self._multi = [r for r in self.rules if r.pattern.children]
        memo.listeners.append(self._on_add)

    def detach(self) -> None:
        """Stop listening to the memo's additions."""
        if self._on_add in self.memo.listeners:
            self.memo.listeners.remove(self._on_add)

    def seed(self) -> None:
        """Queue every expression already in the memo."""
        for _, expr in list(self.memo.expressions()):
            self._enqueue_all(expr)

    def _on_add(self, expr: LogicalPlan, group: int) -> None:
        self._enqueue_all(expr)
        for parent in list(self.memo.group(group).parents):
            for rule in self._multi:
                self._enqueue(rule, parent, again=True)

    def _enqueue_all(self, expr: LogicalPlan) -> None:
        for rule in self.rules:
            self._enqueue(rule, expr)

    def _enqueue(self, rule: Rule, expr: LogicalPlan, again: bool = False) -> None:
        if not rule.pattern.accepts(expr):
            return
        key = (rule.name, expr)
        if key in self._queued and not again:
            return
        self._queued.add(key)
        self._queue.append((rule, expr))

    def run(self) -> None:
        while self._queue and self.firings < self.max_firings:
            rule, expr = self._queue.popleft()
            group = self.memo.lookup(expr)
            if group is None:
                continue  # merged away under another fingerprint; its canonical form is queued
            expr = self.memo.canonical(expr)
            for binding in self._bindings(rule.pattern, expr):
                key = (rule.name, binding)
                if key in self._fired:
                    continue
                self._fired.add(key)
                self.firings += 1
                self._fire(rule, RuleCall(self.memo, group, binding))
                group = self.memo.find(group)

    def _fire(self, rule: Rule, call: RuleCall) -> None:
        results = rule.apply(call)
        added: list[str] = []
        for plan in results:
            before = self.memo.size()
            target = self.memo.find(call.group)
            self.memo.insert(plan, into=target)
            if self.memo.size() != before:
                added.append(describe(plan))
        if self.trace is not None and (added or call.notes):
            self.trace.firings.append(
                Firing(rule.name, self.memo.find(call.group), describe(call.root), tuple(added + call.notes))
            )

    def _bindings(self, operand: Operand, expr: LogicalPlan) -> Iterator[tuple[LogicalPlan, ...]]:
        if not operand.accepts(expr):
            return
        if not operand.children:
            yield (expr,)
            return
        if len(operand.children) != len(expr.inputs):
            return
        yield from self._child_bindings(operand.children, expr.inputs, (expr,))

    def _child_bindings(
        self, operands: tuple[Operand, ...], inputs: tuple[LogicalPlan, ...], prefix: tuple[LogicalPlan, ...]
    ) -> Iterator[tuple[LogicalPlan, ...]]:
        if not operands:
            yield prefix
            return
        first, rest = operands[0], operands[1:]
        ref = inputs[0]
        assert isinstance(ref, GroupRef)
        if first.kind is LogicalPlan and not first.children and first.test is None:
            yield from self._child_bindings(rest, inputs[1:], prefix)  # "any input": binds nothing
            return
        for child in list(self.memo.group(ref.group).exprs):
            for sub in self._bindings(first, child):
                yield from self._child_bindings(rest, inputs[1:], prefix + sub)
