"""Imports run one way: down the layers of funes.layers.LAYERS, and never in a circle.

Every module of the product is read with ``ast`` (nothing is imported).  For the
direction every ``import`` counts: at module level, inside functions (a lazy import
still ties the layers together) and under ``TYPE_CHECKING`` (an annotation still
says which layer knows which).  For circles, module-level imports count, those under
``TYPE_CHECKING`` included; see MODULE_LEVEL.
"""

import ast
import re
import tomllib
from pathlib import Path

from funes.layers import LAYERS, layer_of
from paths import ROOT



def _modules() -> dict[str, Path]:
    folders = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    modules = {}
    for package, folder in folders.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if "__pycache__" in parts:
                continue
            name = ".".join([package, *parts])
            # A folder mapped to a package of its own (assets/ → funes.assets) is not also under funes/.
            modules.setdefault(name, path)
    return modules


MODULES = _modules()


def _known(name: str) -> str | None:
    """The product module ``name`` names (itself, or the package above a name it holds)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _targets(node: ast.Import | ast.ImportFrom, module: str, package: str) -> set[str]:
    found = set()
    if isinstance(node, ast.Import):
        found.update(_known(alias.name) for alias in node.names if alias.name.split(".")[0] == "funes")
        return found
    base = node.module or ""
    if node.level:
        anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
        base = ".".join(anchor + ([node.module] if node.module else []))
    if base.split(".")[0] == "funes":
        for alias in node.names:
            full = f"{base}.{alias.name}"
            found.add(full if full in MODULES else _known(base))
    return found


def _imports(module: str, path: Path) -> tuple[set[str], set[str]]:
    """The product modules ``module`` imports: all of them, and those it imports
    at module level (``TYPE_CHECKING`` blocks included, function bodies not)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    every: set[str] = set()
    top: set[str] = set()

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                targets = _targets(child, module, package)
                every.update(targets)
                if not in_function:
                    top.update(targets)
            visit(child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))

    visit(ast.parse(path.read_text(), str(path)), False)
    for found in (every, top):
        found.discard(None)
        found.discard(module)
    return every, top


IMPORTS = {module: _imports(module, path) for module, path in MODULES.items()}
GRAPH = {module: every for module, (every, _top) in IMPORTS.items()}
# Circles are looked for among module-level imports: one inside a function runs once
# both modules are loaded, so it cannot meet a half-run module (the CLI's commands
# import `app` from funes.cli.main, which reaches a command's module from inside
# main() the same way it reaches them all through importlib).
MODULE_LEVEL = {module: top for module, (_every, top) in IMPORTS.items()}


def test_every_module_has_a_layer():
    for module in MODULES:
        layer_of(module)


def test_no_module_imports_a_layer_above_its_own():
    upward = [f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
              for module, targets in sorted(GRAPH.items()) for target in sorted(targets)
              if layer_of(target) > layer_of(module)]
    assert not upward, "imports against the layers of funes.layers.LAYERS:\n" + "\n".join(upward)


def _circles() -> list[list[str]]:
    """Strongly connected components of more than one module in the module-level
import graph (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(MODULE_LEVEL.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(MODULE_LEVEL):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle():
    circles = _circles()
    assert not circles, "modules importing each other:\n" + "\n".join(" ↔ ".join(c) for c in circles)


def test_the_architecture_doc_lists_the_layers_of_the_code():
    """docs/architecture.md's layer table has one row per layer, in LAYERS' order,
    naming the same modules."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("## Layers and folders", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| ---")][1:]
    doc = [(cells[0].strip("` "), tuple(re.findall(r"`([\w.]+)`", cells[1])))
           for cells in ([c.strip() for c in row.strip("|").split("|")] for row in rows)]
    assert doc == [(name, prefixes) for name, prefixes, _job in LAYERS]
