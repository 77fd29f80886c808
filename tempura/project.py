"""A project of standing queries: every spec file under some folders, selected by name.

``tempura run|plan|validate|history|check|repair`` take files and folders. A folder stands for
every spec under it: a ``.yaml``/``.yml`` file whose top-level mapping has a ``schedule`` and a
``query`` or ``query_file`` (catalogs and other YAML files are not specs; hidden folders such as
a workdir are not looked into). A file that does not parse as YAML is taken as a spec, so that
loading it reports what is wrong instead of leaving it out silently.

``--select`` keeps the specs whose name (the spec's ``name`` key) or file stem matches one of the
given names or shell patterns (``revenue_*``); a selection that matches nothing is an error
listing the names there are. Two specs of one name are an error: a job folder is named after its
spec.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import yaml

from tempura.errors import TempuraError

SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class SpecFile:
    """One spec file of a project and the name it declares (its stem if it declares none)."""

    path: Path
    name: str


def _declared(path: Path) -> SpecFile | None:
    """``path`` as a spec file, or None if its YAML is not a spec's."""
    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return SpecFile(path, path.stem)  # loading it says what is wrong
    if not isinstance(data, dict) or "schedule" not in data or not ({"query", "query_file"} & set(data)):
        return None
    name = data.get("name")
    return SpecFile(path, name if isinstance(name, str) and name else path.stem)


def _under(folder: Path) -> list[Path]:
    out = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).parts
        if any(part.startswith(".") for part in relative):
            continue
        if path.is_file() and path.suffix.lower() in SUFFIXES:
            out.append(path)
    return out


def spec_files(paths: Sequence[str | Path], select: Iterable[str] = ()) -> list[SpecFile]:
    """The spec files ``paths`` name (a file is taken as a spec; a folder, every spec under it),
    in order, each once, kept by ``select`` when given."""
    if not paths:
        raise TempuraError("name a spec file or a folder of specs")
    found: list[SpecFile] = []
    seen: set[Path] = set()
    for given in paths:
        path = Path(given)
        if path.is_dir():
            specs = [s for s in (_declared(p) for p in _under(path)) if s is not None]
            if not specs:
                raise TempuraError(f"{path}: no spec under this folder (a YAML file with a schedule and a query)")
        elif path.is_file():
            declared = _declared(path)
            specs = [declared or SpecFile(path, path.stem)]
        else:
            raise TempuraError(f"{path}: no such file or folder")
        for spec in specs:
            key = spec.path.resolve()
            if key not in seen:
                seen.add(key)
                found.append(spec)
    patterns = list(select)
    if patterns:
        found = _selected(found, patterns)
    _unique(found)
    return found


def _selected(specs: list[SpecFile], patterns: list[str]) -> list[SpecFile]:
    def matches(spec: SpecFile, pattern: str) -> bool:
        return fnmatch.fnmatchcase(spec.name, pattern) or fnmatch.fnmatchcase(spec.path.stem, pattern)

    unmatched = [p for p in patterns if not any(matches(s, p) for s in specs)]
    if unmatched:
        names = ", ".join(sorted({s.name for s in specs}))
        raise TempuraError(f"--select {', '.join(unmatched)}: no spec of that name (there are: {names})")
    return [s for s in specs if any(matches(s, p) for p in patterns)]


def _unique(specs: list[SpecFile]) -> None:
    by_name: dict[str, Path] = {}
    for spec in specs:
        if spec.name in by_name:
            raise TempuraError(f"{spec.path}: name {spec.name} is also the name of {by_name[spec.name]}; "
                               f"a job folder is named after its spec, so names must differ")
        by_name[spec.name] = spec.path


__all__ = ["SUFFIXES", "SpecFile", "spec_files"]
