"""Spark fidelity, differentially: random schemas, data and queries, each run by tempura and by
``spark.sql``, compared on column names, types and the bag of rows (``tempura bench fidelity``).

The generator is grammar-based, in the spirit of SQLancer's and sqlsmith's: it builds a query
top-down from a typed grammar, so that every expression it writes is well typed for Spark and
the comparison is of answers, not of errors.

- **Schemas and data.** Two to four tables of two to five columns each, of Spark's common types
  (int, bigint, double, decimal, string, date, timestamp, boolean). Rows hold NULLs, duplicates,
  extreme values (the integers' bounds, zero, negative decimals), empty and unicode strings; a
  table may be empty.
- **Queries.** Joins of every kind (inner, left, right, full, cross, semi, anti) and ``USING``;
  filters; ``IN``/``EXISTS``/scalar subqueries, correlated or not; ``GROUP BY`` with ``HAVING``,
  ``ROLLUP``, ``CUBE`` and ``GROUPING SETS``; window functions; ``DISTINCT``; set operations;
  ``ORDER BY`` with ``LIMIT``; CTEs and derived tables; and Spark's built-in functions by type.
- **Standing queries** (``--standing``): the random tables' rows arrive over three time points
  (an ``arrived_at`` column), and each query is simulated under every method, every delivered
  time point compared with ``spark.sql`` on its snapshot.
- **Outcomes.** ``equal`` (names, types and rows), ``wrong`` (any difference), ``crash`` (an
  error that is not a one-line refusal: a Python exception, ``InternalError``, a plan Spark
  rejected), ``refused`` (tempura's one-line refusal of a construct it does not plan), and
  ``spark-rejects`` (Spark itself rejects the text: not counted against tempura). Each query is
  tagged with the constructs it uses, and the report counts outcomes per construct.
"""

from __future__ import annotations

import datetime as dt
import decimal
import random
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

TYPES = ("int", "bigint", "double", "decimal(10,2)", "string", "date", "timestamp", "boolean")
NUMERIC = ("int", "bigint", "double", "decimal(10,2)")
OUTCOMES = ("equal", "wrong", "crash", "refused", "spark-rejects")


@dataclass
class Table:
    name: str
    columns: list[tuple[str, str]]
    rows: list[tuple[Any, ...]]


@dataclass
class Relation:
    """A relation in a query's FROM: its alias and its columns' names and types."""

    alias: str
    columns: list[tuple[str, str]]


@dataclass
class Generated:
    sql: str
    constructs: set[str] = field(default_factory=set)
    columns: list[tuple[str, str]] = field(default_factory=list)  # an aliased select's names and types


def value(rng: random.Random, type_: str) -> Any:
    """A random value of ``type_``, NULL one time in six, extremes now and then."""
    if rng.random() < 1 / 6:
        return None
    pick = rng.random()
    if type_ == "int":
        return rng.choice([0, 1, -1, 2, 3, 7, 2147483647, -2147483648]) if pick < 0.3 else rng.randint(-5, 9)
    if type_ == "bigint":
        return rng.choice([0, 10, -10, 9223372036854775807, -9223372036854775808]) if pick < 0.2 else rng.randint(-50, 90)
    if type_ == "double":
        return rng.choice([0.0, -0.5, 1.5, 1e10, -2.25]) if pick < 0.4 else round(rng.uniform(-10, 10), 2)
    if type_ == "decimal(10,2)":
        return decimal.Decimal(rng.choice(["0.00", "-7.50", "99999999.99", "1.25"]) if pick < 0.3
                               else f"{rng.randint(-999, 999) / 100:.2f}")
    if type_ == "string":
        return rng.choice(["", "a", "ab", "B", "xyz", "ü", "名前", "a b", "10"]) if pick < 0.9 else "Zz"
    if type_ == "date":
        return dt.date(2024, 1, 1) + dt.timedelta(days=rng.randint(-400, 400)) if pick < 0.9 else dt.date(1970, 1, 1)
    if type_ == "timestamp":
        return dt.datetime(2024, 1, 1) + dt.timedelta(seconds=rng.randint(-10**7, 10**7))
    if type_ == "boolean":
        return rng.random() < 0.5
    raise ValueError(type_)


def random_tables(rng: random.Random) -> list[Table]:
    """Two to four tables sharing some column names (for joins and USING)."""
    shared = [("k", "int"), ("g", "string")]
    tables = []
    for i in range(rng.randint(2, 4)):
        columns = list(rng.sample(shared, rng.randint(1, 2)))
        for j in range(rng.randint(1, 3)):
            columns.append((f"c{i}{j}", rng.choice(TYPES)))
        count = 0 if rng.random() < 0.08 else rng.randint(1, 8)
        rows = [tuple(value(rng, t) for _, t in columns) for _ in range(count)]
        if rows and rng.random() < 0.5:
            rows.append(rows[0])  # a duplicate
        tables.append(Table(f"t{i}", columns, rows))
    return tables


class QueryGenerator:
    """Random, well-typed Spark SQL over ``tables``."""

    def __init__(self, rng: random.Random, tables: list[Table]) -> None:
        self.rng = rng
        self.tables = tables
        self.names = 0

    def fresh(self, prefix: str) -> str:
        self.names += 1
        return f"{prefix}{self.names}"

    # -- expressions -------------------------------------------------------------------------

    def column(self, scope: list[Relation], types: tuple[str, ...] | None = None) -> tuple[str, str] | None:
        found = [(f"{r.alias}.{c}", t) for r in scope for c, t in r.columns if types is None or t in types]
        return self.rng.choice(found) if found else None

    def literal(self, type_: str) -> str:
        v = value(self.rng, type_)
        if v is None:
            return f"CAST(NULL AS {type_.upper()})"
        if type_ == "string":
            return "'" + str(v).replace("'", "\\'") + "'"
        if type_ == "date":
            return f"DATE '{v.isoformat()}'"
        if type_ == "timestamp":
            return f"TIMESTAMP '{v.isoformat(sep=' ')}'"
        if type_ == "boolean":
            return "TRUE" if v else "FALSE"
        if type_ == "bigint":
            return f"{v}L" if abs(v) < 10**18 else f"CAST({v} AS BIGINT)"
        if type_ == "double":
            return f"CAST({v!r} AS DOUBLE)"
        if type_.startswith("decimal"):
            return f"CAST({v} AS DECIMAL(10,2))"
        return str(v)

    def expression(self, scope: list[Relation], type_: str, depth: int, g: Generated) -> str:
        """An expression of ``type_`` over ``scope``'s columns."""
        rng = self.rng
        if depth <= 0 or rng.random() < 0.35:
            found = self.column(scope, (type_,))
            if found is not None and rng.random() < 0.8:
                return found[0]
            return self.literal(type_)
        builders = self.builders(type_)
        name, build = rng.choice(builders)
        g.constructs.add(name)
        return build(scope, depth - 1, g)

    def builders(self, type_: str) -> list[tuple[str, Callable[[list[Relation], int, Generated], str]]]:
        e = self.expression
        rng = self.rng
        out: list[tuple[str, Callable[[list[Relation], int, Generated], str]]] = [
            ("case", lambda s, d, g: f"CASE WHEN {e(s, 'boolean', d, g)} THEN {e(s, type_, d, g)} "
                                      f"ELSE {e(s, type_, d, g)} END"),
            ("coalesce", lambda s, d, g: f"coalesce({e(s, type_, d, g)}, {e(s, type_, d, g)})"),
        ]
        if type_ in NUMERIC:
            op = rng.choice(["+", "-", "*"])
            out += [
                ("arithmetic", lambda s, d, g: f"({e(s, type_, d, g)} {op} {e(s, type_, d, g)})"),
                ("abs", lambda s, d, g: f"abs({e(s, type_, d, g)})"),
                ("cast", lambda s, d, g: f"CAST({e(s, rng.choice(NUMERIC), d, g)} AS {type_.upper()})"),
            ]
            if type_ in ("int", "bigint"):
                out += [("length", lambda s, d, g: f"CAST(length({e(s, 'string', d, g)}) AS {type_.upper()})"),
                        ("date part", lambda s, d, g: f"CAST(year({e(s, 'date', d, g)}) AS {type_.upper()})")]
            if type_ == "double":
                out += [("round", lambda s, d, g: f"round({e(s, 'double', d, g)}, 1)")]
        elif type_ == "string":
            out += [
                ("upper", lambda s, d, g: f"upper({e(s, 'string', d, g)})"),
                ("concat", lambda s, d, g: f"concat({e(s, 'string', d, g)}, {e(s, 'string', d, g)})"),
                ("substr", lambda s, d, g: f"substr({e(s, 'string', d, g)}, 1, 2)"),
                ("cast", lambda s, d, g: f"CAST({e(s, rng.choice(('int', 'date', 'boolean')), d, g)} AS STRING)"),
                ("date_format", lambda s, d, g: f"date_format({e(s, 'date', d, g)}, 'yyyy-MM')"),
                ("lpad", lambda s, d, g: f"lpad({e(s, 'string', d, g)}, 3, '*')"),
            ]
        elif type_ == "boolean":
            t = rng.choice(TYPES[:7])
            cmp = rng.choice(["=", "<>", "<", ">=", "<=>"])
            out += [
                ("comparison", lambda s, d, g: f"{e(s, t, d, g)} {cmp} {e(s, t, d, g)}"),
                ("and/or", lambda s, d, g: f"({e(s, 'boolean', d, g)} {rng.choice(['AND', 'OR'])} "
                                           f"{e(s, 'boolean', d, g)})"),
                ("not", lambda s, d, g: f"NOT ({e(s, 'boolean', d, g)})"),
                ("is null", lambda s, d, g: f"{e(s, t, d, g)} IS {rng.choice(['', 'NOT '])}NULL"),
                ("between", lambda s, d, g: f"{e(s, 'int', d, g)} BETWEEN {self.literal('int')} AND {self.literal('int')}"),
                ("in list", lambda s, d, g: f"{e(s, 'string', d, g)} IN ({self.literal('string')}, {self.literal('string')})"),
                ("like", lambda s, d, g: f"{e(s, 'string', d, g)} LIKE '{rng.choice(['a%', '%b', '_', '%'])}'"),
            ]
        elif type_ == "date":
            out += [("date_add", lambda s, d, g: f"date_add({e(s, 'date', d, g)}, {rng.randint(-3, 3)})"),
                    ("cast", lambda s, d, g: f"CAST({e(s, 'timestamp', d, g)} AS DATE)")]
        elif type_ == "timestamp":
            out += [("cast", lambda s, d, g: f"CAST({e(s, 'date', d, g)} AS TIMESTAMP)")]
        return out

    # -- relations ---------------------------------------------------------------------------

    def table(self) -> tuple[str, Relation]:
        table = self.rng.choice(self.tables)
        alias = self.fresh("r")
        return f"{table.name} AS {alias}", Relation(alias, list(table.columns))

    def from_clause(self, g: Generated, depth: int) -> tuple[str, list[Relation]]:
        rng = self.rng
        if depth > 0 and rng.random() < 0.15:
            inner = self.select(Generated(""), depth - 1, allow_order=False, alias_all=True)
            alias = self.fresh("d")
            g.constructs |= inner.constructs | {"derived table"}
            return f"({inner.sql}) AS {alias}", [Relation(alias, inner.columns)]
        text, relation = self.table()
        scope = [relation]
        for _ in range(rng.choice([0, 0, 1, 1, 2])):
            right_text, right = self.table()
            kind = rng.choice(["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN", "CROSS JOIN", "LEFT SEMI JOIN",
                               "LEFT ANTI JOIN"])
            shared = [c for c, t in right.columns if any(c == c2 and t == t2 for r in scope for c2, t2 in r.columns)]
            g.constructs.add(kind.lower())
            if kind == "CROSS JOIN":
                text += f" CROSS JOIN {right_text}"
            elif shared and rng.random() < 0.3 and "SEMI" not in kind and "ANTI" not in kind and len(scope) == 1:
                g.constructs.add("using")
                text += f" {kind} {right_text} USING ({shared[0]})"
                right = Relation(right.alias, [c for c in right.columns if c[0] != shared[0]])
            else:
                left = self.column(scope, ("int", "string"))
                assert left is not None
                match = [c for c, t in right.columns if t == left[1]]
                condition = f"{left[0]} = {right.alias}.{match[0]}" if match else "TRUE"
                if rng.random() < 0.3:
                    condition += f" AND {self.expression(scope + [right], 'boolean', 1, g)}"
                text += f" {kind} {right_text} ON {condition}"
            if "SEMI" not in kind and "ANTI" not in kind:
                scope.append(right)
        if rng.random() < 0.1:
            text, scope = self.with_range(text, scope, g)
        if rng.random() < 0.1:
            text, scope = self.lateral_view(text, scope, g)
        return text, scope

    def with_range(self, text: str, scope: list[Relation], g: Generated) -> tuple[str, list[Relation]]:
        """A join with the table-valued function ``range(…)``."""
        alias = self.fresh("g")
        left = self.column(scope, ("int", "bigint"))
        condition = f"{left[0]} = {alias}.id" if left is not None else "TRUE"
        g.constructs.add("range()")
        return (f"{text} {self.rng.choice(['JOIN', 'LEFT JOIN'])} range({self.rng.randint(0, 2)}, {self.rng.randint(2, 6)}) "
                f"AS {alias} ON {condition}"), scope + [Relation(alias, [("id", "bigint")])]

    def lateral_view(self, text: str, scope: list[Relation], g: Generated) -> tuple[str, list[Relation]]:
        """``LATERAL VIEW [OUTER] explode / posexplode`` of an array of the scope's columns."""
        rng = self.rng
        type_ = rng.choice(("int", "bigint", "string"))
        elements = [self.expression(scope, type_, 1, g) for _ in range(rng.randint(1, 3))]
        array = f"array({', '.join(elements)})" if rng.random() < 0.8 else f"CAST(NULL AS ARRAY<{type_.upper()}>)"
        alias = self.fresh("e")
        outer = rng.choice(["", "OUTER "])
        if rng.random() < 0.5:
            g.constructs.add("lateral view explode")
            return f"{text} LATERAL VIEW {outer}explode({array}) {alias} AS {alias}v", scope + [Relation(alias, [(f"{alias}v", type_)])]
        g.constructs.add("lateral view posexplode")
        return (f"{text} LATERAL VIEW {outer}posexplode({array}) {alias} AS {alias}p, {alias}v",
                scope + [Relation(alias, [(f"{alias}p", "int"), (f"{alias}v", type_)])])

    def key(self, scope: list[Relation], type_: str, g: Generated) -> str:
        """A grouping key: an expression, never a bare integer literal (Spark reads that as a position)."""
        key = self.expression(scope, type_, 1, g)
        return f"CAST({key} AS {type_.upper()})" if key.lstrip("-").isdigit() else key

    def predicate(self, scope: list[Relation], g: Generated, depth: int) -> str:
        rng = self.rng
        if depth > 0 and rng.random() < 0.3:
            inner_text, inner_rel = self.table()
            column = self.column(scope, ("int",)) or self.column(scope)
            assert column is not None
            match = [c for c, t in inner_rel.columns if t == column[1]]
            correlated = rng.random() < 0.5
            where = f" WHERE {inner_rel.alias}.{match[0]} = {column[0]}" if correlated and match else ""
            kind = rng.choice(["in", "exists", "scalar"]) if match else "exists"
            g.constructs.add(f"{kind} subquery" + (" (correlated)" if where else ""))
            if kind == "in":
                negate = rng.choice(["", "NOT "])
                return f"{column[0]} {negate}IN (SELECT {inner_rel.alias}.{match[0]} FROM {inner_text}{where})"
            if kind == "exists":
                return f"{rng.choice(['', 'NOT '])}EXISTS (SELECT 1 FROM {inner_text}{where})"
            return f"{column[0]} {rng.choice(['=', '<', '>='])} (SELECT max({inner_rel.alias}.{match[0]}) FROM {inner_text}{where})"
        return self.expression(scope, "boolean", 2, g)

    def select(self, g: Generated, depth: int = 2, allow_order: bool = True, alias_all: bool = False,
               item_types: list[str] | None = None) -> Generated:
        """A query block; ``item_types`` forces a plain (not aggregated) select of items of those types."""
        rng = self.rng
        from_text, scope = self.from_clause(g, depth)
        where = f" WHERE {self.predicate(scope, g, depth)}" if rng.random() < 0.6 else ""
        items: list[str] = []
        types: list[str] = []
        names: list[str] = []
        group = ""
        having = ""
        aggregated = item_types is None and rng.random() < 0.35
        if aggregated:
            key_types = [rng.choice(TYPES) for _ in range(rng.randint(0, 2))]
            keys = [self.key(scope, t, g) for t in key_types]
            calls = []
            call_types = []
            for _ in range(rng.randint(1, 3)):
                t = rng.choice(NUMERIC)
                call = rng.choice(["sum", "min", "max", "avg", "count", "count distinct", "percentile_cont"])
                argument = self.expression(scope, t, 1, g)
                if call == "percentile_cont":
                    calls.append(f"percentile_cont({rng.choice(['0.5', '0.25', '1.0'])}) WITHIN GROUP (ORDER BY {argument})")
                else:
                    calls.append(f"count(DISTINCT {argument})" if call == "count distinct" else f"{call}({argument})")
                call_types.append("bigint" if call.startswith("count") or (call == "sum" and t == "int")
                                  else "double" if call in ("avg", "percentile_cont") and t != "decimal(10,2)" else t)
                g.constructs.add(call)
            if rng.random() < 0.15:
                calls.append("count(*)")
                call_types.append("bigint")
            items = keys + calls
            types = key_types + call_types
            if keys:
                form = rng.random()
                if form < 0.1 and len(keys) >= 1:
                    group = f" GROUP BY ROLLUP ({', '.join(keys)})"
                    g.constructs.add("rollup")
                elif form < 0.18:
                    group = f" GROUP BY CUBE ({', '.join(keys)})"
                    g.constructs.add("cube")
                elif form < 0.25:
                    group = f" GROUP BY GROUPING SETS (({', '.join(keys)}), ())"
                    g.constructs.add("grouping sets")
                else:
                    group = f" GROUP BY {', '.join(keys)}"
                    g.constructs.add("group by")
            else:
                g.constructs.add("global aggregate")
            if rng.random() < 0.3:
                having = f" HAVING {calls[0]} IS NOT NULL" if rng.random() < 0.5 else f" HAVING count(*) > {rng.randint(0, 2)}"
                g.constructs.add("having")
        else:
            for type_ in item_types or [rng.choice(TYPES) for _ in range(rng.randint(1, 4))]:
                types.append(type_)
                items.append(self.expression(scope, type_, 2, g))
            if item_types is None and rng.random() < 0.2:
                part = self.column(scope)
                order = self.column(scope, NUMERIC + ("string", "date"))
                summed = self.column(scope, NUMERIC)
                function = rng.choice(["row_number()", "rank()", "dense_rank()", "count(*)",
                                       f"sum({summed[0] if summed is not None else 1})"])
                if part is not None and order is not None:
                    items.append(f"{function} OVER (PARTITION BY {part[0]} ORDER BY {order[0]})")
                    types.append("bigint" if not function.startswith("sum") else "double")
                    g.constructs.add("window")
        aliased = []
        for i, item in enumerate(items):
            if alias_all or rng.random() < 0.5:
                name = f"x{i}"
                aliased.append(f"{item} AS {name}")
                names.append(name)
            else:
                aliased.append(item)
                names.append(item)
        distinct = "DISTINCT " if not aggregated and rng.random() < 0.15 else ""
        if distinct:
            g.constructs.add("distinct")
        sql = f"SELECT {distinct}{', '.join(aliased)} FROM {from_text}{where}{group}{having}"
        if allow_order and rng.random() < 0.3:
            positions = ", ".join(str(i + 1) for i in range(len(items)))
            sql += f" ORDER BY {positions}"
            g.constructs.add("order by")
            if rng.random() < 0.5:
                sql += f" LIMIT {rng.randint(0, 4)}"
                g.constructs.add("limit")
        g.sql = sql
        g.constructs.add("select")
        g.columns = list(zip(names, types))
        return g

    def query(self) -> Generated:
        g = Generated("")
        rng = self.rng
        if rng.random() < 0.12:
            left = self.select(Generated(""), 1, allow_order=False)
            right = self.select(Generated(""), 1, allow_order=False, item_types=[t for _, t in left.columns])
            op = rng.choice(["UNION", "UNION ALL", "INTERSECT", "EXCEPT", "INTERSECT ALL", "EXCEPT ALL"])
            g.constructs |= left.constructs | right.constructs | {op.lower()}
            g.sql = f"SELECT * FROM ({left.sql}) {op} SELECT * FROM ({right.sql})"
            return g
        if rng.random() < 0.1:
            inner = self.select(Generated(""), 1, allow_order=False, alias_all=True)
            g.constructs |= inner.constructs | {"cte"}
            g.sql = f"WITH w AS ({inner.sql}) SELECT * FROM w"
            return g
        return self.select(g)


@dataclass
class Outcome:
    sql: str
    outcome: str
    constructs: set[str]
    detail: str = ""


def run(queries: int, seed: int, spark: Any, workdir: Path, per_schema: int = 25,
        progress: Callable[[int], None] | None = None) -> list[Outcome]:
    """``queries`` random queries (``per_schema`` per random schema), each run by tempura and by
    ``spark.sql`` and classified (:data:`OUTCOMES`)."""
    rng = random.Random(seed)
    outcomes: list[Outcome] = []
    schema_index = 0
    while len(outcomes) < queries:
        tables = random_tables(rng)
        session = _session(spark, tables, workdir / f"schema{schema_index}")
        schema_index += 1
        generator = QueryGenerator(rng, tables)
        for _ in range(min(per_schema, queries - len(outcomes))):
            g = generator.query()
            outcomes.append(compare(session, g))
            if progress is not None:
                progress(len(outcomes))
    return outcomes


def _session(spark: Any, tables: list[Table], folder: Path) -> Any:
    from tempura.api import Session

    folder.mkdir(parents=True, exist_ok=True)
    catalog: dict[str, Any] = {"tables": {}}
    for table in tables:
        schema = ", ".join(f"{c} {t}" for c, t in table.columns)
        spark.createDataFrame(table.rows, schema).write.mode("overwrite").parquet(str(folder / table.name))
        catalog["tables"][table.name] = {"path": table.name, "format": "parquet"}
    (folder / "catalog.yaml").write_text(yaml.safe_dump(catalog))
    return Session(folder / "catalog.yaml", spark=spark)


def compare(session: Any, g: Generated) -> Outcome:
    """Run ``g`` both ways and classify the outcome."""
    from pyspark.errors import PySparkException

    from tempura.errors import SparkRejects, UnsupportedQuery
    from tempura.runtime import compare_results

    spark = session.spark
    try:
        expected_frame = spark.sql(g.sql)
        expected = [tuple(r) for r in expected_frame.collect()]
    except PySparkException as error:
        return Outcome(g.sql, "spark-rejects", g.constructs, str(error).splitlines()[0][:200])
    try:
        frame = session.sql(g.sql)
        actual = [tuple(r) for r in frame.collect()]
        query = session.plan(g.sql)
    except UnsupportedQuery as error:
        return Outcome(g.sql, "refused", g.constructs, str(error))
    except SparkRejects as error:
        return Outcome(g.sql, "crash", g.constructs, f"Spark rejects what it ran: {error}")
    except Exception as error:  # noqa: BLE001 - every other failure is a crash to report
        return Outcome(g.sql, "crash", g.constructs, f"{type(error).__name__}: {str(error).splitlines()[0][:300]}")
    names = [(f.name, f.dataType.simpleString()) for f in frame.schema.fields]
    spark_names = [(f.name, f.dataType.simpleString()) for f in expected_frame.schema.fields]
    if names != spark_names:
        return Outcome(g.sql, "wrong", g.constructs, f"columns {names} where Spark's are {spark_names}")
    result = compare_results(expected, actual, query.ordered, query.order_keys)
    if not result.equal:
        return Outcome(g.sql, "wrong", g.constructs, result.reason)
    return Outcome(g.sql, "equal", g.constructs)


def summarize(outcomes: list[Outcome]) -> dict[str, Any]:
    """Counts of each outcome, overall and per construct, and the failures in full."""
    overall = Counter(o.outcome for o in outcomes)
    per: dict[str, Counter[str]] = defaultdict(Counter)
    for o in outcomes:
        for construct in o.constructs:
            per[construct][o.outcome] += 1
    return {
        "queries": len(outcomes),
        "outcomes": {k: overall.get(k, 0) for k in OUTCOMES},
        "per_construct": {c: {k: n.get(k, 0) for k in OUTCOMES} for c, n in sorted(per.items())},
        "failures": [{"sql": o.sql, "outcome": o.outcome, "detail": o.detail}
                     for o in outcomes if o.outcome in ("wrong", "crash", "refused")],
    }


def bench(queries: int, seed: int, out: Path, workdir: Path, standing: bool = False) -> dict[str, Any]:
    """``tempura bench fidelity [--standing]``: the run, its summary written to ``out``."""
    import json

    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table as RichTable

    from tempura.runtime import get_spark

    spark = get_spark()
    started = time.perf_counter()
    with Progress(transient=True) as bar:
        task = bar.add_task("queries", total=queries)
        runner = run_standing if standing else run
        outcomes = runner(queries, seed, spark, workdir, progress=lambda n: bar.update(task, completed=n))
    summary = summarize(outcomes)
    summary["seed"] = seed
    summary["seconds"] = round(time.perf_counter() - started, 1)
    out.mkdir(parents=True, exist_ok=True)
    (out / ("fidelity-standing.json" if standing else "fidelity.json")).write_text(json.dumps(summary, indent=2))
    kind = "standing queries × every method" if standing else "queries"
    table = RichTable(title=f"Spark fidelity: {queries} random {kind}, seed {seed}")
    table.add_column("construct")
    for k in OUTCOMES:
        table.add_column(k, justify="right")
    table.add_row("all", *[str(summary["outcomes"][k]) for k in OUTCOMES])
    for construct, counts in summary["per_construct"].items():
        table.add_row(construct, *[str(counts[k]) for k in OUTCOMES])
    console = Console()
    console.print(table)
    for failure in summary["failures"][:20]:
        console.print(f"[bold]{failure['outcome']}[/bold] {failure['sql']}\n    {failure['detail']}")
    return summary


STANDING_METHODS = ("auto", "batch", "ivm", "streaming", "ojv", "higher-order")
POINTS = 3


def run_standing(queries: int, seed: int, spark: Any, workdir: Path, methods: tuple[str, ...] = STANDING_METHODS,
                 per_schema: int = 5, progress: Callable[[int], None] | None = None) -> list[Outcome]:
    """``queries`` random standing queries: each random table's rows arrive over :data:`POINTS`
    time points (by an ``arrived_at`` column), and each query is simulated under every one of
    ``methods``, every delivered time point compared with ``spark.sql`` on its snapshot. One
    :class:`Outcome` per query and method (``refused``: the method, or tempura, does not plan
    it)."""
    import tempura
    from tempura.errors import TempuraError, UnsupportedQuery

    rng = random.Random(seed)
    outcomes: list[Outcome] = []
    done = 0
    schema_index = 0
    while done < queries:
        tables = random_tables(rng)
        folder = workdir / f"standing{schema_index}"
        schema_index += 1
        _arriving(spark, tables, folder, rng)
        generator = QueryGenerator(rng, tables)
        for _ in range(min(per_schema, queries - done)):
            g = generator.query()
            done += 1
            spec = _standing_spec(folder, f"q{done}", g.sql, tables)
            query = tempura.StandingQuery(spec, folder / ".tempura")
            try:
                references = query.references()
            except TempuraError as error:
                outcomes += [Outcome(g.sql, "spark-rejects", g.constructs | {m}, str(error)) for m in methods]
                continue
            for method in methods:
                tags = g.constructs | {f"method {method}"}
                try:
                    trial = query.simulate(method, check=True, references=references)
                except UnsupportedQuery as error:
                    outcomes.append(Outcome(g.sql, "refused", tags, f"{method}: {error}"))
                    continue
                except TempuraError as error:
                    kind = "spark-rejects" if "Spark rejects the query" in str(error) else "refused"
                    outcomes.append(Outcome(g.sql, kind, tags, f"{method}: {str(error).splitlines()[0][:300]}"))
                    continue
                except Exception as error:  # noqa: BLE001 - every other failure is a crash to report
                    outcomes.append(Outcome(g.sql, "crash", tags,
                                            f"{method}: {type(error).__name__}: {str(error).splitlines()[0][:300]}"))
                    continue
                wrong = [p.index for p in trial.points if p.delivered and not p.correct]
                outcomes.append(Outcome(g.sql, "wrong" if wrong else "equal", tags,
                                        f"{method}: wrong at time points {wrong}" if wrong else ""))
            if progress is not None:
                progress(done)
    return outcomes


def _arriving(spark: Any, tables: list[Table], folder: Path, rng: random.Random) -> None:
    """Each table's rows, each with the time it arrives at (within one of the time points'
    intervals), as parquet under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    start = dt.datetime(2026, 1, 1)
    for table in tables:
        rows = [row + (start + dt.timedelta(minutes=30 + 60 * rng.randrange(POINTS)),) for row in table.rows]
        schema = ", ".join(f"{c} {t}" for c, t in table.columns) + ", arrived_at timestamp"
        spark.createDataFrame(rows, schema).write.mode("overwrite").parquet(str(folder / table.name))


def _standing_spec(folder: Path, name: str, sql: str, tables: list[Table]) -> Path:
    spec = {
        "name": name,
        "query": sql,
        "sources": {t.name: {"path": t.name, "format": "parquet", "arrival": {"column": "arrived_at"}} for t in tables},
        "schedule": {"start": "2026-01-01T00:00:00", "every": "1h", "points": POINTS, "deliver": "every"},
        "late": "reject",
        "integrity": "trusted",
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path
