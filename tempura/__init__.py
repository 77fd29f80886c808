"""tempura: a cost-based, incremental query optimizer for standing queries, running on Spark.

The stable Python API is :class:`StandingQuery` (a spec file and its job: validate, plan, run,
simulate, check, repair, history), :class:`Session` (one-off SQL over a catalog) and the
:class:`TempuraError` family of user errors.
"""

from tempura.api import Session
from tempura.errors import TempuraError
from tempura.standing import StandingQuery

__version__ = "0.1.0"

__all__ = ["Session", "StandingQuery", "TempuraError", "__version__"]
