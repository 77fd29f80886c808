"""Data of the ``tpch_q12`` scenario: the TPC-H tables its query reads (see :mod:`scenarios.tpch`).

    python -m scenarios.tpch_q12.generate --scale 0.01 --out DIR
"""

from __future__ import annotations

from scenarios import generator_main
from scenarios.tpch import generator

generate = generator("orders", "lineitem")

if __name__ == "__main__":
    generator_main(generate, __doc__.splitlines()[0])
