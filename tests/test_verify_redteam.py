"""Red-team regressions for the verifier: planted wrong conversions it must call DIFFERENT,
and hostile runs it must survive. Each test names the class whose rule it pins down."""

from __future__ import annotations

import os
import signal

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, numpy_helper
from onnx import helper as oh

import maxlower
from maxlower.cli import cli


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def model(nodes, inputs, outputs, initializers=(), opset=18) -> onnx.ModelProto:
    graph = oh.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)], ir_version=8)


def tensor(name, array) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(array), name)


def info(name, elem, shape):
    return oh.make_tensor_value_info(name, elem, shape)


def both_doors(tmp_path, reference, candidate, *flags):
    """maxlower.verify's status, and `maxlower verify`'s exit code and output."""
    status = maxlower.verify(reference, candidate).status
    paths = tmp_path / "ref.onnx", tmp_path / "cand.onnx"
    onnx.save(reference, paths[0])
    onnx.save(candidate, paths[1])
    result = invoke("verify", *paths, *flags)
    return status, result.exit_code, result.output


# -- accepts: derived inputs must cover every value the model accepts ---------------------
def onehot_pair():
    """OneHot gives a row of off values for an index outside [-depth, depth-1]; the planted
    candidate clips the indices first, which differs only there."""
    inits = [
        tensor("depth", np.array(5, np.int64)),
        tensor("vals", np.array([0, 1], np.float32)),
        tensor("lo", np.array(-5, np.int64)),
        tensor("hi", np.array(4, np.int64)),
    ]
    i, y = info("i", TensorProto.INT64, [4]), info("y", TensorProto.FLOAT, [4, 5])
    reference = model([oh.make_node("OneHot", ["i", "depth", "vals"], ["y"])], [i], [y], inits)
    candidate = model(
        [
            oh.make_node("Clip", ["i", "lo", "hi"], ["ic"]),
            oh.make_node("OneHot", ["ic", "depth", "vals"], ["y"]),
        ],
        [i],
        [y],
        inits,
    )
    return reference, candidate


def equal_pair():
    """y = x where sr == 16000, else x * k: the planted candidate changes k, which only a
    trial with sr != 16000 sees."""

    def build(k):
        nodes = [
            oh.make_node("Equal", ["sr", "c"], ["e"]),
            oh.make_node("Mul", ["x", "k"], ["xk"]),
            oh.make_node("Where", ["e", "x", "xk"], ["y"]),
        ]
        inits = [tensor("c", np.array(16000, np.int64)), tensor("k", np.array(k, np.float32))]
        inputs = [info("sr", TensorProto.INT64, []), info("x", TensorProto.FLOAT, [3])]
        return model(nodes, inputs, [info("y", TensorProto.FLOAT, [3])], inits)

    return build(2.0), build(3.0)


def branch_gather_pair():
    """A Gather in the then branch bounds `i`; the else branch takes `i` as data, and the
    planted candidate clips it there, which differs only for i outside [-4, 3]."""

    def build(else_nodes, else_inits=()):
        out = info("t", TensorProto.INT64, [3])
        then = oh.make_graph([oh.make_node("Gather", ["table", "i"], ["t"])], "then", [], [out])
        other = oh.make_graph(
            else_nodes, "else", [], [info("e", TensorProto.INT64, [3])], list(else_inits)
        )
        node = oh.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)
        inputs = [info("c", TensorProto.BOOL, []), info("i", TensorProto.INT64, [3])]
        table = tensor("table", np.arange(4, dtype=np.int64))
        return model([node], inputs, [info("y", TensorProto.INT64, [3])], [table])

    reference = build([oh.make_node("Max", ["i", "i"], ["e"])])
    clip = oh.make_node("Clip", ["i", "lo", "hi"], ["e"])
    bounds = [tensor("lo", np.array(-4, np.int64)), tensor("hi", np.array(3, np.int64))]
    return reference, build([clip], bounds)


@pytest.mark.parametrize(
    "pair",
    [onehot_pair, equal_pair, branch_gather_pair],
    ids=["onehot-out-of-depth", "equal-else-branch", "gather-in-untaken-branch"],
)
def test_accepts_derived_inputs_do_not_hide_a_planted_difference(tmp_path, pair):
    reference, candidate = pair()
    onnx.checker.check_model(candidate, full_check=True)
    status, code, output = both_doors(tmp_path, reference, candidate)
    assert status == "different"
    assert code == 1 and "DIFFERENT" in output
    assert maxlower.verify(reference, reference).ok  # and the reference agrees with itself


# -- input sizes: a -1 or unnamed dim counts against the 1 GiB bound like a named one -----
def unnamed_dim_model(reshaped_to=None) -> onnx.ModelProto:
    """ReduceMax of x[?, 64]; with `reshaped_to`, first a Reshape to that element count
    (from which accepts derives the unnamed dim's size)."""
    x = info("x", TensorProto.FLOAT, [None, 64])
    if reshaped_to is None:
        nodes, inits = [oh.make_node("ReduceMax", ["x"], ["y"])], []
    else:
        nodes = [
            oh.make_node("Reshape", ["x", "s"], ["r"]),
            oh.make_node("ReduceMax", ["r"], ["y"]),
        ]
        inits = [tensor("s", np.array([reshaped_to], np.int64))]
    return model(
        nodes, [x], [info("y", TensorProto.FLOAT, [1] * (2 if reshaped_to is None else 1))], inits
    )


def test_input_shapes_of_an_unnamed_dim_are_bounded(tmp_path):
    proto = unnamed_dim_model()
    with pytest.raises(maxlower.InvalidModelError, match="1 GiB"):
        maxlower.verify(proto, proto, input_shapes={"x": (10**12, 64)})
    path = tmp_path / "m.onnx"
    onnx.save(proto, path)
    result = invoke("verify", path, path, "--input-shapes", f"x:{10**12},64")
    assert result.exit_code == 2 and "1 GiB" in result.output
    assert "Traceback" not in result.output and "MemoryError" not in result.output


def test_sizes_derived_from_a_reshape_are_bounded():
    """A Reshape to 2^24 * 64 elements pins x[0] at 2^24: 4 GiB per trial, so the derived
    size is dropped (with a note), never allocated."""
    proto = unnamed_dim_model(reshaped_to=2**24 * 64)
    report = maxlower.verify(proto, proto, trials=1)
    assert any("sizes derived from the model not used" in n for n in report.notes)


# -- runners: a candidate onnxruntime refuses because it is invalid ONNX is no pass -------
def invalid_max_pair():
    """Max-8 against a Max-7 carrying `broadcast` (onnx.version_converter's 8 -> 7 output):
    onnxruntime and onnx.checker refuse the candidate; onnx.reference ignores the attribute
    and would run both models alike."""
    inputs = [info(n, TensorProto.FLOAT, [3]) for n in "ab"]
    out = [info("z", TensorProto.FLOAT, [3])]
    reference = model([oh.make_node("Max", ["a", "b"], ["z"])], inputs, out, opset=8)
    bad = oh.make_node("Max", ["a", "b"], ["z"], broadcast=1)
    return reference, model([bad], inputs, out, opset=7)


def test_an_invalid_candidate_that_only_onnx_reference_runs_is_not_equivalent(tmp_path):
    reference, candidate = invalid_max_pair()
    report = maxlower.verify(reference, candidate)
    assert report.status == "different" and not report.ok
    assert any("not valid ONNX" in n for n in report.notes)
    assert "identical" not in report.summary()  # nothing was compared: never "identical"
    _, code, output = both_doors(tmp_path, reference, candidate)
    assert code in (1, 2) and "EQUIVALENT" not in output, output


# -- isolation: a child killed from outside (the OOM killer) is no difference -------------
def test_a_candidate_killed_by_sigkill_is_skipped_not_different(monkeypatch):
    """The candidate's onnxruntime process dies of SIGKILL on its first run (as the OOM
    killer would end it): that says nothing about its values, so the trial is skipped and
    the verdict is NOT VERIFIED, never DIFFERENT ('a difference was found')."""
    import maxlower.runtime

    make = maxlower.runtime.onnxruntime_session

    class DiesOnRun:  # what the forked child runs in place of onnxruntime's session
        def __init__(self, model):
            self.session = make(model)
            self.dies = onnx.load_from_string(model).graph.name == "killed"

        def run(self, names, feeds):
            if self.dies:
                os.kill(os.getpid(), signal.SIGKILL)
            return self.session.run(names, feeds)

    monkeypatch.setattr(maxlower.runtime, "onnxruntime_session", DiesOnRun)
    reference = model(
        [oh.make_node("Max", ["a", "b"], ["z"])],
        [info(n, TensorProto.FLOAT, [3]) for n in "ab"],
        [info("z", TensorProto.FLOAT, [3])],
    )
    candidate = onnx.ModelProto()
    candidate.CopyFrom(reference)
    candidate.graph.name = "killed"
    report = maxlower.verify(reference, candidate, trials=2)
    assert report.status == "inconclusive", report.summary()
    assert any("SIGKILL" in n for n in report.notes)


# -- statuses: an integer difference the conversion made is never "downstream of rounding"
def test_a_planted_argmax_change_behind_an_expanded_layer_norm_is_different():
    """LayerNormalization-17 -> ArgMax, converted to 13 (the LayerNormalization expanded);
    the planted candidate sets select_last_index=1. It differs from the original with the
    same op expanded, so it is DIFFERENT, not a rounding of an expanded function."""
    x, y = info("x", TensorProto.FLOAT, ["n", 4]), info("y", TensorProto.INT64, ["n", 1])
    nodes = [
        oh.make_node("LayerNormalization", ["x", "s", "b"], ["l"], axis=-1),
        oh.make_node("ArgMax", ["l"], ["y"], axis=1),
    ]
    inits = [tensor("s", np.ones(4, np.float32)), tensor("b", np.zeros(4, np.float32))]
    reference = model(nodes, [x], [y], inits, opset=17)
    converted, conversion = maxlower.convert_with_report(reference, 13)
    expanded = conversion.expanded_ops()
    assert "LayerNormalization" in expanded
    assert maxlower.verify(reference, converted, expanded=expanded).ok
    candidate = onnx.ModelProto()
    candidate.CopyFrom(converted)
    arg = next(n for n in candidate.graph.node if n.op_type == "ArgMax")
    arg.attribute.append(oh.make_attribute("select_last_index", 1))
    report = maxlower.verify(reference, candidate, expanded=expanded)
    assert report.status == "different" and not report.ok
