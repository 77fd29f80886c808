"""The spec reference (``docs/spec.md``), written from the spec's model so that it cannot drift.

Every key of a spec file, with what it takes, its default, and what it means, read from the
pydantic models of :mod:`tempura.scheduler.spec.model` (each field's docstring). ``tempura
spec-reference`` prints it; a test holds ``docs/spec.md`` to it.
"""

from __future__ import annotations

import datetime as dt
import re
import types
import typing
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from tempura.scheduler.spec.model import ExpectedArrival, SpecFile, parse_size

HEADER = """# The spec file

A standing query is one YAML file: its SQL, its sources, its schedule and how to plan it. This
page lists every key. It is written from the spec's model (`tempura spec-reference` prints it),
so it says what the code accepts. An unknown key is an error, with the closest known key
suggested; so is a key given twice. Every error names the file, the line and the key.

Durations are written `6h`, `30m`, `1d`, `90s` or `1h30m`; sizes `10GB`, `512MB` or `2GiB`;
time points as ISO timestamps (`2026-11-22T06:00:00`), ISO dates, or integers (date keys).
"""


def reference() -> str:
    """The whole page, as Markdown."""
    sections: list[str] = [HEADER]
    _model(SpecFile, "", "The top level", sections)
    return "\n".join(sections).rstrip() + "\n"


def _model(model: type[BaseModel], prefix: str, title: str, sections: list[str]) -> None:
    lines = [f"## {title}", ""]
    doc = _cell(_first_paragraph(model.__doc__ or ""))
    if doc and model is not SpecFile:
        lines += [doc, ""]
    lines += ["| key | takes | default | meaning |", "|---|---|---|---|"]
    nested: list[tuple[type[BaseModel], str, str]] = []
    for name, field in model.model_fields.items():
        key = field.alias or name
        path = f"{prefix}{key}"
        inner = _nested(field.annotation)
        takes = _takes(field.annotation, list(field.metadata))
        if inner is not None:
            child, many = inner
            child_path = f"{path}.<name>." if many else f"{path}."
            nested.append((child, child_path, f"`{path}{'.<name>' if many else ''}`"))
            takes = f"a mapping of names to mappings (below)" if many else "a mapping (below)"
        default = "required" if field.is_required() else _default(field)
        lines.append(f"| `{path}` | {takes} | {default} | {_cell(field.description or '')} |")
    sections.append("\n".join(lines) + "\n")
    for child, child_path, child_title in nested:
        _model(child, child_path, child_title, sections)


def _nested(annotation: Any) -> tuple[type[BaseModel], bool] | None:
    """The model a field holds, and whether it holds a mapping of names to them."""
    for arg in _flat(annotation):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg, False
        if typing.get_origin(arg) is dict:
            value = typing.get_args(arg)[1]
            if isinstance(value, type) and issubclass(value, BaseModel):
                return value, True
    return None


def _flat(annotation: Any) -> list[Any]:
    """The alternatives of an annotation, with ``Annotated`` and ``None`` taken off."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _flat(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [a for arg in typing.get_args(annotation) for a in _flat(arg) if a is not type(None)]
    return [annotation]


_WORDS: dict[Any, str] = {
    bool: "`true` \\| `false`", int: "an integer", float: "a number", str: "text", dt.timedelta: "a duration",
    dt.datetime: "a time point", dt.date: "a time point", ExpectedArrival: "a list of shares, or `{rows: [...]}`",
    tuple: "a list", dict: "a mapping",
}
"""A key's type in words (by the type, or by the generic's origin: ``tuple[...]``, ``dict[...]``)."""


def _takes(annotation: Any, metadata: list[Any] | None = None) -> str:
    """What a key takes, in words."""
    parsers = {getattr(m, "func", None) for m in [*(metadata or []), *_metadata(annotation)]}
    if parse_size in parsers:
        return "a size"
    words = []
    for arg in _flat(annotation):
        origin = typing.get_origin(arg)
        if origin is Literal:
            words.append(" \\| ".join(f"`{v}`" for v in typing.get_args(arg)))
        else:
            words.append(_WORDS.get(arg) or _WORDS.get(origin) or str(getattr(arg, "__name__", arg)))
    unique = list(dict.fromkeys(words))
    if set(unique) >= {"a duration", "an integer"}:
        unique = ["a duration" if w == "a duration" else w for w in unique if w != "an integer"]
    if "a time point" in unique:
        unique = [w for w in unique if w not in ("an integer", "a number")]
    return " or ".join(unique)


def _metadata(annotation: Any) -> list[Any]:
    """The ``Annotated`` metadata of an annotation and of its alternatives."""
    found: list[Any] = []
    if typing.get_origin(annotation) is typing.Annotated:
        found += list(getattr(annotation, "__metadata__", ()))
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            found += _metadata(arg)
    return found


def _default(field: FieldInfo) -> str:
    value = field.get_default()
    if value is None or value == {} or value == () or isinstance(value, BaseModel):
        return ""
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, tuple):
        return "`[" + ", ".join(str(v) for v in value) + "]`"
    return f"`{value}`"


def _first_paragraph(text: str) -> str:
    return " ".join(text.strip().split("\n\n")[0].split())


def _cell(text: str) -> str:
    """A docstring as one table cell: its lines joined, reST literals as Markdown code."""
    text = re.sub(r"\s*\(:\w+:`[^`]*`\)", "", text)  # a reference into the code: not the user's
    text = re.sub(r":\w+:`~?([^`]*)`", r"`\1`", text)
    return " ".join(text.split()).replace("``", "`").replace("|", "\\|")
