"""The Cascades memo: groups with fingerprint deduplication, physical properties, the rule
engine, the cost-bounded search and plan extraction. See ``docs/optimizer.md``."""

from tempura.memo.memo import Group, GroupRef, Memo, TvrMetaSet
from tempura.memo.properties import ANY, NO_PROPS, Distribution, Props
from tempura.memo.rules import Firing, Operand, Rule, RuleCall, RuleEngine, Trace, describe
from tempura.memo.search import Alternative, Implementer, PhysicalPlan, Search, SearchReport, Winner

__all__ = [
    "ANY",
    "NO_PROPS",
    "Alternative",
    "Distribution",
    "Firing",
    "Group",
    "GroupRef",
    "Implementer",
    "Memo",
    "Operand",
    "PhysicalPlan",
    "Props",
    "Rule",
    "RuleCall",
    "RuleEngine",
    "Search",
    "SearchReport",
    "Trace",
    "TvrMetaSet",
    "Winner",
    "describe",
]
