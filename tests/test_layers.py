"""The driver's layers (docs/development.md, "Layers"): every module of maxlower/ sits in one
layer and imports only from its own layer or those below; no two modules import each other,
directly or round a circle; no module imports another's private names; the prover and the
verifier import neither the report package nor each other; passes/ never imports maxlower.

Imports are read from the source with `ast`, all of them: at the top, inside functions and
under `if TYPE_CHECKING:`. The rules are checked against a planted import graph too, so a
rule that could not fail would be seen.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Lowest first. A module belongs to the first entry that is it or a package holding it.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "ground",
        (
            "maxlower.errors",
            "maxlower.serde",
            "maxlower.ui",
            "maxlower.options",
            "maxlower.family_nodes",
            "maxlower.files",
            "maxlower.external",
            "maxlower.runtime",
            "maxlower.replay",
        ),
    ),
    (
        "checks and I/O",
        ("maxlower.io", "maxlower.safety", "maxlower.training_info", "maxlower.profiles"),
    ),
    ("engine", ("maxlower.pipeline", "maxlower.sparse")),
    ("services", ("maxlower.changes", "maxlower.verify", "maxlower.prove", "maxlower.report")),
    (
        "library face",
        ("maxlower.api", "maxlower.check", "maxlower.dropin", "maxlower.inspect", "maxlower"),
    ),
    ("command line", ("maxlower.cli", "maxlower.launch", "maxlower.__main__")),
]
# Services that return data and never draw it, nor use each other: the page is drawn above.
INDEPENDENT_SERVICES = ("maxlower.verify", "maxlower.prove")
REPORT = "maxlower.report"


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(package: str) -> dict[str, pathlib.Path]:
    return {module_name(p): p for p in sorted((ROOT / package).rglob("*.py"))}


def imports_of(name: str, path: pathlib.Path, known: set[str]) -> list[tuple[str, str | None]]:
    """(module imported, name taken from it or None) for every import in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                # `from maxlower import training_info` imports a module, not a name
                found.append((submodule, None) if submodule in known else (base, alias.name))
    return found


def owner(imported: str, known: set[str]) -> str | None:
    """The module of `known` that an import of `imported` runs (its longest known prefix)."""
    while imported and imported not in known:
        imported = imported.rpartition(".")[0]
    return imported or None


def layer_of(name: str) -> int | None:
    for index, (_, members) in enumerate(LAYERS):
        # ("maxlower" is the package's own __init__, not everything inside it)
        if any(name == m or (m != "maxlower" and name.startswith(m + ".")) for m in members):
            return index
    return None


def graph(found: dict[str, pathlib.Path]) -> tuple[dict[str, set[str]], list[str]]:
    """{module: the modules of maxlower it imports} and the private names imported across."""
    known = set(found)
    edges: dict[str, set[str]] = {name: set() for name in found}
    private = []
    for name, path in found.items():
        for imported, taken in imports_of(name, path, known):
            target = owner(imported, known)
            if target is None or target == name:
                continue
            edges[name].add(target)
            if taken and taken.startswith("_") and not taken.startswith("__"):
                private.append(f"{name} imports {target}.{taken}")
    return edges, private


def violations(edges: dict[str, set[str]], private: list[str]) -> list[str]:
    """Every broken rule, one line each (empty when the layers hold)."""
    found = [f"{m} is in no layer: add it to LAYERS" for m in edges if layer_of(m) is None]
    for module, targets in sorted(edges.items()):
        below = layer_of(module)
        for target in sorted(targets):
            above = layer_of(target)
            if below is not None and above is not None and above > below:
                found.append(
                    f"{module} ({LAYERS[below][0]}) imports {target} ({LAYERS[above][0]}), "
                    "a layer above"
                )
            for service in INDEPENDENT_SERVICES:
                if not _within(module, service):
                    continue
                others = [REPORT, *(s for s in INDEPENDENT_SERVICES if s != service)]
                if any(_within(target, other) for other in others):
                    found.append(f"{module} imports {target}: {service} draws nothing")
    found += [f"import circle: {' -> '.join(circle)}" for circle in circles(edges)]
    return found + private


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each as a list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
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

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_maxlower_keeps_its_layers():
    edges, private = graph(modules("maxlower"))
    assert violations(edges, private) == []


def test_every_layer_has_modules_and_every_module_a_layer():
    names = set(modules("maxlower"))
    for layer, members in LAYERS:
        assert all(m in names for m in members), f"{layer}: a listed module does not exist"


def test_passes_never_imports_maxlower():
    passes = modules("passes")
    known = set(passes)
    bad = [
        f"{name} imports {imported}"
        for name, path in passes.items()
        for imported, _ in imports_of(name, path, known)
        if imported == "maxlower" or imported.startswith("maxlower.")
    ]
    assert bad == []


@pytest.mark.parametrize(
    "edges, private, expected",
    [
        # an import one layer up: the engine reaching into the library face
        ({"maxlower.pipeline": {"maxlower.api"}, "maxlower.api": set()}, [], "a layer above"),
        # a circle inside one layer
        (
            {"maxlower.io": {"maxlower.safety"}, "maxlower.safety": {"maxlower.io"}},
            [],
            "import circle: maxlower.io -> maxlower.safety",
        ),
        # the prover drawing a page, and the verifier using the prover
        ({"maxlower.prove.sites": {"maxlower.report"}, "maxlower.report": set()}, [], "draws"),
        ({"maxlower.verify.core": {"maxlower.prove"}, "maxlower.prove": set()}, [], "draws"),
        # a module nobody placed
        ({"maxlower.newcomer": set()}, [], "is in no layer"),
        # a private name taken from another module
        ({"maxlower.io": set()}, ["maxlower.io imports maxlower.safety._x"], "_x"),
    ],
)
def test_the_rules_catch_what_they_forbid(edges, private, expected):
    assert any(expected in line for line in violations(edges, private))


def test_imports_inside_functions_and_type_checking_count(tmp_path):
    """The reader sees the imports that only run late or only for type checkers."""
    path = tmp_path / "m.py"
    path.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from maxlower.api import run_job\n"
        "def f():\n    from maxlower import pipeline\n    from . import ui\n",
        encoding="utf-8",
    )
    found = imports_of("maxlower.errors", path, {"maxlower.pipeline", "maxlower.ui"})
    assert ("maxlower.api", "run_job") in found
    assert ("maxlower.pipeline", None) in found
    assert ("maxlower.ui", None) in found
