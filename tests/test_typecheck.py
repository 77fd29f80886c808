"""The package, its benchmarks and its scenarios type-check with mypy (configured in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_passes() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "tempura", "benchmarks", "scenarios"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
