"""Names in SQL text: plan-unique column names for one query, and Spark identifiers quoted.

The first column called ``x`` keeps the name ``x``; later ones become ``x_2``, ``x_3``, ...
so that printed plans read like the SQL they came from.

:func:`quote_identifier` is the one way tempura writes a name (a column, a table, a temporary
view) into Spark SQL text, a column reference or a schema string: between backticks, with a
backtick inside doubled, so that any name a file or a spec holds reads as itself.
"""

from __future__ import annotations

import re

_SAFE = re.compile(r"[^0-9a-zA-Z_]+")


def quote_identifier(name: str) -> str:
    """``name`` as one Spark SQL identifier: ``x`y`` is ```x``y```.

    >>> quote_identifier("x`y")
    '`x``y`'
    """
    return "`" + name.replace("`", "``") + "`"


class NameAllocator:
    def __init__(self) -> None:
        self._used: set[str] = set()

    def fresh(self, base: str) -> str:
        """A name not handed out before, derived from ``base``."""
        stem = _SAFE.sub("_", base.lower()).strip("_") or "col"
        if stem[0].isdigit():
            stem = f"c_{stem}"
        name, n = stem, 1
        while name in self._used:
            n += 1
            name = f"{stem}_{n}"
        self._used.add(name)
        return name


__all__ = ["NameAllocator", "quote_identifier"]
