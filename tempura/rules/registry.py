"""The rule registry: every rule of the optimizer as one named unit, and the one name check.

Rules come in the shapes their engines need — a normalization :class:`~tempura.rules.base.Rewrite`,
a memo :class:`~tempura.memo.Rule` (exploration and collapse), a physical
:class:`~tempura.rules.base.Implementation`, a :class:`~tempura.rules.tvr.TvrRule` — and each is
listed here as a :class:`RuleInfo`: its name, family, pattern and the algebra of its docstring.
:meth:`Registry.check` is the only place a name a user disables is checked (the optimizer's phases
are disabled by name too, so it checks those with the rules); ``tempura rules`` prints
:meth:`Registry.infos`.

Families, in the order the optimizer's phases use them: ``normalize``, ``explore``, ``collapse``,
``implement``, ``enforce`` and ``tvr``; TVR rules are grouped by operator family (``scan``,
``join``, ``outer join``, ``aggregate``, …).
"""

from __future__ import annotations

import difflib
import inspect
from dataclasses import dataclass
from typing import Iterable

from tempura.algebra import LogicalPlan
from tempura.errors import TempuraError
from tempura.memo import Operand, Rule
from tempura.rules.base import Implementation, Rewrite
from tempura.rules.logical import PRUNE, prune_columns
from tempura.rules.logical import RULES as REWRITES
from tempura.rules.logical.collapse import RULE_CLASSES as COLLAPSE_RULES
from tempura.rules.logical.joins import JoinAssociate, JoinCommute, JoinPushThroughJoin
from tempura.rules.logical.reorder import DP_LIMIT, JoinReorder
from tempura.rules.physical import ENFORCERS, IMPLEMENTATIONS
from tempura.rules.physical.tvr import KEYED_READ
from tempura.rules.tvr import RULES as TVR_RULES
from tempura.rules.tvr import TvrRule

FAMILIES = ("normalize", "explore", "collapse", "implement", "enforce", "tvr")


@dataclass(frozen=True)
class RuleInfo:
    """One rule: ``group`` is the TVR operator family (else the family again), ``method`` the
    incremental method a TVR rule belongs to."""

    name: str
    family: str
    group: str
    pattern: str
    doc: str
    method: str = ""

    @property
    def summary(self) -> str:
        """The docstring's first sentence (at most 140 characters)."""
        first = self.doc.split(". ")[0].rstrip(".")
        return first if len(first) <= 140 else first[:139] + "…"

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "family": self.family, "group": self.group, "pattern": self.pattern, "doc": self.doc,
                "method": self.method}


def exploration_rules(dp_limit: int = DP_LIMIT) -> list[Rule]:
    """The memo's join exploration rules, the enumerator first."""
    return [JoinReorder(dp_limit), JoinCommute(), JoinAssociate(), JoinPushThroughJoin()]


def _algebra(obj: object) -> str:
    """The first paragraph of a rule's docstring, on one line."""
    doc = inspect.getdoc(obj) or ""
    return " ".join(doc.split("\n\n")[0].split())


def operand_text(operand: Operand) -> str:
    """A memo rule's pattern as printed: ``Join(Join, any)``."""
    name = "any" if operand.kind is LogicalPlan else operand.kind.__name__
    return name + (f"({', '.join(operand_text(c) for c in operand.children)})" if operand.children else "")


def _rewrite(rule: Rewrite) -> RuleInfo:
    return RuleInfo(rule.name, "normalize", "normalize", rule.shape, " ".join(rule.doc.split()))


def _memo_rule(rule: Rule, family: str) -> RuleInfo:
    return RuleInfo(rule.name, family, family, operand_text(rule.pattern), _algebra(type(rule)))


def _implementation(rule: Implementation) -> RuleInfo:
    family = "enforce" if rule.enforcer else "implement"
    return RuleInfo(rule.name, family, family, rule.pattern, rule.doc)


def _tvr(rule: TvrRule) -> RuleInfo:
    pattern = " | ".join(c.__name__ for c in rule.pattern) if rule.pattern else (
        "any operator" if rule.per_expression else "the whole group")
    return RuleInfo(rule.name, "tvr", rule.family, f"{pattern} → {rule.produces.value}", _algebra(type(rule)), rule.method)


class Registry:
    """Every rule, by name (names are unique across families)."""

    def __init__(self, infos: Iterable[RuleInfo]) -> None:
        self._infos: dict[str, RuleInfo] = {}
        for info in infos:
            if info.name in self._infos:
                raise ValueError(f"two rules are named '{info.name}'")
            self._infos[info.name] = info

    def infos(self, family: str | None = None) -> list[RuleInfo]:
        return [i for i in self._infos.values() if family is None or i.family == family]

    def names(self, *families: str) -> list[str]:
        return [i.name for i in self._infos.values() if not families or i.family in families]

    def __contains__(self, name: object) -> bool:
        return name in self._infos

    def check(self, disabled: Iterable[str], phases: Iterable[str] = ()) -> frozenset[str]:
        """``disabled`` as a set, every name a rule's or one of ``phases``; else one error naming
        each unknown name, with the closest known one."""
        off = frozenset(disabled)
        known = [*self._infos, *phases]
        unknown = sorted(off - set(known))
        if not unknown:
            return off
        hints = []
        for name in unknown:
            close = difflib.get_close_matches(name, known, n=1)
            hints.append(f"{name} (did you mean {close[0]}?)" if close else name)
        raise TempuraError(f"unknown rule(s): {', '.join(hints)}; `tempura rules` lists every rule and phase")


def _build() -> Registry:
    return Registry([
        *(_rewrite(r) for r in REWRITES),
        RuleInfo(PRUNE, "normalize", "normalize", "any plan", _algebra(prune_columns)),
        *(_memo_rule(r, "explore") for r in exploration_rules()),
        *(_memo_rule(cls(), "collapse") for cls in COLLAPSE_RULES),
        *(_implementation(r) for r in (*IMPLEMENTATIONS, KEYED_READ, *ENFORCERS)),
        *(_tvr(r) for r in TVR_RULES),
    ])


REGISTRY = _build()

__all__ = ["FAMILIES", "REGISTRY", "Registry", "RuleInfo", "exploration_rules", "operand_text"]
