"""tempura: a cost-based, incremental query optimizer for standing queries, running on Spark."""

from tempura.errors import TempuraError

__version__ = "0.1.0"

__all__ = ["TempuraError", "__version__"]
