"""The package's imports point down the layer order docs/ARCHITECTURE.md states, and no module
imports itself back in a circle. Read from the code with ``ast``: every import counts, at module
level, inside a function or under ``TYPE_CHECKING``; the library never imports the benchmarks
or the scenarios."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tempura"

# lowest first; a unit (a subpackage or a top-level module of tempura) imports only units of
# lower layers, never one of its own layer
LAYERS: list[set[str]] = [
    {"errors"},
    {"algebra", "yamlfile", "atomic", "tpch", "tpcds"},
    {"sql"},
    {"catalog"},
    {"stats"},
    {"cost"},
    {"tvr", "mqo"},
    {"memo"},
    {"infer"},
    {"rules", "runtime"},
    {"optimizer"},
    {"scheduler", "api"},
    {"standing", "project"},
    {"cli"},
    {"tempura", "__main__"},  # the package's face (tempura/__init__.py), and its command line's file
]
LAYER = {unit: n for n, units in enumerate(LAYERS) for unit in units}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unit_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "tempura"


def imports(path: Path, package: str) -> list[tuple[str, bool]]:
    """The modules ``path`` imports, each with whether only for type checking."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only.update(id(n) for child in node.body for n in ast.walk(child))
    out = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            names = [f"{base}.{alias.name}" for alias in node.names]  # a module, or a name of module base
        out.extend((name, id(node) in typing_only) for name in names)
    return out


def graph() -> tuple[nx.DiGraph, list[tuple[str, str, str]]]:
    """The runtime import graph between tempura's modules, and every import as (importer unit,
    imported unit, importing module)."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    runtime = nx.DiGraph()
    runtime.add_nodes_from(modules)
    units: list[tuple[str, str, str]] = []
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for name, typing_only in imports(path, package):
            top = name.split(".")[0]
            if top in ("benchmarks", "scenarios"):
                units.append((unit_of(module), top, module))
            if top != "tempura":
                continue
            target = name
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]  # an imported name, not a module
            if target not in modules:
                continue
            units.append((unit_of(module), unit_of(target), module))
            if not typing_only and target != module:
                runtime.add_edge(module, target)
    return runtime, units


def test_every_unit_has_a_layer() -> None:
    found = {unit_of(module_name(p)) for p in PACKAGE.rglob("*.py")}
    assert found == set(LAYER), f"not in LAYERS: {sorted(found - set(LAYER))}; gone: {sorted(set(LAYER) - found)}"


def test_imports_point_down_the_layers() -> None:
    _, units = graph()
    upward = sorted({f"{module} imports {target}" for source, target, module in units
                     if source != target and (target not in LAYER or LAYER[target] >= LAYER[source])})
    assert not upward, "imports that do not point down the layers:\n" + "\n".join(upward)


def test_no_module_imports_itself_back() -> None:
    runtime, _ = graph()
    circles = [c for c in nx.simple_cycles(runtime) if len(c) > 1]
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(c + c[:1]) for c in circles)


def test_the_architecture_states_these_layers() -> None:
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    stated = [set(re.findall(r"`([a-z_]+)`", line)) for line in section.splitlines() if re.match(r"^\d+\. ", line)]
    assert stated == LAYERS, stated
