"""Which paths a spec may name, and where they point: a relative path from the spec's folder
and inside it, an absolute path, or a URI Spark reads (``file:``, ``hdfs:``, ``s3a:``, …)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal


def path_overlap(a: str, a_local: Path | None, b: str, b_local: Path | None) -> Literal["same", "inside", "contains"] | None:
    """How the folder ``a`` lies against ``b``: the same, inside it, containing it, or apart."""
    if a_local is not None and b_local is not None:
        if a_local == b_local:
            return "same"
        return "inside" if b_local in a_local.parents else ("contains" if a_local in b_local.parents else None)
    if a_local is not None or b_local is not None:
        return None
    a_text, b_text = a.rstrip("/"), b.rstrip("/")
    if a_text == b_text:
        return "same"
    return "inside" if a_text.startswith(b_text + "/") else ("contains" if b_text.startswith(a_text + "/") else None)


def _is_uri(path: str) -> bool:
    return bool(_SCHEME.match(path)) or path.startswith("file:")


def relative_part(path: str) -> str | None:
    """A relative path's text (``file:`` dropped), or ``None`` for absolute paths and URIs."""
    text = path.removeprefix("file:")
    if text.startswith("/") or (text == path and _is_uri(path)):
        return None
    return text


def climbs_out(relative: str) -> bool:
    normal = os.path.normpath(relative)
    return normal == os.pardir or normal.startswith(os.pardir + os.sep)


def local_path(path: str, folder: Path) -> Path | None:
    """Where ``path`` is on this machine, resolved from ``folder``; ``None`` for a URI of another
    scheme, or a ``file:`` URI naming another host."""
    if path.startswith("file://"):
        host, _, rest = path.removeprefix("file://").partition("/")
        if host not in ("", "localhost"):
            return None
        return Path("/" + rest).resolve()
    if path.startswith("file:"):
        return (folder / path.removeprefix("file:")).resolve()
    if _is_uri(path):
        return None
    return (folder / path).resolve()  # an absolute path stays itself


def resolved_location(path: str, folder: Path) -> str:
    """A URI as given (``file:`` ones too), any other path resolved from ``folder``."""
    if _is_uri(path) and relative_part(path) is None:
        return path
    local = local_path(path, folder)
    assert local is not None
    return str(local)


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
