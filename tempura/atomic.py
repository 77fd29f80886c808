"""Writing a local file atomically: the whole text appears under its name, or nothing does.

The text goes to a temporary file beside the target (named with ``prefix``, hidden with a
leading dot), is flushed to disk, and is renamed over the target. A reader never sees half a
file, and a crash leaves at most a temporary file behind. The job folder's manifests, locks and
plans (:mod:`tempura.runtime.storage`) and the stored statistics (:mod:`tempura.stats.store`)
are written so.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_text(target: Path, text: str, prefix: str | None = None) -> None:
    """Write ``text`` to ``target`` atomically (its folder made if needed), readable by all."""
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=prefix if prefix is not None else f".{target.name}.", suffix=".tmp",
                                         dir=target.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
