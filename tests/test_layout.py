"""The package's layers hold: each package imports only from the layers below it, and no cycle."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "s3spill"

#: What each top-level module or package may import (besides itself). The bottom layer
#: first; docs/architecture.md draws the same picture.
ALLOWED: dict[str, set[str]] = {
    "_version": set(),
    "errors": set(),
    "log": set(),
    "config": {"errors"},
    "failpoints": {"log"},
    "store": {"config", "errors", "log"},
    "keys": {"errors", "store"},
    "models": {"keys", "errors"},
    "testing": {"config", "errors", "store"},
    "textview": set(),
    "extension_alone": set(),
    "stdlib_light": set(),
    "lazy_exports": set(),
    "context": {"extension_alone", "lazy_exports", "textview"},
    "typed": {"context", "errors", "textview"},
    "artifacts": {"config", "context", "errors", "extension_alone", "failpoints", "keys", "log", "models",
                  "stdlib_light", "store", "textview", "typed"},
    "leases": {"config", "errors", "failpoints", "keys", "log", "models", "store"},
    "fleet": {"config", "context", "errors", "failpoints", "keys", "leases", "log", "models", "store",
              "telemetry"},
    "live": {"artifacts", "config", "context", "errors", "failpoints", "fleet", "keys", "leases", "log",
             "models", "store", "textview"},
    "gc": {"config", "errors", "failpoints", "fleet", "keys", "lazy_exports", "leases", "log", "models",
           "store"},
    "telemetry": {"log"},
    "usage": {"config", "errors", "keys", "log", "models", "store", "telemetry"},
    "spill": {"artifacts", "config", "context", "errors", "fleet", "keys", "leases", "live", "log", "models",
              "store", "telemetry", "textview", "typed", "usage"},
    "agent": {"_version", "artifacts", "config", "context", "errors", "fleet", "keys", "leases", "live",
              "log", "models", "spill", "store", "telemetry", "typed", "usage"},
    "proxy": {"agent", "artifacts", "config", "context", "errors", "fleet", "keys", "leases", "live",
              "log", "models", "spill", "store", "telemetry", "typed", "usage"},
    "adapters": {"_version", "agent", "artifacts", "config", "context", "errors", "fleet", "keys", "leases",
                 "live", "log", "models", "proxy", "spill", "store", "telemetry", "typed", "usage"},
}
#: The top of the stack may use anything below it.
TOP = {"__init__", "__main__", "cli", "demo", "ui"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, *, module_level_only: bool) -> set[str]:
    """The s3spill modules ``path`` imports; lazy (in-function) ones too unless told not to.

    Module level includes ``if TYPE_CHECKING:`` blocks: a cycle only the type checker
    sees is still two modules that need each other.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if module_level_only:
        nodes = [n for top in tree.body for n in ([top, *top.body] if isinstance(top, ast.If) else [top])]
    else:
        nodes = list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("s3spill"):
            if node.module == "s3spill":
                found.update(f"s3spill.{alias.name}" for alias in node.names)
            else:
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("s3spill"))
    return found


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def test_every_package_is_placed_in_a_layer() -> None:
    """A new top-level module or package must be given a place in the layers."""
    tops = {_top(m) for m in _modules()}
    assert tops <= set(ALLOWED) | TOP, sorted(tops - set(ALLOWED) - TOP)


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_a_package_imports_only_from_lower_layers(package: str) -> None:
    """Lazy imports count too: a layer violation hidden in a function is still a violation."""
    wrong = set()
    for module, path in _modules().items():
        if _top(module) != package:
            continue
        for target in _imports(path, module_level_only=False):
            other = _top(target)
            if other != package and other not in ALLOWED[package]:
                wrong.add(f"{module} -> {target}")
    assert not wrong, sorted(wrong)


def test_no_import_cycle_between_modules() -> None:
    """Module-level imports form a DAG, so no module needs another's private parts to load."""
    modules = _modules()
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in modules.items():
        for target in _imports(path, module_level_only=True):
            # `from pkg import name` may name a submodule or an attribute of the package.
            graph[module].add(target if target in modules else target.rpartition(".")[0])
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt == node:
                continue
            if state.get(nxt) == 1:
                cycle = [*stack[stack.index(nxt):], nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if state.get(nxt) is None:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for module in sorted(modules):
        if state.get(module) is None:
            visit(module)
