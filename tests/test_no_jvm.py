"""``-m "not spark"`` starts no JVM: under it, a test that reaches Spark without the ``spark``
marker fails with a line saying so (``conftest.pytest_configure``), so the fast run stays fast
and honest. Checked in a pytest subprocess over a test file written for it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

SNEAKY = '''
def test_plain() -> None:
    assert 1 + 1 == 2


def test_reaches_spark_through_a_helper() -> None:
    from tempura.runtime import get_spark

    get_spark().range(1).count()
'''


def test_a_test_that_starts_spark_unmarked_fails_under_not_spark(tmp_path: Path) -> None:
    probe = tmp_path / "test_probe.py"
    probe.write_text(SNEAKY)
    # the suite's conftest, loaded as a plugin, over a file outside the suite
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest",
                          "-m", "not spark", "--rootdir", str(tmp_path), str(probe)],
                         capture_output=True, text=True, cwd=TESTS, timeout=300,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent),
                                                                           os.environ.get("PYTHONPATH", "")])})
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "1 failed, 1 passed" in ran.stdout, ran.stdout
    assert 'a test run with -m "not spark" started a JVM: mark the test spark' in ran.stdout, ran.stdout
