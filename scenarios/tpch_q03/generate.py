"""Data of the ``tpch_q03`` scenario: the TPC-H tables its query reads (see :mod:`scenarios.tpch`).

    python -m scenarios.tpch_q03.generate --scale 0.01 --out DIR
"""

from __future__ import annotations

from scenarios import generator_main
from scenarios.tpch import generator

generate = generator("customer", "orders", "lineitem")

if __name__ == "__main__":
    generator_main(generate, __doc__.splitlines()[0])
