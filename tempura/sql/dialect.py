"""Spark SQL as tempura reads and writes it: sqlglot's Spark dialect, where that dialect's model
of an expression is not Spark's.

sqlglot is a transpiler: it parses a function into a node of its own model and prints the node
back in the target dialect. Where the model does not carry the function exactly, a Spark-to-Spark
round trip rewrites it, and silently changes the query's answer. :class:`TempuraSpark` keeps what
tempura does not reason about as the user wrote it, and prints what it does reason about so that
Spark reads the same expression back:

- **Opaque functions.** Functions whose sqlglot node loses an argument or rewrites a format
  pattern (``to_char``'s format, ``date_format``'s and ``to_timestamp``'s patterns through a
  strftime round trip, ``to_date(s, fmt)``'s format, ``date_sub(d, '1')`` as an addition of a
  negated string) parse as calls of their own name (:class:`sqlglot.exp.Anonymous`): Spark sees
  the name and the arguments as written, with only column references renamed. Their types come
  from Spark's analyzer (:mod:`tempura.sql.settle`).
- **Unary plus** is Spark's ``positive(…)``, which casts a string to double; sqlglot drops it.
- **Precedence.** An operator's operand of lower precedence is printed in parentheses, whether or
  not the text had them: ``INTERVAL 2 WEEKS 3 MICROSECONDS * 1.5`` multiplies the whole interval,
  and an expression substituted into another (a projected column into the operator above it)
  keeps its grouping.
- **Negated integral literals** (``-128Y``, ``-9223372036854775808L``) are printed as the cast
  of the negative number, not as the negation of a cast that overflows.
- **A doubled quote inside a string literal** is a quote, as Spark reads it: ``'EEE ''x'' d'`` is
  the pattern ``EEE 'x' d``, not the concatenation of three literals.
- **Grouping elements** may be any expression (``ROLLUP (x IS NOT NULL)``), not only an operand.
- ``localtimestamp()`` is printed with its parentheses: Spark reads the bare word as a column.
"""

from __future__ import annotations

from typing import Any, Callable

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.generators.spark import SparkGenerator
from sqlglot.parsers.spark import SparkParser
from sqlglot.tokens import TokenType

# Functions whose sqlglot node is not Spark's function (they lose an argument, or a pattern is
# translated to strftime and back).
OPAQUE_FUNCTIONS = (
    "DATE_FORMAT", "TO_CHAR", "TO_VARCHAR", "TO_TIMESTAMP", "TRY_TO_TIMESTAMP", "TO_TIMESTAMP_NTZ",
    "TO_TIMESTAMP_LTZ", "UNIX_TIMESTAMP", "TO_UNIX_TIMESTAMP", "FROM_UNIXTIME", "DATE_SUB", "DATE_ADD",
    "DATEADD", "TIMESTAMPADD", "UNIX_DATE", "TO_UTC_TIMESTAMP", "FROM_UTC_TIMESTAMP",
)
# ``to_date(s)`` round-trips; ``to_date(s, fmt)`` loses its format.
OPAQUE_WITH_PATTERN = ("TO_DATE",)

_LEVELS: tuple[tuple[type[exp.Expr], ...], ...] = (
    (exp.Or,),
    (exp.And,),
    (exp.Not,),
    (exp.EQ, exp.NEQ, exp.NullSafeEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.ILike, exp.RegexpLike,
     exp.Is, exp.In, exp.Between, exp.Glob, exp.SimilarTo),
    (exp.BitwiseOr,),
    (exp.BitwiseXor,),
    (exp.BitwiseAnd,),
    (exp.Add, exp.Sub, exp.DPipe),
    (exp.Mul, exp.Div, exp.Mod, exp.IntDiv),
)
PRECEDENCE: dict[type[exp.Expr], int] = {kind: level for level, kinds in enumerate(_LEVELS) for kind in kinds}
UNARY = len(_LEVELS)  # unary minus and plus bind tighter than any binary operator
INTEGRAL = ("TINYINT", "SMALLINT", "INT", "BIGINT")


def _anonymous(name: str) -> Callable[[list[exp.Expr]], exp.Expr]:
    def build(args: list[exp.Expr]) -> exp.Expr:
        return exp.Anonymous(this=name.lower(), expressions=args)

    return build


def _pattern_opaque(name: str, known: Callable[..., exp.Expr]) -> Callable[..., exp.Expr]:
    def build(args: list[exp.Expr], *rest: Any) -> exp.Expr:
        if len(args) > 1:
            return exp.Anonymous(this=name.lower(), expressions=args)
        return known(args, *rest)

    return build


def precedence(node: exp.Expr) -> int | None:
    """The binding level of an operator node (higher binds tighter), ``None`` for an operand that
    needs no parentheses anywhere (a column, a literal, a call, a parenthesised expression)."""
    return PRECEDENCE.get(type(node))


class TempuraSpark(Spark):
    """Spark's dialect, with the departures the module docstring lists."""

    class Tokenizer(Spark.Tokenizer):
        STRING_ESCAPES = ["\\", "'"]  # Spark reads 'EEE ''x'' d' as one literal holding quotes, not three

    class Parser(SparkParser):
        FUNCTIONS = {
            **SparkParser.FUNCTIONS,
            **{name: _anonymous(name) for name in OPAQUE_FUNCTIONS},
            **{name: _pattern_opaque(name, SparkParser.FUNCTIONS[name]) for name in OPAQUE_WITH_PATTERN},
        }
        UNARY_PARSERS = {
            **SparkParser.UNARY_PARSERS,
            TokenType.PLUS: lambda self: exp.Anonymous(this="positive", expressions=[self._parse_unary()]),
        }

        # Spark's ROLLUP, CUBE and GROUPING SETS take any expression (``ROLLUP (x IS NOT NULL)``).
        def _parse_cube_or_rollup(self, with_prefix: bool = False) -> exp.Cube | exp.Rollup | None:
            if self._match(TokenType.CUBE):
                kind: type[exp.Cube | exp.Rollup] = exp.Cube
            elif self._match(TokenType.ROLLUP):
                kind = exp.Rollup
            else:
                return None
            return self.expression(kind(expressions=[] if with_prefix else self._parse_wrapped_csv(self._parse_disjunction)))

        def _parse_grouping_set(self) -> exp.Expr | None:
            return self._parse_grouping_sets() or self._parse_cube_or_rollup() or self._parse_disjunction()

    class Generator(SparkGenerator):
        TRANSFORMS = {**SparkGenerator.TRANSFORMS, exp.Localtimestamp: lambda self, e: "LOCALTIMESTAMP()"}

        def binary(self, expression: exp.Binary, op: str) -> str:
            level = precedence(expression)
            left, right = expression.this, expression.expression
            if level is None or expression.args.get("operator") or not isinstance(left, exp.Expr) \
                    or not isinstance(right, exp.Expr):
                return super().binary(expression, op)
            left_level, right_level = precedence(left), precedence(right)
            wrap_left = left_level is not None and left_level < level
            wrap_right = right_level is not None and right_level <= level
            if not wrap_left and not wrap_right:
                return super().binary(expression, op)
            left_sql = self.sql(left)
            right_sql = self.sql(right)
            return f"{f'({left_sql})' if wrap_left else left_sql} {op} {f'({right_sql})' if wrap_right else right_sql}"

        def neg_sql(self, expression: exp.Neg) -> str:
            this = expression.this
            if isinstance(this, (exp.Cast, exp.TryCast)) and isinstance(this.this, exp.Literal) \
                    and not this.this.is_string and this.to.this.name in INTEGRAL:
                negative = exp.Literal.number(f"-{this.this.name}")
                return self.sql(this.__class__(this=negative, to=this.to.copy()))
            if precedence(this) is not None:
                return f"-({self.sql(this)})"
            return super().neg_sql(expression)

        def not_sql(self, expression: exp.Not) -> str:
            this = expression.this
            level = precedence(this)
            if level is not None and level < PRECEDENCE[exp.Not]:
                return f"NOT ({self.sql(this)})"
            return super().not_sql(expression)


def read_dialect(dialect: str) -> str | type[Spark]:
    """The dialect tempura parses ``dialect``'s text with: :class:`TempuraSpark` for Spark's."""
    return TempuraSpark if dialect == "spark" else dialect
