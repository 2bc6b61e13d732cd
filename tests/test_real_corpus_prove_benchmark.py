"""benchmarks/real_corpus_prove.py on a corpus of small models (the real corpus needs
torch): each conversion's proof is tabulated (sites, proved, methods, what stopped it), the
PROVED share is over the conversions that convert, and a refusal is listed apart."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests import benchmark_scripts
from tests.test_real_corpus_verify_benchmark import small_corpus

SCRIPT = benchmark_scripts.ROOT / "benchmarks" / "real_corpus_prove.py"
START, END = "<!-- real-corpus-prove:start -->", "<!-- real-corpus-prove:end -->"


def _module():
    spec = importlib.util.spec_from_file_location("real_corpus_prove", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_row_says_what_stopped_a_proof_and_a_refusal_why():
    module = _module()
    site = {"op_type": "HardSwish", "node": "hs", "method": "-", "status": "inconclusive",
            "reason": "op HardSwish is outside the prover's fragment"}  # fmt: skip
    proved = {"op_type": "Reshape", "node": "r", "method": "schema", "status": "proved"}
    record = {
        "input": "/c/m.onnx",
        "status": "inconclusive",
        "result": {"proof": {"status": "inconclusive", "seconds": 0.5, "sites": [proved, site]}},
    }
    row = module.row(record)
    assert (row["sites"], row["proved"], row["methods"]) == (2, 1, "schema 1")
    assert row["why"].startswith("HardSwish 'hs': op HardSwish is outside")
    refused = module.row(
        {"input": "/c/b.onnx", "status": "no exact form", "error": "node 'm' (Max): no"
         " bfloat16 form. To make it possible: opset 13", "result": None}
    )  # fmt: skip
    assert not refused["converted"] and refused["why"] == "node 'm' (Max): no bfloat16 form"
    lines = module.table(13, [row, refused], 3.0)
    assert "PROVED 0 of 1 (0.0%)" in lines[2] and "1 × node 'm' (Max)" in "\n".join(lines)


@pytest.mark.slow  # two batches with --prove in subprocesses
def test_a_small_corpus_tabulates_each_proof(tmp_path: Path):
    results = benchmark_scripts.seeded_results(tmp_path, START, END)
    corpus = small_corpus(tmp_path)
    # a Resize-18 as dynamo writes it, its defaults dropped at 13: proved by the schemas
    # since 797ebac (what stops a proof is tabulated: the test above)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4, 4])
    sizes = onnx.numpy_helper.from_array(np.array([1, 1, 4, 4], np.int64), "sizes")
    resize = helper.make_node(
        "Resize", ["x", "", "", "sizes"], ["y"], name="up", mode="linear", antialias=0,
        keep_aspect_ratio_policy="stretch", coordinate_transformation_mode="half_pixel",
    )  # fmt: skip
    graph = helper.make_graph([resize], "rs", [x], [y], [sizes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.save(model, corpus / "resize.dynamo.opset18.onnx")
    benchmark_scripts.run(
        SCRIPT, "--corpus", str(corpus), "--targets", "13", "--results", str(results),
        timeout=300,
    )  # fmt: skip
    section = benchmark_scripts.only_section(results, START, END)
    assert "PROVED 3 of 3 (100.0%)" in section, section
    rows = dict(re.findall(r"^\| (\S+\.onnx) \| (\w+) \|", section, re.M))
    assert rows == {"head.torchscript.opset18.onnx": "proved",
                    "bf16.torchscript.opset13.onnx": "proved",
                    "resize.dynamo.opset18.onnx": "proved"}, section  # fmt: skip
    # each pair proved again as a whole by `prove A B`, with what it assumed listed
    assert "`prove A B` (the source against what conversion wrote): **PROVED 3 of 3**" in section
    assert re.search(r"^- 1 × Resize-13 and Resize-18 compute the same", section, re.M), section
