"""Data-driven test files: a directive, its input, ``----``, and the expected output.

A file holds cases separated by blank lines::

    # comment
    plan
    SELECT a FROM t
    ----
    Project [a]
      Scan t [a]

The expected output ends at the first blank line. Running pytest with ``--rewrite`` writes the
actual outputs back into the files, so that a planner change shows up as a diff to review.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable


@dataclass
class Case:
    directive: str
    args: dict[str, str]
    input: str
    expected: str
    line: int


def parse_file(path: Path) -> list[Case]:
    lines = path.read_text(encoding="utf-8").splitlines()
    cases: list[Case] = []
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if not line or line.startswith("#"):
            i += 1
            continue
        start = i + 1
        head, *rest = line.split()
        args = dict(part.partition("=")[::2] for part in rest)
        i += 1
        body: list[str] = []
        while i < len(lines) and lines[i].strip() != "----":
            body.append(lines[i])
            i += 1
        if i >= len(lines):
            raise ValueError(f"{path}:{start}: case has no '----' line")
        i += 1
        expected: list[str] = []
        while i < len(lines) and lines[i].strip():
            expected.append(lines[i])
            i += 1
        cases.append(Case(head, args, "\n".join(body), "\n".join(expected), start))
    return cases


def format_case(case: Case, output: str) -> str:
    args = "".join(f" {k}={v}" if v else f" {k}" for k, v in case.args.items())
    return f"{case.directive}{args}\n{case.input}\n----\n{output}\n"


def rewrite_file(path: Path, outputs: dict[int, str]) -> None:
    """Rewrite ``path`` with each case's expected output replaced (keyed by case line);
    comments before a case are kept."""
    lines = path.read_text(encoding="utf-8").splitlines()
    cases = {c.line: c for c in parse_file(path)}
    out: list[str] = []
    i = 0
    while i < len(lines):
        number = i + 1
        if number in cases:
            case = cases[number]
            out.append(format_case(case, outputs.get(number, case.expected)).rstrip("\n"))
            # skip the old case text: input, '----', expected
            i += 1
            while lines[i].strip() != "----":
                i += 1
            i += 1
            while i < len(lines) and lines[i].strip():
                i += 1
            continue
        out.append(lines[i])
        i += 1
    path.write_text("\n".join(out).rstrip("\n") + "\n", encoding="utf-8")


def run_file(path: Path, run: Callable[[Case], str], rewrite: bool) -> list[str]:
    """Run every case; returns the failures (or rewrites the file when ``rewrite``)."""
    failures = []
    outputs = {}
    for case in parse_file(path):
        actual = run(case).rstrip("\n")
        outputs[case.line] = actual
        if actual != case.expected:
            failures.append(
                f"{path.name}:{case.line}: {case.directive}\n{case.input}\n--- expected\n{case.expected}\n--- actual\n{actual}"
            )
    if rewrite:
        rewrite_file(path, outputs)
        return []
    return failures
