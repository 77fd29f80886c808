"""``docs/spec.md`` is the spec's reference as the model writes it (``tempura spec-reference``):
every key of the spec model is on the page, with its meaning, and the page says nothing else."""

from __future__ import annotations

import typing
from pathlib import Path

from click.testing import CliRunner
from pydantic import BaseModel

from tempura.cli import main
from tempura.scheduler.spec.model import SpecFile
from tempura.scheduler.spec.reference import reference

PAGE = Path(__file__).resolve().parents[1] / "docs" / "spec.md"


def test_the_page_is_what_the_model_writes() -> None:
    assert PAGE.read_text(encoding="utf-8") == reference(), "run: tempura spec-reference > docs/spec.md"
    printed = CliRunner().invoke(main, ["spec-reference"])
    assert printed.exit_code == 0 and printed.output == reference()


def test_every_key_is_on_the_page_with_a_meaning() -> None:
    page = reference()

    def keys(model: type[BaseModel], prefix: str) -> list[str]:
        out = []
        for name, field in model.model_fields.items():
            path = prefix + (field.alias or name)
            out.append(path)
            assert field.description, f"{path} has no meaning written"
            annotation = field.annotation
            if typing.get_origin(annotation) is dict:  # a mapping of names to entries
                entry = typing.get_args(annotation)[1]
                if isinstance(entry, type) and issubclass(entry, BaseModel):
                    out += keys(entry, path + ".<name>.")
                continue
            for arg in typing.get_args(annotation) or (annotation,):
                if isinstance(arg, type) and issubclass(arg, BaseModel):
                    out += keys(arg, path + ".")
        return out

    found = keys(SpecFile, "")
    assert "sources.<name>.arrival.within" in found and "hooks.on_failure" in found and "schedule.range.slide" in found
    for path in found:
        assert f"| `{path}` |" in page, path
