"""``python -m tempura``, and the file to hand to ``spark-submit``: the command line.

``spark-submit [options] tempura/__main__.py run spec.yaml`` runs the command with the master and
settings spark-submit gives (``docs/runtime.md``, *Spark's settings*); ``tempura submit-file``
prints this file's path.
"""

from __future__ import annotations

import os
import sys

if __package__ in (None, ""):
    # Run as a file (spark-submit), its folder heads the import path: the package's own modules
    # would be importable as top-level ones. The package is imported from where it is installed.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]

from tempura.cli import main  # noqa: E402

if __name__ == "__main__":
    main(prog_name="tempura")
