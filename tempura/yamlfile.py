"""Reading YAML files whose errors name the file, the line and the key.

Catalogs and standing-query specs are YAML validated by pydantic. pydantic reports a key path;
this module maps that path back to the line where the key stands, using the line marks PyYAML
keeps while composing the document. A mapping that gives a key twice is an error here (PyYAML
would let the last one win silently), named by the line of the second occurrence and its key path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import yaml
from pydantic import ValidationError

from tempura.errors import TempuraError

KeyPath = tuple[str | int, ...]


class YamlDocument:
    """A parsed YAML file plus the line of every key and item in it, and where each scalar
    value's text starts (:meth:`text_origin`)."""

    def __init__(self, path: Path, data: Any, lines: dict[KeyPath, int],
                 origins: dict[KeyPath, tuple[int, int]] | None = None) -> None:
        self.path = path
        self.data = data
        self._lines = lines
        self._origins = origins or {}

    def text_origin(self, key_path: Sequence[str | int]) -> tuple[int, int] | None:
        """Where the text of the scalar at ``key_path`` starts in the file, as (line, column),
        both 1-based, when the text's own lines and columns map onto the file's one for one: a
        literal block (``|``), or a plain or quoted scalar on one line. ``None`` otherwise (a
        folded block, a scalar folded over lines)."""
        return self._origins.get(tuple(key_path))

    def line_of(self, key_path: Sequence[str | int]) -> int | None:
        """Line (1-based) of the deepest prefix of ``key_path`` that the file contains."""
        path = tuple(key_path)
        while path:
            if path in self._lines:
                return self._lines[path]
            path = path[:-1]
        return None

    def where(self, key_path: Sequence[str | int]) -> str:
        line = self.line_of(key_path)
        return f"{self.path}:{line}" if line is not None else str(self.path)

    def validation_message(self, error: ValidationError) -> str:
        """One line per problem: ``file:line: key.path: message``."""
        parts = []
        for problem in error.errors():
            loc = tuple(problem["loc"])
            key = ".".join(str(p) for p in loc) or "(top level)"
            message = problem["msg"]
            if problem["type"] == "extra_forbidden":
                message = "unknown key"
            parts.append(f"{self.where(loc)}: {key}: {message}")
        return "\n".join(parts)


def key_text(key_path: Sequence[str | int]) -> str:
    """A key path as written in messages: ``sources.sales.path``, ``schedule.at[2]``."""
    text = ""
    for part in key_path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _origin(node: yaml.ScalarNode, text_lines: list[str]) -> tuple[int, int] | None:
    """Where a scalar's text starts in the file, if its lines map onto the file's (see
    :meth:`YamlDocument.text_origin`)."""
    start, end = node.start_mark, node.end_mark
    if node.style == "|":  # the indicator's line, then the content, indented as its first line is
        for index in range(start.line + 1, min(end.line + 1, len(text_lines))):
            line = text_lines[index]
            if line.strip():  # the text's first line is the one after the indicator, blank or not
                return start.line + 2, len(line) - len(line.lstrip(" ")) + 1
        return None
    if node.style in (None, "", "'", '"') and start.line == end.line:
        return start.line + 1, start.column + 1 + (1 if node.style in ("'", '"') else 0)
    return None


def _collect_lines(node: yaml.Node, prefix: KeyPath, lines: dict[KeyPath, int],
                   duplicates: list[tuple[int, KeyPath, int]], within: frozenset[int] = frozenset(),
                   origins: dict[KeyPath, tuple[int, int]] | None = None, text_lines: list[str] | None = None) -> None:
    """Record the line of every key and item under ``node``, and each key a mapping gives twice
    as ``(line, key path, first line)``. ``within``: the nodes above this one, so that an alias
    of a node inside itself is not walked forever."""
    if id(node) in within:
        return
    within = within | {id(node)}
    if isinstance(node, yaml.MappingNode):
        first: dict[tuple[str, str], int] = {}  # (tag, text) of a key: the line it is first given on
        for key_node, value_node in node.value:
            key = key_node.value
            line = key_node.start_mark.line + 1
            # ``<<`` merges another mapping in: its keys may be given again on purpose.
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                if (key_node.tag, key) in first:
                    duplicates.append((line, prefix + (key,), first[(key_node.tag, key)]))
                else:
                    first[(key_node.tag, key)] = line
            lines[prefix + (key,)] = line
            if origins is not None and text_lines is not None and isinstance(value_node, yaml.ScalarNode):
                found = _origin(value_node, text_lines)
                if found is not None:
                    origins[prefix + (key,)] = found
            _collect_lines(value_node, prefix + (key,), lines, duplicates, within, origins, text_lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[prefix + (i,)] = item.start_mark.line + 1
            _collect_lines(item, prefix + (i,), lines, duplicates, within, origins, text_lines)


def load_yaml(path: str | Path, error: type[TempuraError]) -> YamlDocument:
    """Parse ``path``; a missing file or bad YAML raises ``error`` naming file and line."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{file}: file not found") from None
    except OSError as exc:
        raise error(f"{file}: cannot read: {exc.strerror}") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{file}:{mark.line + 1}" if mark is not None else str(file)
        problem = getattr(exc, "problem", None) or str(exc)
        raise error(f"{where}: invalid YAML: {problem}") from None
    lines: dict[KeyPath, int] = {}
    duplicates: list[tuple[int, KeyPath, int]] = []
    origins: dict[KeyPath, tuple[int, int]] = {}
    if node is not None:
        _collect_lines(node, (), lines, duplicates, origins=origins, text_lines=text.splitlines())
    if duplicates:
        line, key_path, first = min(duplicates, key=lambda found: found[0])
        raise error(f"{file}:{line}: {key_text(key_path)}: given twice (first at line {first})")
    return YamlDocument(file, data, lines, origins)
