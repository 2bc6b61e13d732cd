"""maxlower.sparse writes what the full path writes: onnx_ir is built only for the nodes
whose schema changes, and the result is the same model (nodes in order, initializers,
graph inputs and outputs, value types, opset imports, IR version) with the same rewrites,
or the same error."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import onnx
import pytest
from onnx import TensorProto, helper

from maxlower.family_nodes import in_graph_order
from maxlower.io import check_and_infer, check_result
from maxlower.pipeline import _family_node_order, load_proto, whole_graph
from maxlower.sparse import ANCHOR_DOMAIN, convert_sparse
from passes.version.to_opset import ConvertToOpsetPass
from tests.conformance import family_cases
from tests.example_models import EXAMPLE_MODELS
from tests.fixtures.catalog import fixtures
from tests.mutants import MUTANTS

ROOT = pathlib.Path(__file__).resolve().parents[1]
LATEST = onnx.defs.onnx_opset_version()


def _canonical(proto: onnx.ModelProto) -> dict:
    graph = proto.graph
    # onnx_ir writes value_info for initializers; inference at the source opset may know
    # more of a graph output than at the target (kept in value_info, outputs stay declared)
    skipped = {t.name for t in graph.initializer} | {v.name for v in graph.output}
    return {
        "nodes": [_without_explicit_defaults(n) for n in graph.node],
        "initializers": [t.SerializeToString(deterministic=True) for t in graph.initializer],
        "inputs": [v.SerializeToString(deterministic=True) for v in graph.input],
        "outputs": [v.SerializeToString(deterministic=True) for v in graph.output],
        "value_types": {
            v.name: v.type.SerializeToString(deterministic=True)
            for v in graph.value_info
            if v.name not in skipped
        },
        "opsets": {o.domain: o.version for o in proto.opset_import},
        "ir_version": proto.ir_version,
    }


def _without_explicit_defaults(node: onnx.NodeProto) -> bytes:
    """The node's bytes, with string fields set to "" treated as absent: the sparse path
    keeps an untouched node's bytes (`domain: ""` as the exporter wrote it), onnx_ir
    writes no default."""
    copy = onnx.NodeProto()
    copy.CopyFrom(node)
    for field in ("domain", "overload", "doc_string", "name"):
        if copy.HasField(field) and not getattr(copy, field):
            copy.ClearField(field)
    return copy.SerializeToString(deterministic=True)


def _outcome(convert) -> tuple | None:
    try:
        converted = convert()
    except Exception as error:  # ConversionError, InvalidModelError: the same on both paths
        return ("error", type(error).__name__, str(error))
    if converted is None:
        return None
    proto, rewrites = converted
    return ("ok", _canonical(proto), [(r.where, r.node, r.what) for r in rewrites])


def both_paths(path: pathlib.Path, target: int) -> tuple[tuple, tuple | None]:
    """(full path, sparse path) outcomes; the sparse one is None if it declined."""
    base_dir = str(path.parent)

    def full():  # what the pipeline does when the whole graph goes through onnx_ir
        model, declared = whole_graph(load_proto(path), base_dir)
        order = _family_node_order(model)
        result = ConvertToOpsetPass(target)(model)
        rewrites = in_graph_order(result.rewrites, order)
        return check_result(model, declared=declared).proto, rewrites

    def sparse():
        result = convert_sparse(load_proto(path), target, base_dir)
        if result is None:
            return None
        return check_and_infer(result.proto, base_dir), result.rewrites

    return _outcome(full), _outcome(sparse)


def _wide(tmp: pathlib.Path) -> list[pathlib.Path]:
    spec = importlib.util.spec_from_file_location("bench", ROOT / "benchmarks" / "bench.py")
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench
    try:
        spec.loader.exec_module(bench)
        paths = []
        for opset in (20, 13):
            paths.append(tmp / f"wide{opset}.onnx")
            onnx.save(bench.wide_model(40, opset), paths[-1])
        return paths
    finally:
        del sys.modules[spec.name]


def _cases(tmp: pathlib.Path) -> list[tuple[str, pathlib.Path, tuple[int, ...]]]:
    cases = [(f.name, f.path, (11, 13, 18, LATEST)) for f in fixtures()]
    for case in family_cases()[::2]:
        path = tmp / f"{case.name}.onnx"
        onnx.save(case.model, path)
        cases.append((case.name, path, (7, 13, 18)))
    for path in EXAMPLE_MODELS:  # never a glob: README commands write into examples/models/
        cases.append((path.name, path, (11, 13, 17, LATEST)))
    cases += [(p.name, p, (13, 17, 18)) for p in _wide(tmp)]
    return cases


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return _cases(tmp_path_factory.mktemp("sparse"))


@pytest.mark.slow  # a corpus of whole models both ways: the default tier's 3 minutes
def test_the_sparse_path_writes_what_the_full_path_writes(corpus):
    compared = declined = 0
    differences = []
    for name, path, targets in corpus:
        for target in targets:
            full, sparse = both_paths(path, target)
            if sparse is None:
                declined += 1
                continue
            compared += 1
            if sparse != full:
                if full[0] == sparse[0] == "ok":
                    keys = [k for k in full[1] if full[1][k] != sparse[1][k]]
                    differences.append((name, target, keys, full[2] == sparse[2]))
                else:
                    differences.append((name, target, full[:3], sparse[:3]))
    assert differences == []
    assert compared >= 150 and declined <= compared // 10  # most models take this path


def test_models_with_subgraphs_or_functions_are_declined_untouched(tmp_path):
    path = ROOT / "examples" / "models" / "nested_opset18.onnx"
    proto = load_proto(path)
    before = proto.SerializeToString(deterministic=True)
    assert convert_sparse(proto, 13, str(path.parent)) is None
    assert proto.SerializeToString(deterministic=True) == before


def test_only_changing_nodes_go_through_onnx_ir_and_no_anchor_is_left(tmp_path):
    """Abs and Max keep their schema between 18 and 13; ReduceMax and its Constant axes
    are the only nodes built in onnx_ir."""
    graph = helper.make_graph(
        [
            helper.make_node("Abs", ["x"], ["r"], "abs"),
            helper.make_node(
                "Constant",
                [],
                ["axes"],
                "axes",
                value=helper.make_tensor("a", TensorProto.INT64, [1], [1]),
            ),
            helper.make_node("ReduceMax", ["r", "axes"], ["m"], "reduce", keepdims=1),
            helper.make_node("Max", ["m", "x"], ["y"], "max"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )
    path = tmp_path / "small.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)
    result = convert_sparse(load_proto(path), 13, str(tmp_path))
    assert result is not None and result.changed_nodes == 2
    nodes = result.proto.graph.node
    assert [n.op_type for n in nodes] == ["Abs", "ReduceMax", "Max"]  # the Constant went
    assert not any(n.domain == ANCHOR_DOMAIN for n in nodes)
    assert [a.name for a in nodes[1].attribute] == ["keepdims", "axes"]
    assert {o.domain: o.version for o in result.proto.opset_import} == {"": 13}
    full, sparse = both_paths(path, 13)
    assert full == sparse


def test_nodes_a_type_only_step_keeps_stay_protobuf(tmp_path):
    """ReduceMax 20 → 18 only dropped bool: the float node is kept as it is without onnx_ir,
    the bool one is rewritten (through uint8), and the result is the full path's."""
    graph = helper.make_graph(
        [
            helper.make_node("ReduceMax", ["x"], ["m"], "float_reduce", keepdims=0),
            helper.make_node("ReduceMax", ["b"], ["c"], "bool_reduce", keepdims=0),
        ],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("b", TensorProto.BOOL, [2, 3]),
        ],
        [
            helper.make_tensor_value_info("m", TensorProto.FLOAT, []),
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
        ],
    )
    path = tmp_path / "mixed.onnx"
    original = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    onnx.save(original, path)
    result = convert_sparse(load_proto(path), 18, str(tmp_path))
    assert result is not None and result.changed_nodes == 1
    nodes = result.proto.graph.node
    assert nodes[0] == original.graph.node[0]
    assert [n.op_type for n in nodes[1:]] == ["Cast", "ReduceMax", "Cast"]
    assert [r.node for r in result.rewrites] == ["bool_reduce"]
    full, sparse = both_paths(path, 18)
    assert full == sparse


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_a_broken_adapter_breaks_both_paths_alike(mutant, tmp_path):
    """With one of the verifier's planted bugs installed (an adapter that changes a type or
    a value, tests/mutants.py), the sparse path still writes what the full path writes:
    the wrong output too, for --verify to catch."""
    path = tmp_path / "model.onnx"
    onnx.save(mutant.source_model(), path)
    with mutant.installed():
        full, sparse = both_paths(path, mutant.target)
    assert sparse == full


def _reduce_fan(opset: int, axes_per_node: list[list[int]]) -> onnx.ModelProto:
    """ReduceMax nodes (keepdims=1) side by side on x: float[2, 3, 4], each output a graph
    output; axes as attributes (below 18) or one initializer per node (18 and later)."""
    nodes, initializers, outputs = [], [], []
    for k, axes in enumerate(axes_per_node):
        inputs, attributes = ["x"], {"keepdims": 1}
        if opset >= 18:
            axes_tensor = helper.make_tensor(f"axes{k}", TensorProto.INT64, [len(axes)], axes)
            initializers.append(axes_tensor)
            inputs.append(f"axes{k}")
        else:
            attributes["axes"] = axes
        nodes.append(helper.make_node("ReduceMax", inputs, [f"r{k}"], f"reduce{k}", **attributes))
        shape = [1 if d in axes else size for d, size in enumerate([2, 3, 4])]
        outputs.append(helper.make_tensor_value_info(f"r{k}", TensorProto.FLOAT, shape))
    graph = helper.make_graph(
        nodes,
        "fan",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        outputs,
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_nodes_that_convert_alike_go_through_onnx_ir_once(tmp_path):
    """13 → 18: six ReduceMax nodes on x with two signatures (axes [1] and [2]): two go
    through onnx_ir, four copy their result (sharing their axes initializer), and the
    model is the full path's, rewrites included."""
    path = tmp_path / "fan13.onnx"
    onnx.save(_reduce_fan(13, [[1], [2]] * 3), path)
    result = convert_sparse(load_proto(path), 18, str(tmp_path))
    assert result is not None and result.changed_nodes == 2
    assert [r.node for r in result.rewrites] == [f"reduce{k}" for k in range(6)]
    assert [n.input[1] for n in result.proto.graph.node] == [
        "reduce0__const0",
        "reduce1__const1",
    ] * 3
    full, sparse = both_paths(path, 18)
    assert full == sparse


def test_alike_nodes_whose_conversion_drops_an_input_copy_it_and_drop_their_own(tmp_path):
    """18 → 13 moves the axes initializer into an attribute and drops it: the first node
    goes through onnx_ir, the others copy it and their own axes initializers go too, as
    in the full path."""
    path = tmp_path / "fan18.onnx"
    onnx.save(_reduce_fan(18, [[1], [1], [1]]), path)
    result = convert_sparse(load_proto(path), 13, str(tmp_path))
    assert result is not None and result.changed_nodes == 1
    assert not result.proto.graph.initializer
    full, sparse = both_paths(path, 13)
    assert full == sparse


def test_a_dropped_constant_that_another_node_reads_is_kept(tmp_path):
    """The copies stop reading their axes, but one axes initializer is also a graph
    output: it stays, the others go, as in the full path."""
    model = _reduce_fan(18, [[1], [1], [1]])
    model.graph.output.append(helper.make_tensor_value_info("axes2", TensorProto.INT64, [1]))
    path = tmp_path / "fan18.onnx"
    onnx.save(model, path)
    result = convert_sparse(load_proto(path), 13, str(tmp_path))
    assert result is not None
    assert [t.name for t in result.proto.graph.initializer] == ["axes2"]
    full, sparse = both_paths(path, 13)
    assert full == sparse


def test_rewrites_of_copies_and_of_replaced_nodes_keep_graph_order(tmp_path):
    """Found by the fuzz suite: the Max is replaced (by an Identity) and the two ReduceMax
    nodes convert alike (the second copies the first); the rewrites were merged after the
    Max's NodeProto had been overwritten, so its rewrite went last."""
    model = onnx.parser.parse_model("""<ir_version: 8, opset_import: ["" : 18]>
        fuzz (int32 x0) => (int32 v2, int32 v3) {
            [max_v1] v1 = Max (x0)
            [reducemax_v2] v2 = ReduceMax <keepdims = 0, noop_with_empty_axes = 0> (v1)
            [reducemax_v3] v3 = ReduceMax <keepdims = 0, noop_with_empty_axes = 0> (v1)
        }""")
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    result = convert_sparse(load_proto(path), 1, str(tmp_path))
    assert result is not None and result.changed_nodes == 2  # the second ReduceMax copied
    assert [r.node for r in result.rewrites] == ["max_v1", "reducemax_v2", "reducemax_v3"]
    full, sparse = both_paths(path, 1)
    assert full == sparse


@pytest.mark.slow  # a corpus of whole models both ways: the default tier's 3 minutes
def test_a_conversion_that_changes_no_node_is_valid_without_a_second_check(corpus):
    """maxlower.pipeline skips the result's full check when the sparse path sent no node
    through onnx_ir (only the opset import and IR version change): every such result must
    pass onnx.checker's full check all the same."""
    unchanged = 0
    for _name, path, targets in corpus:
        for target in [*targets, 20, 19]:
            try:
                result = convert_sparse(load_proto(path), target, str(path.parent))
            except Exception:  # refusals: other tests
                continue
            if result is None or result.changed_nodes:
                continue
            unchanged += 1
            check_and_infer(result.proto, str(path.parent))  # raises if invalid
            onnx.checker.check_model(result.proto, full_check=True)
    assert unchanged >= 20, unchanged


def test_a_group_that_cannot_be_copied_goes_node_by_node_and_the_others_are_copied(tmp_path):
    """11 → 13: Softmax over axis 1 of float[2, 3, 4] becomes several nodes (Flatten,
    Softmax, Reshape): its result cannot be copied, so the three Softmax nodes go through
    onnx_ir one by one, while the three Relu nodes (relabelled) still copy the first one's;
    the model is the full path's, rewrites included."""
    model = onnx.parser.parse_model("""<ir_version: 8, opset_import: ["" : 11]>
        mixed (float[2, 3, 4] x) => (float[2, 3, 4] s0, float[2, 3, 4] s1, float[2, 3, 4] s2,
                                     float[2, 3, 4] r0, float[2, 3, 4] r1, float[2, 3, 4] r2) {
            [softmax0] s0 = Softmax <axis = 1> (x)
            [relu0] r0 = Relu (x)
            [softmax1] s1 = Softmax <axis = 1> (x)
            [relu1] r1 = Relu (x)
            [softmax2] s2 = Softmax <axis = 1> (x)
            [relu2] r2 = Relu (x)
        }""")
    path = tmp_path / "mixed.onnx"
    onnx.save(model, path)
    result = convert_sparse(load_proto(path), 13, str(tmp_path))
    assert result is not None and result.changed_nodes == 4  # three Softmax, the first Relu
    assert [n.op_type for n in result.proto.graph.node].count("Softmax") == 3
    assert len(result.proto.graph.node) > 6  # each Softmax became several nodes
    full, sparse = both_paths(path, 13)
    assert full == sparse
