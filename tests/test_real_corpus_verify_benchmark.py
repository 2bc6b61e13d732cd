"""benchmarks/real_corpus_verify.py on a corpus of small models (the real corpus needs
torch): every verified conversion's trials are tabulated, the share run wholly in
onnxruntime is counted, and a refusal is listed apart, not as a problem."""

from __future__ import annotations

import re
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from tests import benchmark_scripts

SCRIPT = benchmark_scripts.ROOT / "benchmarks" / "real_corpus_verify.py"
START, END = "<!-- real-corpus-verify:start -->", "<!-- real-corpus-verify:end -->"


def small_corpus(directory: Path) -> Path:
    """A ReduceMax head at opset 18 (converts to 13), and a bfloat16 Max at 13 (refused at
    11: no exact form)."""
    corpus = directory / "corpus"
    corpus.mkdir()
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    reduce = helper.make_node("ReduceMax", ["x", "axes"], ["y"], keepdims=0)
    graph = helper.make_graph([reduce], "head", [x], [y], initializer=[axes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.save(model, corpus / "head.torchscript.opset18.onnx")
    b = helper.make_tensor_value_info("b", TensorProto.BFLOAT16, [3])
    c = helper.make_tensor_value_info("c", TensorProto.BFLOAT16, [3])
    graph = helper.make_graph([helper.make_node("Max", ["b", "b"], ["c"])], "bf", [b], [c])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, corpus / "bf16.torchscript.opset13.onnx")
    return corpus


@pytest.mark.slow  # two batches with --verify in subprocesses
def test_a_small_corpus_tabulates_each_verification_s_trials(tmp_path: Path):
    results = benchmark_scripts.seeded_results(tmp_path, START, END)
    corpus = small_corpus(tmp_path)
    benchmark_scripts.run(
        SCRIPT,
        *("--corpus", str(corpus), "--targets", "13", "11", "--results", str(results)),
        timeout=300,
    )
    section = benchmark_scripts.only_section(results, START, END)
    assert "No conversion DIFFERENT or crashed." in section
    rows = re.findall(r"^\| (\S+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|", section, re.M)
    verified = {(name, target): counts for name, target, *counts in rows}
    assert set(verified) == {("head.torchscript.opset18.onnx", "13"),
                             ("head.torchscript.opset18.onnx", "11"),
                             ("bf16.torchscript.opset13.onnx", "13")}  # fmt: skip
    for trials, onnxruntime, reference, skipped in verified.values():  # not accepted: apart
        assert int(trials) == int(onnxruntime) + int(reference) + int(skipped) > 0
    head = verified[("head.torchscript.opset18.onnx", "13")]
    assert head[1] == head[0]  # every trial of a float ReduceMax head runs in onnxruntime
    assert re.search(r"every trial run in onnxruntime .*: \d of 3 verified conversions", section)
    assert "no exact form" in section  # the bfloat16 Max at 11: a refusal, listed


def test_trials_counts_each_runtime_and_the_first_skip():
    import importlib.util

    spec = importlib.util.spec_from_file_location("real_corpus_verify", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def trial(status, reference, candidate, note=None):
        return {"status": status, "reference_runner": reference, "candidate_runner": candidate,
                "note": note}  # fmt: skip

    runs = [
        trial("equal", "onnxruntime", "onnxruntime"),
        trial("equal", "onnx.reference", "onnx.reference"),
        trial("skipped", None, None, "the reference model does not run on it: indices 9"),
        trial("skipped", None, None, "the reference model does not run on it: other"),
        trial("not accepted", "onnx.reference", None, "the model does not accept n=0"),
    ]
    record = {"result": {"verification": {"trials": runs}}}
    assert module.trials(record) == (4, 1, 1, 2, 1, "indices 9")
    assert module.trials({"result": None}) is None
    assert module.trials({"result": {"verification": None}}) is None
