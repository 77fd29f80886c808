"""Plan-unique column names for one query.

The first column called ``x`` keeps the name ``x``; later ones become ``x_2``, ``x_3``, ...
so that printed plans read like the SQL they came from.
"""

from __future__ import annotations

import re

_SAFE = re.compile(r"[^0-9a-zA-Z_]+")


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
