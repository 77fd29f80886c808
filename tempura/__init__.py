"""tempura: a cost-based, incremental query optimizer for standing queries, running on Spark.

The stable Python API is :class:`Session` (``tempura.Session(catalog="C.yaml")``) and the
:class:`TempuraError` family of user errors.
"""

from tempura.api import Session
from tempura.errors import TempuraError

__version__ = "0.1.0"

__all__ = ["Session", "TempuraError", "__version__"]
