"""SQL in and out: the front end (text → ``tempura.algebra``) and the back end (plan → Spark SQL).

>>> from tempura.sql import parse_query, to_spark_sql
>>> q = parse_query("SELECT a, SUM(b) AS s FROM t GROUP BY a", {"t": {"a": "int", "b": "bigint"}})
>>> print(q.plan)
Project [a, s]
  Aggregate keys=[a] calls=[s := SUM(b)]
    Scan t [a, b]
>>> to_spark_sql(q)
'SELECT t.a AS a, SUM(t.b) AS s FROM t AS t GROUP BY t.a'
"""

from __future__ import annotations

import dataclasses
import json

from sqlglot import exp

from tempura.algebra import Query
from tempura.errors import InternalError, UnsupportedQuery
from tempura.sql.backend import to_spark_sql
from tempura.sql.opaque import Analyze, Part, carve, stand_in_schemas, with_opaque_parts
from tempura.sql.output_names import output_names
from tempura.sql.parse import TableSchemas, parse_sql, qualify_tree
from tempura.sql.settle import Describe, settle_types


def parse_query(sql: str, schemas: TableSchemas, dialect: str = "spark", describe: Describe | None = None,
                result: str | None = None, analyze: Analyze | None = None) -> Query:
    """Bind ``sql`` (in sqlglot dialect ``dialect``) against table ``schemas`` into a plan.

    ``result`` is Spark's analysis of the query as written (its result ``StructType`` as JSON,
    :func:`tempura.runtime.executor.spark_result`): Spark is the authority on what the result's
    columns are called and typed, so the query's names are Spark's, and it is delivered with
    Spark's types. Without it (no Spark to ask: a plan made from declared schemas alone), the names
    are read from the text as Spark would print them (:func:`output_names`), and the delivery that
    runs later asks Spark.

    With ``describe`` (Spark's analyzer, :func:`tempura.runtime.executor.analyzed_types`), the
    columns sqlglot cannot type are typed as Spark types them (:func:`settle_types`).

    With ``analyze`` (Spark's analysis over the catalog's tables), a construct tempura does not
    plan natively runs as an opaque Spark subplan (:mod:`tempura.sql.opaque`) instead of being
    refused.

    Raises :class:`~tempura.errors.SqlSyntaxError`, :class:`~tempura.errors.BindError` or
    :class:`~tempura.errors.UnsupportedQuery`, each located in the text.
    """
    parsed = parse_sql(sql, dialect)
    query = _bind(parsed, sql, schemas, dialect, analyze, result)
    if result is not None:
        names = [f["name"] for f in json.loads(result)["fields"]]
        if len(names) != len(query.names):
            raise InternalError(f"tempura's plan of the query has {len(query.names)} result columns where Spark's "
                                f"analysis has {len(names)}: {', '.join(names)}")
        query = dataclasses.replace(query, names=tuple(names), result=result)
    else:
        guessed = output_names(parsed, schemas)
        if guessed is not None and len(guessed) == len(query.names):
            query = dataclasses.replace(query, names=tuple(guessed))
    return query if describe is None else settle_types(query, describe)


_MOST_PARTS = 16
"""Refused constructs one query may carve out as opaque parts before the whole query is one."""


def _bind(parsed: exp.Query, sql: str, schemas: TableSchemas, dialect: str, analyze: Analyze | None,
          result: str | None) -> Query:
    """The bound plan of ``parsed``, with the parts tempura does not plan natively as opaque Spark
    subplans when ``analyze`` can say what they are."""
    from tempura.sql.binder import Binder

    parts: dict[str, Part] = {}
    tree = parsed.copy()
    for _ in range(_MOST_PARTS + 1):
        known = {**schemas, **stand_in_schemas(parts)}
        try:
            query = Binder(known, sql).bind(qualify_tree(tree.copy(), known, sql, dialect))
        except UnsupportedQuery as refusal:
            if analyze is None or dialect != "spark" or any(p.whole for p in parts.values()):
                raise
            tree = carve(tree, refusal, sql, schemas, analyze, parts, result, whole_only=len(parts) >= _MOST_PARTS)
            continue
        if not parts:
            return query
        plan = with_opaque_parts(query.plan, parts, schemas)
        whole = any(p.whole for p in parts.values())
        return dataclasses.replace(query, plan=plan, ordered=query.ordered or (whole and parsed.args.get("order") is not None))
    raise InternalError("the query's opaque parts did not settle")


__all__ = ["Describe", "TableSchemas", "parse_query", "to_spark_sql"]
