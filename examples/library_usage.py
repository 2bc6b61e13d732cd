"""maxlower as a library: one call, or its passes composed in an onnx_ir PassManager.

    python examples/library_usage.py

Both results are checked with onnx.checker (full_check) and run in onnxruntime next to
the original, on inputs that include ties, -inf and NaN (where ONNX defines the result);
every output must be bit-equal.
Exits non-zero if anything is off.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import onnx
import onnx_ir as ir
from onnx_ir.passes.common import CheckerPass, ShapeInferencePass

import maxlower
from maxlower.runtime import bit_equal, run_model
from passes import ConvertToOpsetPass

MODEL = pathlib.Path(__file__).resolve().parent / "models" / "reduce_max_opset18.onnx"


def sample_feeds() -> list[dict[str, np.ndarray]]:
    """Inputs for reduce_max_opset18.onnx: every run-time axes value, ties and specials."""
    rng = np.random.default_rng(0)
    x = rng.integers(-3, 3, size=(2, 3, 4)).astype(np.float32)  # small ints: many ties
    x[0, 1, 2] = -np.inf
    # NaN only where the result is specified: Max propagates it. ONNX leaves NaN reaching
    # ReduceMax / ArgMax unspecified, and onnxruntime's answer depends on its position.
    bias = np.array([[0.5], [np.nan], [-np.inf]], dtype=np.float32)
    return [
        {"x": x, "axes": np.array([axis], dtype=np.int64), "bias": bias}
        for axis in (0, 1, 2, -1, -3)
    ]


def same_outputs(original: onnx.ModelProto, converted: onnx.ModelProto) -> bool:
    ok = True
    names = [o.name for o in original.graph.output]
    for feeds in sample_feeds():
        expected, _ = run_model(original, feeds)
        actual, _ = run_model(converted, feeds)
        for name, e, a in zip(names, expected, actual):
            if not bit_equal(e, a):
                print(f"MISMATCH on {name} with axes={feeds['axes']}: {e!r} vs {a!r}")
                ok = False
    return ok


def default_opset(model: onnx.ModelProto) -> int:
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


def main() -> int:
    original = onnx.load(MODEL)
    ok = True

    # 1. One call: ModelProto in, ModelProto out; the input is left as it was.
    converted = maxlower.convert(original, 13)
    onnx.checker.check_model(converted, full_check=True)
    print(f"maxlower.convert: opset {default_opset(original)} -> {default_opset(converted)}")
    ok &= default_opset(converted) == 13
    ok &= same_outputs(original, converted)

    # 2. The passes composed by hand, on an onnx_ir model (converted in place).
    # ConvertToOpsetPass runs the family and other-op passes and owns the opset import;
    # the adapters need the value types shape inference gives, and the check comes last.
    model = ir.serde.deserialize_model(original)
    pipeline = ir.passes.PassManager(
        [
            ShapeInferencePass(strict_mode=False),
            ConvertToOpsetPass(11),
            CheckerPass(full_check=True),
        ]
    )
    result = pipeline(model)
    by_hand = ir.serde.serialize_model(result.model)
    print(f"PassManager: opset -> {default_opset(by_hand)}, modified={result.modified}")
    ok &= result.modified and default_opset(by_hand) == 11
    ok &= same_outputs(original, by_hand)

    # 3. One pass alone reports what it changed in its result.
    alone = ConvertToOpsetPass(11)(
        ShapeInferencePass(strict_mode=False)(ir.serde.deserialize_model(original)).model
    )
    print(
        f"ConvertToOpsetPass: {len(alone.rewrites)} family rewrites, "
        f"{len(alone.conversions)} other ops converted"
    )
    ok &= bool(alone.rewrites)

    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
