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

from tempura.algebra import Query
from tempura.sql.backend import to_spark_sql
from tempura.sql.output_names import output_names
from tempura.sql.parse import TableSchemas, parse_sql, qualify_tree


def parse_query(sql: str, schemas: TableSchemas, dialect: str = "spark") -> Query:
    """Bind ``sql`` (in sqlglot dialect ``dialect``) against table ``schemas`` into a plan.

    Raises :class:`~tempura.errors.SqlSyntaxError`, :class:`~tempura.errors.BindError` or
    :class:`~tempura.errors.UnsupportedQuery`, each located in the text.
    """
    from tempura.sql.binder import Binder

    parsed = parse_sql(sql, dialect)
    names = output_names(parsed, schemas)
    query = Binder(schemas, sql).bind(qualify_tree(parsed.copy(), schemas, sql, dialect))
    if names is not None and len(names) == len(query.names):
        query = dataclasses.replace(query, names=tuple(names))
    return query


__all__ = ["TableSchemas", "parse_query", "to_spark_sql"]
