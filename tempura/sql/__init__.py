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

from tempura.algebra import Query
from tempura.errors import InternalError
from tempura.sql.backend import to_spark_sql
from tempura.sql.output_names import output_names
from tempura.sql.parse import TableSchemas, parse_sql, qualify_tree
from tempura.sql.settle import Describe, settle_types


def parse_query(sql: str, schemas: TableSchemas, dialect: str = "spark", describe: Describe | None = None,
                result: str | None = None) -> Query:
    """Bind ``sql`` (in sqlglot dialect ``dialect``) against table ``schemas`` into a plan.

    ``result`` is Spark's analysis of the query as written (its result ``StructType`` as JSON,
    :func:`tempura.runtime.executor.spark_result`): Spark is the authority on what the result's
    columns are called and typed, so the query's names are Spark's, and it is delivered with
    Spark's types. Without it (no Spark to ask: a plan made from declared schemas alone), the names
    are read from the text as Spark would print them (:func:`output_names`), and the delivery that
    runs later asks Spark.

    With ``describe`` (Spark's analyzer, :func:`tempura.runtime.executor.analyzed_types`), the
    columns sqlglot cannot type are typed as Spark types them (:func:`settle_types`).

    Raises :class:`~tempura.errors.SqlSyntaxError`, :class:`~tempura.errors.BindError` or
    :class:`~tempura.errors.UnsupportedQuery`, each located in the text.
    """
    from tempura.sql.binder import Binder

    parsed = parse_sql(sql, dialect)
    query = Binder(schemas, sql).bind(qualify_tree(parsed.copy(), schemas, sql, dialect))
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


__all__ = ["Describe", "TableSchemas", "parse_query", "to_spark_sql"]
