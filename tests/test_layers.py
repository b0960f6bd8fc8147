"""Imports only go down the layers, and no two modules import each other, directly or through
others. Every import is read with `ast`: those at the top of a module, inside functions (lazy
imports that keep libcst and z3 off the warm path) and under `TYPE_CHECKING` alike."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Where each package's files are (pyproject's package-dir mapping).
PACKAGE_DIRS = {
    "idxcheck": ROOT / "checker",
    "idxcheck.rules": ROOT / "rules",
    "idxcheck.runtime_kernels": ROOT / "runtime_kernels",
}
# From the bottom up: a module may import its own layer and those below it. An entry names a
# package and every module under it, except the root `idxcheck`, which names its `__init__`
# alone (else a package left out of the table would fall silently into the bottom layer).
ROOT_PACKAGE = "idxcheck"
LAYERS: tuple[tuple[str, ...], ...] = (
    ("idxcheck", "idxcheck.model", "idxcheck.memo"),
    ("idxcheck.sym",),
    ("idxcheck.profiles",),
    ("idxcheck.source",),
    ("idxcheck.interp",),
    ("idxcheck.facts",),
    ("idxcheck.rules",),
    ("idxcheck.solve",),
    ("idxcheck.check",),
    ("idxcheck.incremental",),
    ("idxcheck.parallel",),
    ("idxcheck.report",),
    ("idxcheck.runtime_kernels",),
    ("idxcheck.app", "idxcheck.api"),
    ("idxcheck.cli",),
    ("idxcheck.entry", "idxcheck.__main__"),
)


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package, folder in PACKAGE_DIRS.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if package == "idxcheck" and parts[0] in ("rules", "runtime_kernels"):
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package, *parts])] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The idxcheck modules `name` imports (a name imported from a package is its submodule
    when there is one)."""
    found: set[str] = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                if not is_package:
                    base = base[:-1]
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                found.add(sub if sub in MODULES else module)
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def layer_of(module: str) -> int:
    best: tuple[int, int] | None = None  # (length of the matching prefix, layer)
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            below = prefix != ROOT_PACKAGE and module.startswith(prefix + ".")
            if module == prefix or below:
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), index)
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best[1]


def test_every_module_is_in_a_layer() -> None:
    for module in MODULES:
        layer_of(module)


def test_a_package_missing_from_the_table_is_in_no_layer() -> None:
    with pytest.raises(AssertionError, match="in no layer"):
        layer_of("idxcheck.newpackage.module")


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_go_down(module: str) -> None:
    upward = sorted(m for m in GRAPH[module] if layer_of(m) > layer_of(module))
    assert not upward, f"{module} (layer {layer_of(module)}) imports a layer above: {upward}"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle() -> None:
    assert _cycles(GRAPH) == []


def test_the_checks_fail_on_an_upward_import_and_on_a_cycle() -> None:
    """The two checks above are not vacuous: a made-up edge from the data model up to the
    application, and a loop between two modules of one layer, are both caught."""
    assert layer_of("idxcheck.app.api") > layer_of("idxcheck.model.findings")
    looped = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(looped) == [["a", "b", "c"]]
    assert len(GRAPH) > 50 and sum(map(len, GRAPH.values())) > 150
