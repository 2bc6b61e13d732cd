"""The `maxlower` command's entry point (and `python -m maxlower`'s).

onnx_ir imports sympy when it is imported, for arithmetic on symbolic dims, which maxlower
never does; importing sympy takes 0.2 s, a sixth of a whole `maxlower convert` of a
20,000-node model. The command defers it: sympy's code runs when one of its attributes is
first used, if ever. Only the command's own process is affected; `import maxlower` in
a program leaves its imports alone.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import types

_DEFERRED: list[str] = []  # the names defer_module registered


class _DeferredModule(types.ModuleType):
    """A module whose code runs on first use of an attribute it does not have yet.

    (importlib.util.LazyLoader would load it on the next `import sympy`, which reads
    `__spec__`: this one has `__spec__`, `__path__` and the rest from the start.)"""

    def __getattr__(self, name: str):
        self.__class__ = types.ModuleType
        try:
            self.__spec__.loader.exec_module(self)
        except BaseException:
            sys.modules.pop(self.__name__, None)  # as a failed import leaves it: not there
            raise
        return getattr(self, name)


def defer_module(name: str) -> None:
    """Register the module `name` (top-level, or one level down in a package that is not
    imported yet) so that its code runs on first use. Nothing happens if it is imported
    already or cannot be found."""
    if name in sys.modules:
        return
    parent, _, _ = name.rpartition(".")
    if parent:
        if parent in sys.modules or "." in parent:
            return
        package = importlib.util.find_spec(parent)  # finds it without importing it
        if package is None or package.submodule_search_locations is None:
            return
        spec = importlib.machinery.PathFinder.find_spec(
            name, list(package.submodule_search_locations)
        )
    else:
        spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    module.__class__ = _DeferredModule
    sys.modules[name] = module
    _DEFERRED.append(name)


def prepare() -> None:
    """What the command does before it imports anything else."""
    # onnx_ir._symbolic_shapes reads sympy.Max when it runs, so it waits too.
    defer_module("onnx_ir._symbolic_shapes")
    defer_module("sympy")


def bind_deferred_submodules() -> None:
    """Make each deferred submodule an attribute of its package, once the package is
    imported, as an import would have (`from onnx_ir import _symbolic_shapes` finds it in
    sys.modules; `onnx_ir._symbolic_shapes` needs the attribute)."""
    for name in _DEFERRED:
        parent, _, child = name.rpartition(".")
        package, module = sys.modules.get(parent), sys.modules.get(name)
        if package is not None and module is not None and not hasattr(package, child):
            setattr(package, child, module)


def main() -> None:
    prepare()
    from maxlower.cli import main as cli_main

    bind_deferred_submodules()

    cli_main()
