"""benchmarks/real_speed.py on a corpus of one small model (the real corpus needs torch):
it times both converters, writes its section and keeps the others."""

from __future__ import annotations

import re
from pathlib import Path

import onnx
from onnx import TensorProto, helper

from tests import benchmark_scripts

SCRIPT = benchmark_scripts.ROOT / "benchmarks" / "real_speed.py"
START, END = "<!-- real-speed:start -->", "<!-- real-speed:end -->"


def tiny_corpus(directory: Path) -> Path:
    """Relu and Add at opset 11 (both converters convert it to 13 and 17) and at opset 14
    (onnx's converter has no downward adapter for either: only 14 → 17 counts)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "x"], ["y"])]
    graph = helper.make_graph(nodes, "tiny", [x], [y])
    corpus = directory / "corpus"
    corpus.mkdir()
    for name, opset in (("up", 11), ("down", 14)):
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 8
        onnx.save(model, corpus / f"{name}.torchscript.opset{opset}.onnx")
    return corpus


def test_a_one_model_corpus_writes_its_section(tmp_path: Path):
    results = benchmark_scripts.seeded_results(tmp_path, START, END)
    corpus = tiny_corpus(tmp_path)
    benchmark_scripts.run(
        SCRIPT,
        *("--corpus", str(corpus), "--repeats", "1", "--cli-repeats", "1"),
        *("--results", str(results)),
        timeout=300,
    )
    section = benchmark_scripts.only_section(results, START, END)
    assert "5 (model, target) pairs, of which 3 both converters convert" in section
    assert re.search(r"Library .* median ratio \*\*[\d.]+x\*\*", section)
    assert re.search(r"Command line .* 2 pairs\): median ratio \*\*[\d.]+x\*\*", section)
    rows = re.findall(r"^\| (\w+)\.torchscript\.opset\d+\.onnx \| (\d+) → (\d+) \|", section, re.M)
    # in process: 11 → 13, 11 → 17, 14 → 17; command line: one of each; apart: 14 → 11, 13
    in_process = [("up", "11", "13"), ("up", "11", "17"), ("down", "14", "17")]
    command_line = [("up", "11", "13"), ("down", "14", "17")]
    apart = [("down", "14", "11"), ("down", "14", "13")]
    assert sorted(rows) == sorted([*in_process, *command_line, *apart])
    assert "only maxlower converts: 2" in section
