"""Scale traps: the checks and passes stay linear in the model's size. No timings here: each
test counts the work (calls, elements visited) of a step whose quadratic form is known, at
a size where the quadratic count would be far above the bound. Times before and after are
in benchmarks/RESULTS.md (`python benchmarks/scale.py`).
"""

from __future__ import annotations

import onnx
import onnx_ir as ir
import pytest
from onnx import TensorProto, helper

import maxlower
from benchmarks.scale import function_dag, invalid_chain, shared_input
from maxlower import safety


def test_the_refusal_of_an_invalid_chain_builds_the_visible_names_once(monkeypatch):
    """describe_invalid built the set of visible names once per node: O(n²) (77 s at 40,000
    nodes). It must pass one set, built once, to every node."""
    seen = []
    used_names = safety._used_names

    def counting(node, visible, free_names):
        seen.append(visible)  # kept alive, so that no id is reused
        return used_names(node, visible, free_names)

    monkeypatch.setattr(safety, "_used_names", counting)
    message = safety.describe_invalid(invalid_chain(3000), ValueError("checker"))
    assert "input 'nothing' of node 'n2999'" in message
    assert len(seen) == 3000 and len({id(names) for names in seen}) == 1


def nested_ifs(depth: int) -> onnx.ModelProto:
    """An If whose then-branch holds an If whose then-branch ..., `depth` deep, the
    innermost reading the outer 'x'."""
    out = helper.make_tensor_value_info("r", TensorProto.FLOAT, [2])
    leaf = helper.make_graph([helper.make_node("Max", ["x", "x"], ["r"])], "b", [], [out])
    body = leaf
    for level in range(depth):
        node = helper.make_node(
            "If", ["c"], ["r"], then_branch=body, else_branch=leaf, name=f"if{level}"
        )
        body = helper.make_graph([node], f"b{level}", [], [out])
    graph = helper.make_graph(
        list(body.node),
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
        ],
        [out],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def test_nested_bodies_are_walked_once(monkeypatch):
    """Each level asked for the outer names of everything below it: O(depth²) walks."""
    calls = []
    free_names = safety._free_names

    def counting(graph, known):
        calls.append(id(graph))
        return free_names(graph, known)

    monkeypatch.setattr(safety, "_free_names", counting)
    depth = 20  # (protobuf parses at most ~30 levels of nested messages)
    safety.describe_invalid(nested_ifs(depth), ValueError("checker"))
    # 2 * depth bodies, each walked once; then each answer comes from `known` when the
    # level below asks again (the old way walked depth²/2 bodies).
    assert len(set(calls)) == 2 * depth
    assert len(calls) <= 3 * 2 * depth


@pytest.fixture
def uses_elements(monkeypatch) -> list[int]:
    """The size of every answer of onnx_ir's Value.uses(), which copies all uses."""
    sizes: list[int] = []
    uses = ir.Value.uses

    def counting(self):
        found = uses(self)
        sizes.append(len(found))
        return found

    monkeypatch.setattr(ir.Value, "uses", counting)
    return sizes


def test_lowering_nodes_that_share_an_input_reads_each_use_a_bounded_number_of_times(
    uses_elements,
):
    """Lowering asked x for all its uses once per lowered node: n²/2 elements (62 s at
    40,000 nodes). Now each lowered node costs a bounded number."""
    n = 400
    lowered = maxlower.lower(shared_input(n), "no-argmax")
    assert not any(node.op_type == "ArgMax" for node in lowered.graph.node)
    assert sum(uses_elements) < 20 * n  # quadratic: > n * n / 2 = 80,000


def test_converting_nodes_that_share_an_input_reads_each_use_a_bounded_number_of_times(
    uses_elements,
):
    """The version adapters drop a node's orphaned inputs the same way (ReduceMax 18 → 13,
    every node reading one x and one axes initializer)."""
    n = 400
    model = shared_input(n, "ReduceMax")
    converted = maxlower.convert(ir.serde.deserialize_model(model), 13)
    assert sum(uses_elements) < 20 * n
    assert all(node.op_type != "ReduceMax" or len(node.inputs) == 1 for node in converted.graph)


def test_function_expansion_is_counted_once_per_function(monkeypatch):
    """The budget of expanded function calls is computed in one pass over each function,
    not by expanding (2^60 here)."""
    walked = []
    all_nodes = safety._all_nodes

    def counting(nodes):
        walked.append(1)
        return all_nodes(nodes)

    monkeypatch.setattr(safety, "_all_nodes", counting)
    model = function_dag(60)
    with pytest.raises(maxlower.InvalidModelError, match="over maxlower's budget"):
        safety.check_function_calls(model, "m.onnx")
    assert len(walked) <= 3 * len(model.functions) + 1
