"""Hypothesis strategies for issue 18: random family models lowered for one or two
accelerator profiles, and accelerator keys with values of the wrong type or on the wrong op.

    accelerator_cases()         a family model (tests.strategies.family_models) and 1-2
                                profiles, an accelerator first (opset windows included)
    bad_accelerator_profiles()  (what is wrong, a profile text that breaks the schema)
"""

from __future__ import annotations

import dataclasses

import onnx
from hypothesis import strategies as st

from maxlower.profiles.rules_accel import ACCELERATOR_KEYS
from tests.strategies import family_models

ACCELERATORS = ("coreml", "ncnn", "openvino", "qnn-htp", "rknn", "sentis", "tflite")
SECOND = (None, "onnxruntime", *ACCELERATORS)


@dataclasses.dataclass(frozen=True)
class AcceleratorCase:
    model: onnx.ModelProto
    profiles: tuple[str, ...]

    def text(self) -> str:
        return f"// profiles: {self.profiles}\n{onnx.printer.to_text(self.model)}\n"


@st.composite
def accelerator_cases(draw) -> AcceleratorCase:
    model = draw(family_models((7, onnx.defs.onnx_opset_version())))
    first = draw(st.sampled_from(ACCELERATORS))
    second = draw(st.sampled_from(SECOND))
    profiles = (first,) if second in (None, first) else (first, second)
    return AcceleratorCase(model, profiles)


# key -> values of a wrong type for it
_WRONG = {
    "max_rank": ["true", "-1", "1.5", '"4"', "[4]"],
    "axis_within_last": ["false", "-2", '"last"', "[1]"],
    "graph_output": ["0", "1", '"false"', "[]"],
    "int64_inputs": ["0", '"no"', "{}"],
    "int64_outputs": ["1", '"false"'],
    "int64_output_cast": ["1", '"true"'],
}
_TOP = {"opsets": ["[15, 7]", "[0, 3]", "15", '["7", "15"]', "[7]", "[true, 9]"]}


@st.composite
def bad_accelerator_profiles(draw) -> tuple[str, str]:
    """(what is wrong, the text of a profile file that breaks the schema)."""
    kind = draw(st.sampled_from(["wrong-type", "wrong-op", "window"]))
    head = 'description = "fuzzed"\n'
    if kind == "window":
        return kind, f"{head}opsets = {draw(st.sampled_from(_TOP['opsets']))}\n"
    key = draw(st.sampled_from(sorted(_WRONG)))
    if kind == "wrong-type":
        op = draw(st.sampled_from(sorted(ACCELERATOR_KEYS[key])))
        value = draw(st.sampled_from(_WRONG[key]))
    else:
        others = sorted({"Max", "ReduceMax", "ArgMax", "Where", "Add"} - ACCELERATOR_KEYS[key])
        op = draw(st.sampled_from(others))
        value = "true" if key not in ("max_rank", "axis_within_last") else "1"
    return kind, f"{head}[ops.{op}]\n{key} = {value}\n"


__all__ = ["ACCELERATORS", "AcceleratorCase", "accelerator_cases", "bad_accelerator_profiles"]
