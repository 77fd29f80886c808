"""User-facing errors.

Every error a user can cause (bad SQL, an unsupported construct, a bad catalog or spec, a missing
file) is a :class:`TempuraError`. Its message names the thing and where it is — file, line and
column, or key — so the command line can print it as one line, without a stack trace from inside
Spark or sqlglot.

What goes wrong inside tempura itself is an :class:`InternalError`, not a :class:`TempuraError`:
the command line says it is tempura's fault, and exits with another status.
"""

from __future__ import annotations


class TempuraError(Exception):
    """Base class of all errors caused by what the user gave tempura."""


class SqlError(TempuraError):
    """A problem located in SQL text: carries the 1-based line and column when known."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        self.line = line
        self.column = column
        self.detail = message
        where = f" (line {line}, column {column})" if line is not None and column is not None else ""
        super().__init__(f"{message}{where}")


    @classmethod
    def located(cls, where: str, detail: str, line: int | None, column: int | None) -> SqlError:
        """An error whose message already says where it is (``where``: a file and its line and
        column), carrying that line and column."""
        error = cls(f"{where}: {detail}")
        error.line, error.column, error.detail = line, column, detail
        return error


class SqlSyntaxError(SqlError):
    """The SQL text does not parse."""


class BindError(SqlError):
    """A table or column in the SQL does not exist, or a name is ambiguous."""


class UnsupportedQuery(SqlError):
    """The SQL parses but uses a construct tempura does not plan yet."""


class SparkRejects(SqlError):
    """Spark's analyzer rejects the query as written: the message carries Spark's error class."""


class CatalogError(TempuraError):
    """The catalog file is malformed, or one of its tables cannot be read."""


class ExecutionError(TempuraError):
    """Spark refused or failed to run what tempura planned, for a reason the user can act on."""


class PlanRejected(ExecutionError):
    """Spark's analyzer rejected the SQL of a plan. Where Spark accepted the user's query itself,
    that is tempura's fault: the standing-query runner then raises :class:`InternalError`."""


class InternalError(Exception):
    """tempura went wrong, not what the user gave it: Spark rejected SQL tempura wrote for a query
    Spark's analyzer accepts. The command line prints one line saying so and exits with status 70
    (a bug to report, with the spec), apart from the user's errors (status 2)."""
