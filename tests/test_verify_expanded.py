"""--verify where a conversion expanded function ops (issue 29): the result is held bit
for bit to the original with the same ops expanded at its own opset, and the original's
own kernels' difference from those bodies is its own status, "rounding of an expanded
function": a pass by default, a failure under --strict, past --expanded-ulps, or where
integers differ. Comparisons expanded so stay bit-exact (EQUIVALENT)."""

from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import maxlower
from maxlower.verify.compare import ulp_distance
from maxlower.verify.expanded import ExpandedRounding, spec_reference
from maxlower.verify.report import DIFFERENT, EQUIVALENT, EQUIVALENT_EXCEPT_EXPANDED


def layer_norm_gelu() -> onnx.ModelProto:
    nodes = [
        helper.make_node("LayerNormalization", ["x", "scale"], ["y"], axis=-1, name="ln"),
        helper.make_node("Gelu", ["y"], ["z"], name="gelu"),
    ]
    scale = numpy_helper.from_array(np.linspace(0.5, 2, 8, dtype=np.float32), "scale")
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 8])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [3, 8])],
        [scale],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


def less_or_equal() -> onnx.ModelProto:
    node = helper.make_node("LessOrEqual", ["a", "b"], ["c"], name="le")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [5]) for n in "ab"],
        [helper.make_tensor_value_info("c", TensorProto.BOOL, [5])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])


def run_module(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "maxlower", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_result_is_bit_exact_to_the_body_and_the_kernel_is_measured_apart():
    original = layer_norm_gelu()
    converted, report = maxlower.convert_with_report(original, 13, expand_functions=True)
    assert report.expanded_ops() == {"LayerNormalization", "Gelu"}
    verdict = maxlower.verify(original, converted, expanded=report.expanded_ops())
    # onnxruntime's fused LayerNormalization and Gelu round unlike their bodies
    assert verdict.status == EQUIVALENT_EXCEPT_EXPANDED and verdict.ok
    assert 0 < verdict.expanded.max_ulps < 1000
    assert "ROUNDING OF AN EXPANDED FUNCTION" in verdict.headline()
    # and the candidate itself is exactly the spec's body, on the same trials
    assert maxlower.verify(spec_reference(original, report.expanded_ops()), converted).status == (
        EQUIVALENT
    )
    # without the expansion named, the plain comparison calls it what it is: DIFFERENT
    assert maxlower.verify(original, converted).status == DIFFERENT
    strict = maxlower.verify(original, converted, expanded=report.expanded_ops(), strict=True)
    assert not strict.ok and "--strict" in strict.headline()
    bounded = maxlower.verify(original, converted, expanded=report.expanded_ops(), expanded_ulps=0)
    assert not bounded.ok and "past --expanded-ulps 0" in bounded.headline()


def test_a_wrong_expansion_is_still_different():
    """A candidate one ulp off the body (its output times 1 + 2^-23) is DIFFERENT, not
    rounding: the expansion itself must be bit-exact."""
    original = layer_norm_gelu()
    converted, report = maxlower.convert_with_report(original, 13, expand_functions=True)
    tampered = onnx.ModelProto()
    tampered.CopyFrom(converted)
    graph = tampered.graph
    for node in graph.node:
        node.output[:] = ["z_exact" if o == "z" else o for o in node.output]
    factor = numpy_helper.from_array(np.array(1 + 2**-23, np.float32), "one_ulp_up")
    graph.initializer.append(factor)
    graph.node.append(helper.make_node("Mul", ["z_exact", "one_ulp_up"], ["z"]))
    verdict = maxlower.verify(original, tampered, expanded=report.expanded_ops())
    assert verdict.status == DIFFERENT and not verdict.ok


def test_an_expanded_comparison_stays_bit_exact():
    original = less_or_equal()
    converted, report = maxlower.convert_with_report(original, 11, expand_functions=True)
    assert report.expanded_ops() == {"LessOrEqual"}
    verdict = maxlower.verify(original, converted, expanded=report.expanded_ops())
    assert verdict.status == EQUIVALENT, verdict.summary()


def test_integers_that_differ_never_pass_as_rounding():
    rounding = ExpandedRounding(
        ["X"], [{"name": "i", "mismatches": 1, "max_ulps": None, "special": 0}]
    )
    assert rounding.integers_differ and not rounding.within_bound
    floats = ExpandedRounding(["X"], [{"name": "f", "mismatches": 3, "max_ulps": 4, "special": 0}])
    assert floats.within_bound and not floats.integers_differ
    assert not ExpandedRounding(floats.ops, floats.outputs, max_ulps_bound=3).within_bound


def test_the_command_line_passes_it_and_strict_fails_it(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(layer_norm_gelu(), path)
    out = tmp_path / "out.onnx"
    done = run_module("convert", path, "--opset", "13", "--expand-functions", "--verify", "-o", out)
    assert done.returncode == 0 and out.exists(), done.stderr
    assert "ROUNDING OF AN EXPANDED FUNCTION (Gelu, LayerNormalization)" in done.stdout
    out.unlink()
    strict = run_module(
        "convert", path, "--opset", "13", "--expand-functions", "--verify", "--strict", "-o", out
    )
    assert strict.returncode == 1 and not out.exists()
    assert "expanded function" in strict.stderr


@pytest.mark.parametrize(
    "dtype", [np.float16, np.float32, np.float64, ml_dtypes.bfloat16], ids=lambda d: d.__name__
)
def test_ulp_distance(dtype):
    one = np.array([1.0], dtype)
    up = np.nextafter(one.astype(np.float64), 2).astype(dtype)  # may round back for small types
    if up[0] == one[0]:
        bits = one.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[one.itemsize]) + 1
        up = bits.view(dtype)
    assert ulp_distance(one, up) == (1, 0)
    assert ulp_distance(np.array([-0.0], dtype), np.array([0.0], dtype)) == (0, 0)
    smallest = np.array([0], {2: np.uint16, 4: np.uint32, 8: np.uint64}[one.itemsize]) + 1
    tiny = smallest.view(dtype)
    assert ulp_distance(-tiny, tiny) == (2, 0)  # across zero: -tiny, -0 = +0, +tiny
    assert ulp_distance(np.array([np.nan, 1.0], dtype), np.array([1.0, np.inf], dtype)) == (
        None,
        2,
    )


# --- an integer changed downstream of the rounding (issue 28's audit: vit's argmax label) ---

# onnxruntime's fused LayerNormalization ties the first two of this row (ArgMax: 0); its
# ONNX body rounds the first one ulp lower (ArgMax: 1)
NEAR_TIE = np.array(
    [[0.8802586197853088, 0.8802586793899536, -0.7796379327774048, 0.08697924762964249]],
    np.float32,
)


def layer_norm_argmax() -> onnx.ModelProto:
    nodes = [
        helper.make_node("LayerNormalization", ["x", "scale"], ["y"], axis=-1, name="ln"),
        helper.make_node("ArgMax", ["y"], ["label"], axis=-1, keepdims=0, name="argmax"),
    ]
    scale = numpy_helper.from_array(np.ones(4, np.float32), "scale")
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info("label", TensorProto.INT64, ["n"])],
        [scale],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_an_integer_changed_downstream_of_the_rounding_is_said_and_passes(tmp_path):
    original = layer_norm_argmax()
    spec = spec_reference(original, frozenset({"LayerNormalization"}))
    kernel = maxlower.runtime.onnxruntime_session(original).run(None, {"x": NEAR_TIE})[0]
    body = maxlower.runtime.onnxruntime_session(spec).run(None, {"x": NEAR_TIE})[0]
    assert kernel.tolist() == [0] and body.tolist() == [1]  # (the premise: it flips)
    converted, report = maxlower.convert_with_report(original, 13, expand_functions=True)
    expanded = report.expanded_ops()
    verdict = maxlower.verify(original, converted, expanded=expanded, inputs={"x": NEAR_TIE})
    assert verdict.status == EQUIVALENT_EXCEPT_EXPANDED and verdict.ok, verdict.summary()
    assert verdict.expanded.downstream and not verdict.expanded.integers_differ
    head = verdict.headline()
    assert "which changes 1 integer elements downstream (output 'label')" in head
    assert "past" not in head and "ulps" not in head  # no float output differs
    bounded = maxlower.verify(
        original, converted, expanded=expanded, inputs={"x": NEAR_TIE}, expanded_ulps=0
    )
    assert not bounded.ok and bounded.headline().startswith("NOT EQUIVALENT past --expanded-ulps 0")
    path, out = tmp_path / "m.onnx", tmp_path / "out.onnx"
    onnx.save(original, path)
    np.savez(tmp_path / "in.npz", x=NEAR_TIE)
    done = run_module(
        "convert", path, "--opset", "13", "--verify", "--inputs", tmp_path / "in.npz", "-o", out
    )
    assert done.returncode == 0 and out.exists(), done.stdout + done.stderr
    assert "which changes 1 integer elements downstream (output 'label')" in done.stdout


def test_the_headline_says_what_failed():
    integers = ExpandedRounding(
        ["X"],
        [
            {"name": "i", "mismatches": 2, "max_ulps": None, "special": 0},
            {"name": "f", "mismatches": 5, "max_ulps": 1, "special": 4},
        ],
    )
    head = integers.headline(strict=False)
    assert head.startswith("NOT EQUIVALENT: integer or boolean outputs differ")
    assert "not by rounding (output 'i')" in head and "past" not in head
    floats = ExpandedRounding(["X"], [integers.outputs[1]], max_ulps_bound=0)
    assert floats.headline(strict=False).startswith("NOT EQUIVALENT past --expanded-ulps 0")
    unbounded = ExpandedRounding(["X"], [integers.outputs[1]])
    assert unbounded.headline(strict=False).startswith("ROUNDING OF AN EXPANDED FUNCTION")
    assert "on 4 elements where NaN or ±inf differ" in unbounded.headline(strict=False)
