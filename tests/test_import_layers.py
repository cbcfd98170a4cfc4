"""The package's import graph: no circles, and no import from a lower layer to a higher one.

Layers, bottom to top (docs/architecture.md): ground floor (types, errors, io, policy, protocols,
tensorboard) → rewards → sandbox → envs (and wrappers) → audit, search, interop → agents, report → cli. Every
``import`` / ``from ... import`` in the
package counts, function-level ones included (read with :mod:`ast`, nothing is imported).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "discoverygym"
LAYERS = {"types": 0, "errors": 0, "io": 0, "casestats": 0, "policy": 0, "protocols": 0, "tensorboard": 0, "outcomes": 0,
          "records": 0, "judgment": 0, "rundir": 0,
          "rewards": 1,
          "sandbox": 2, "envs": 3, "wrappers": 3, "audit": 4, "search": 4, "interop": 5, "agents": 5, "report": 5,
          "cli": 6}


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, module: str) -> set[str]:
    """Every ``discoverygym...`` name imported by ``path`` (modules, and ``module.name`` for from-imports)."""
    names = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names)
    return {n for n in names if n.startswith("discoverygym.")}


def _graph() -> dict[str, set[str]]:
    files = {_module(p): p for p in PACKAGE.rglob("*.py")}

    def resolve(name: str) -> str:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name

    graph = {}
    for module, path in files.items():
        graph[module] = {resolve(n) for n in _imports(path, module)} - {"", module, "discoverygym"}
    return graph


def _layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.get(parts[1]) if len(parts) > 1 else None


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_module_has_a_layer():
    unknown = sorted(m for m in _graph() if m.count(".") >= 1 and _layer(m) is None
                     and not m.startswith("discoverygym.examples"))
    assert unknown == []


def test_no_import_runs_back_up_a_layer():
    upward = [f"{m} -> {d}" for m, deps in _graph().items() for d in deps
              if _layer(m) is not None and _layer(d) is not None and _layer(d) > _layer(m)]
    assert upward == []


def test_no_import_circles():
    assert _cycles(_graph()) == []


@pytest.mark.parametrize("graph, expected", [
    ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
])
def test_the_cycle_finder_finds_circles(graph, expected):
    assert _cycles(graph) == expected
