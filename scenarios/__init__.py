"""Runnable standing-query scenarios: each folder holds ``spec.yaml``, its SQL and a data
generator (``generate.py``, with a scale option). :func:`copy_scenario` copies one into a
working folder, where its data is generated and its job runs."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def names() -> list[str]:
    """The scenarios, by folder name."""
    return sorted(p.name for p in ROOT.iterdir() if (p / "spec.yaml").exists())


def copy_scenario(name: str, into: Path) -> Path:
    """Copy scenario ``name``'s spec and SQL into ``into/name`` (replacing an older copy's spec
    and SQL, keeping its data); returns the copied spec's path."""
    source = ROOT / name
    if not (source / "spec.yaml").exists():
        raise ValueError(f"unknown scenario '{name}' (known: {', '.join(names())})")
    target = into / name
    target.mkdir(parents=True, exist_ok=True)
    for path in source.iterdir():
        if path.suffix in (".yaml", ".sql"):
            shutil.copyfile(path, target / path.name)
    return target / "spec.yaml"
