"""Runnable standing-query scenarios: each folder holds ``spec.yaml``, its SQL and a data
generator (``generate.py``, with a scale option). :func:`copy_scenario` copies one into a
working folder, where its data is generated and its job runs."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

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


def generator_main(generate: Callable[[SparkSession, Path, float], dict[str, int]], description: str) -> None:
    """The command line of a scenario's ``generate.py``: ``--scale`` and ``--out``."""
    import argparse

    from tempura.runtime import get_spark

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--scale", type=float, default=0.01)
    parser.add_argument("--out", type=Path, required=True, help="the folder whose data/ receives the tables")
    args = parser.parse_args()
    print(generate(get_spark(), args.out, args.scale))


def prepared_scenario(spark: SparkSession, name: str, into: Path, scale: float) -> Path:
    """Scenario ``name`` copied into ``into/name`` with its data at ``scale`` (generated unless
    the copy already holds that scale's data); returns the spec's path."""
    import importlib
    import json

    spec = copy_scenario(name, into)
    marker = spec.parent / "data" / ".scale.json"
    if marker.exists() and json.loads(marker.read_text()).get("scale") == scale:
        return spec
    marker.unlink(missing_ok=True)
    generate = importlib.import_module(f"scenarios.{name}.generate").generate
    counts = generate(spark, spec.parent, scale)
    marker.write_text(json.dumps({"scale": scale, "rows": counts}))
    return spec
