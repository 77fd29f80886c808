"""Data of the ``tpcds_store_star`` scenario: the TPC-DS tables its query reads (see :mod:`scenarios.tpcds`).

    python -m scenarios.tpcds_store_star.generate --scale 0.01 --out DIR
"""

from __future__ import annotations

from scenarios import generator_main
from scenarios.tpcds import generator

generate = generator("store_sales", "date_dim", "item")

if __name__ == "__main__":
    generator_main(generate, __doc__.splitlines()[0])
