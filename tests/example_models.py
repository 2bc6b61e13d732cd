"""The committed example models, named in one place.

examples/models/ is also where README commands write: `maxlower convert
examples/models/reduce_max_opset18.onnx --opset 13` (the quick start) writes
reduce_max_opset18.opset13.onnx beside its input, `maxlower lower ... --profile primitives`
writes nested_opset18.primitives.onnx, and so on. So no test may glob or list that folder: a
newcomer who runs the quick start and then `python -m pytest` would test those outputs too
(tests/test_quickstart.py does exactly that). Tests that want every example model take them
from here.

The names are the keys of `BUILDERS` in examples/make_example_models.py, the script that builds
the models (and whose output tests/test_examples.py compares with the committed files). The
script is read, not run, so that this module stays cheap to import.
"""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODELS_DIR = ROOT / "examples" / "models"
BUILDER_SCRIPT = ROOT / "examples" / "make_example_models.py"


def _builder_names(script: pathlib.Path) -> tuple[str, ...]:
    """The string keys of the module-level `BUILDERS = {...}` dict literal of `script`."""
    tree = ast.parse(script.read_text(encoding="utf-8"), filename=str(script))
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(target, "id", None) for target in node.targets] == ["BUILDERS"]
            and isinstance(node.value, ast.Dict)
        ):
            return tuple(ast.literal_eval(key) for key in node.value.keys)
    raise LookupError(f"{script}: no module-level `BUILDERS = {{...}}` dict literal")


# File names, e.g. ("reduce_max_opset18.onnx", "nested_opset18.onnx", ...), in build order.
EXAMPLE_MODEL_NAMES: tuple[str, ...] = _builder_names(BUILDER_SCRIPT)
# Their paths in this checkout.
EXAMPLE_MODELS: tuple[pathlib.Path, ...] = tuple(MODELS_DIR / name for name in EXAMPLE_MODEL_NAMES)
