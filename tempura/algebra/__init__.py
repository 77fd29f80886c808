"""The logical algebra: immutable plan operators, their schemas, printing and validation.

Scalar expressions are sqlglot expressions; column references are plan-unique names.
"""

from tempura.algebra.expressions import by_sql, col, column_name, columns_in, conjoin, conjuncts, substitute
from tempura.algebra.operators import (
    Aggregate,
    AggregateCall,
    Distinct,
    Except,
    Filter,
    Intersect,
    Join,
    JoinKind,
    Limit,
    LogicalPlan,
    Project,
    Projection,
    Query,
    Repeat,
    Scan,
    ScanColumn,
    SetOperation,
    Sort,
    SortKey,
    Union,
    Values,
)
from tempura.algebra.printer import format_plan
from tempura.algebra.schema import UNKNOWN_TYPE, Field, Schema
from tempura.algebra.validate import InvalidPlan, validate_plan

__all__ = [
    "Aggregate",
    "AggregateCall",
    "Distinct",
    "Except",
    "Field",
    "Filter",
    "Intersect",
    "InvalidPlan",
    "Join",
    "JoinKind",
    "Limit",
    "LogicalPlan",
    "Project",
    "Projection",
    "Query",
    "Repeat",
    "Scan",
    "ScanColumn",
    "Schema",
    "SetOperation",
    "Sort",
    "SortKey",
    "UNKNOWN_TYPE",
    "Union",
    "Values",
    "col",
    "column_name",
    "columns_in",
    "by_sql",
    "conjoin",
    "conjuncts",
    "format_plan",
    "substitute",
    "validate_plan",
]
