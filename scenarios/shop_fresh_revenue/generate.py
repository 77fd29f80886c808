"""Data of the ``shop_fresh_revenue`` scenario: the shop's feeds of :mod:`scenarios.shop`.

    python -m scenarios.shop_fresh_revenue.generate --scale 0.02 --out DIR
"""

from __future__ import annotations

from scenarios import generator_main
from scenarios.shop import generate

__all__ = ["generate"]

if __name__ == "__main__":
    generator_main(generate, __doc__.splitlines()[0])
