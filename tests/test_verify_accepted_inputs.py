"""Inputs the model accepts, derived from the model (maxlower.verify.accepts): trials that
run without flags. One test (or family) per class of model the verifier used to skip or
refuse, through the command line and through the library."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, numpy_helper
from onnx import helper as oh

import maxlower
from maxlower.cli import cli
from maxlower.verify.inputs import InputSpec, generate_trials, values

OPSET = [oh.make_opsetid("", 18)]


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def model(nodes, inputs, outputs, initializers=()) -> onnx.ModelProto:
    graph = oh.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return oh.make_model(graph, opset_imports=OPSET, ir_version=8)


def tensor(name, array) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(array), name)


def reduce_max(data, out, axis, keepdims=0, name="rmax"):
    """A ReduceMax-18 with constant axes (so that convert --opset 13 rewrites it)."""
    return oh.make_node("ReduceMax", [data, f"{name}_axes"], [out], keepdims=keepdims, name=name)


def axes(axis, name="rmax"):
    return tensor(f"{name}_axes", np.array([axis], np.int64))


def counts(report: dict) -> tuple[int, int]:
    """(trials both models ran in onnxruntime, trials skipped) of a report's dict."""
    ran = sum(
        t["reference_runner"] == "onnxruntime" and t["candidate_runner"] == "onnxruntime"
        for t in report["trials"]
        if t["status"] != "skipped"
    )
    return ran, sum(t["status"] == "skipped" for t in report["trials"])


def convert_verify(tmp_path: pathlib.Path, proto: onnx.ModelProto, *flags):
    """`maxlower convert M --opset 13 --verify FLAGS`: the result and the verification's
    report as a dict."""
    source = tmp_path / "m.onnx"
    onnx.save(proto, source)
    report = tmp_path / "r.json"
    result = invoke(
        "convert", source, "--opset", 13, "--verify", "-o", tmp_path / "out.onnx",
        "--json", report, *flags,
    )  # fmt: skip
    document = json.loads(report.read_text()) if report.exists() else {}
    return result, document.get("verification")


def library_verify(proto: onnx.ModelProto, **options):
    report = maxlower.verify(proto, maxlower.convert(proto, 13), **options)
    return report, report.to_dict()


# -- free dims: -1 and unnamed dims -------------------------------------------------------
def paddle_model() -> onnx.ModelProto:
    """An input whose first dim paddle2onnx declared as -1."""
    x = oh.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4])
    x.type.tensor_type.shape.dim[0].dim_value = -1
    y = oh.make_tensor_value_info("y", TensorProto.FLOAT, ["b", 3])
    return model([reduce_max("x", "y", 2)], [x], [y], [axes(2)])


def test_free_dims_minus_one_is_generated_named_and_given(tmp_path):
    result, report = convert_verify(tmp_path, paddle_model())
    assert result.exit_code == 0, result.output
    ran, skipped = counts(report)
    assert skipped == 0 and ran == len(report["trials"]) >= 8
    result, report = convert_verify(tmp_path, paddle_model(), "--dim", "x[0]=2")
    assert result.exit_code == 0, result.output
    assert all("x[0]=2" in t["label"] for t in report["trials"])
    np.savez(tmp_path / "in.npz", x=np.ones((5, 3, 4), np.float32))
    result, report = convert_verify(tmp_path, paddle_model(), "--inputs", tmp_path / "in.npz")
    assert result.exit_code == 0, result.output
    assert counts(report) == (1, 0)


def test_free_dims_minus_one_through_the_library():
    report, data = library_verify(paddle_model(), dims={"x[0]": 4})
    assert report.ok and counts(data) == (len(data["trials"]), 0)
    report, data = library_verify(paddle_model())
    assert report.ok and counts(data)[1] == 0


# -- 0-d values are arrays, of every dtype -----------------------------------------------
DTYPES = [
    np.dtype(onnx.helper.tensor_dtype_to_np_dtype(t))
    for t in (
        TensorProto.BOOL, TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16,
        TensorProto.UINT16, TensorProto.INT32, TensorProto.UINT32, TensorProto.INT64,
        TensorProto.UINT64, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.FLOAT,
        TensorProto.DOUBLE,
    )
]  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("kind", ["ties", "specials", "random", "pow2"])
@pytest.mark.parametrize("shape", [(), (1,), (0,), (2, 3)])
def test_zero_d_values_every_generated_value_is_an_ndarray(dtype, kind, shape):
    value = values(dtype, shape, kind, np.random.default_rng(0))
    assert type(value) is np.ndarray and value.shape == shape and value.dtype == dtype


def test_zero_d_values_in_every_trial_are_arrays():
    specs = [InputSpec(f"i{n}", dtype, ()) for n, dtype in enumerate(DTYPES)]
    for trial in generate_trials(specs, seed=0, trials=None):
        assert all(type(v) is np.ndarray and v.ndim == 0 for v in trial.feeds.values())


def bool0d_model() -> onnx.ModelProto:
    flag = oh.make_tensor_value_info("flag", TensorProto.BOOL, [])
    a = oh.make_tensor_value_info("a", TensorProto.FLOAT, ["n"])
    b = oh.make_tensor_value_info("b", TensorProto.FLOAT, ["n"])
    y = oh.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    nodes = [oh.make_node("Where", ["flag", "a", "b"], ["w"]), reduce_max("w", "y", 0, 1)]
    return model(nodes, [flag, a, b], [y], [axes(0)])


def test_zero_d_values_a_0d_bool_input_runs_in_onnxruntime(tmp_path):
    result, report = convert_verify(tmp_path, bool0d_model())
    assert result.exit_code == 0, result.output
    assert "onnx.reference" not in result.output
    assert counts(report) == (len(report["trials"]), 0)
    _, data = library_verify(bool0d_model())
    assert counts(data) == (len(data["trials"]), 0)


# -- index ranges from what the indices address ----------------------------------------------
def embedding_model(*, through=(), consumers=(("Gather", 100),)) -> onnx.ModelProto:
    """input_ids -> (ops in `through`) -> Gather(table of `rows`, ids) per consumer."""
    ids = oh.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])
    nodes, inits, current = [], [axes(-1)], "input_ids"
    for n, op in enumerate(through):
        attrs = {"to": TensorProto.INT32} if op == "Cast" else {}
        extra = []
        if op in ("Unsqueeze", "Squeeze"):
            inits.append(tensor(f"a{n}", np.array([0], np.int64)))
            extra = [f"a{n}"]
        nodes.append(oh.make_node(op, [current, *extra], [f"t{n}"], **attrs))
        current = f"t{n}"
    outputs = []
    for k, (op, rows) in enumerate(consumers):
        inits.append(tensor(f"table{k}", np.random.default_rng(k).random((rows, 8), np.float32)))
        nodes.append(oh.make_node(op, [f"table{k}", current], [f"e{k}"], name=f"embed{k}"))
        nodes.append(reduce_max(f"e{k}", f"y{k}", -1, name="rmax"))
        nodes[-1].output[0] = f"y{k}"
        outputs.append(oh.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, ["batch", "seq"]))
    return model(nodes, [ids], outputs, inits)


def test_index_ranges_token_ids_run_every_trial(tmp_path):
    result, report = convert_verify(tmp_path, embedding_model())
    assert result.exit_code == 0, result.output
    assert counts(report) == (len(report["trials"]), 0) and len(report["trials"]) >= 9
    report, data = library_verify(embedding_model())
    assert report.ok and counts(data) == (len(data["trials"]), 0)


def trials_of(proto: onnx.ModelProto, **options):
    """The trials the verifier would run on `proto`, with what it derives from it."""
    from maxlower.serde import deserialize
    from maxlower.verify.accepts import accepts
    from maxlower.verify.inputs import input_specs

    specs = input_specs(proto)
    accepted = accepts(deserialize(proto), (d for s in specs for d in s.dims if isinstance(d, str)))
    return list(generate_trials(specs, seed=0, trials=None, accepted=accepted, **options))


@pytest.mark.parametrize(
    ("through", "consumers", "low", "high"),
    [
        ((), (("Gather", 100),), -100, 99),
        (("Cast", "Unsqueeze", "Squeeze", "Identity"), (("Gather", 100),), -100, 99),
        ((), (("Gather", 100), ("Gather", 7)), -7, 6),  # several consumers: the intersection
    ],
)
def test_index_ranges_extremes_are_the_ranges_edges(through, consumers, low, high):
    seen = np.concatenate([t.feeds["input_ids"].reshape(-1) for t in trials_of(
        embedding_model(through=through, consumers=consumers))])  # fmt: skip
    assert seen.min() == low and seen.max() == high


@pytest.mark.parametrize(
    ("text", "name", "low", "high"),
    [
        ("(float[N, 5] x, int64[N, 2] i) => (float[N, 2] y) "
         "{ y = GatherElements <axis = 1> (x, i) }", "i", -5, 4),
        ("(int64[N, 2] i) => (float[N] y) { t = Constant <value = float[3, 4] {0,1,2,3,4,5,6,7,"
         "8,9,10,11}> ()\n  y = GatherND(t, i) }", "i", -3, 2),
        ("(float[4, 3] x, int64[N, 1] i, float[N, 3] u) => (float[4, 3] y) "
         "{ y = ScatterND(x, i, u) }", "i", -4, 3),
    ],
)  # fmt: skip
def test_index_ranges_from_the_table_of_ops(text, name, low, high):
    proto = onnx.parser.parse_model(f'<ir_version: 8, opset_import: ["" : 18]>\nm {text}')
    trials = trials_of(proto)
    seen = np.concatenate([t.feeds[name].reshape(-1) for t in trials])
    assert seen.min() == low and seen.max() == high
    report = maxlower.verify(proto, proto)
    assert report.ok and counts(report.to_dict())[1] == 0


# -- shapes the graph accepts --------------------------------------------------------------
def shapes_model(kind: str) -> onnx.ModelProto:
    f = TensorProto.FLOAT
    if kind in ("broadcast", "unnamed"):
        dims = (["n"], ["m"]) if kind == "broadcast" else ([None], [None])
        a, b = (oh.make_tensor_value_info(n, f, d) for n, d in zip("ab", dims))
        nodes = [oh.make_node("Add", ["a", "b"], ["s"]), reduce_max("s", "y", 0, 1)]
        return model(nodes, [a, b], [oh.make_tensor_value_info("y", f, [1])], [axes(0)])
    a = oh.make_tensor_value_info("a", f, ["n"])
    shape = tensor("shape", np.array([2, 3] if kind == "reshape" else [3, 4], np.int64))
    op = "Reshape" if kind == "reshape" else "Expand"
    nodes = [oh.make_node(op, ["a", "shape"], ["r"]), reduce_max("r", "y", 1)]
    out = oh.make_tensor_value_info("y", f, [2] if kind == "reshape" else [3])
    return model(nodes, [a], [out], [shape, axes(1)])


@pytest.mark.parametrize("kind", ["broadcast", "unnamed", "reshape", "expand"])
def test_shapes_sizes_the_graph_needs_run_every_trial(tmp_path, kind):
    result, report = convert_verify(tmp_path, shapes_model(kind))
    assert result.exit_code == 0, result.output
    assert counts(report) == (len(report["trials"]), 0)
    report, data = library_verify(shapes_model(kind))
    assert report.ok and counts(data) == (len(data["trials"]), 0)


def test_shapes_reshape_gives_the_element_count_and_dim_overrides():
    assert {t.feeds["a"].shape for t in trials_of(shapes_model("reshape"))} == {(6,)}
    sizes = {t.feeds["a"].shape + t.feeds["b"].shape for t in trials_of(shapes_model("unnamed"))}
    assert all(a == b for a, b in sizes) and len(sizes) > 2  # equal, and still varied
    # --dim of one of two dims found equal sizes both; --dim of both keeps both
    trials = trials_of(shapes_model("broadcast"), dims={"n": 5})
    assert all(t.feeds["b"].shape == (5,) for t in trials)
    trials = trials_of(shapes_model("broadcast"), dims={"n": 5, "m": 1})
    assert all(t.feeds["b"].shape == (1,) for t in trials)


# -- state and control inputs ---------------------------------------------------------------
def silero_model() -> onnx.ModelProto:
    """silero-vad's shape: sr (int64, 0-d) compared with 16000 and 8000 choosing If
    branches (any other rate fails in a Reshape), and a float state of fixed rank."""
    f = TensorProto.FLOAT
    inp = oh.make_tensor_value_info("input", f, ["batch", 512])
    state = oh.make_tensor_value_info("state", f, [2, "batch", 128])
    sr = oh.make_tensor_value_info("sr", TensorProto.INT64, [])

    def branch(name, nodes, out):
        return oh.make_graph(nodes, name, [], [oh.make_tensor_value_info(out, f, None)])

    def rmax(out, name):
        return oh.make_node("ReduceMax", ["input", "axl"], [out], keepdims=1, name=name)

    bad = oh.make_node("Reshape", ["input", "bad"], ["ob"], name="unsupported_sr")
    else16 = branch(
        "else16",
        [
            oh.make_node("Equal", ["sr", "c8"], ["is8"]),
            oh.make_node(
                "If", ["is8"], ["oe"], name="if8",
                then_branch=branch("then8", [rmax("o8", "rmax8")], "o8"),
                else_branch=branch("else8", [bad], "ob"),
            ),
        ],
        "oe",
    )  # fmt: skip
    nodes = [
        oh.make_node("Equal", ["sr", "c16"], ["is16"]),
        oh.make_node(
            "If", ["is16"], ["feat"], name="if16",
            then_branch=branch("then16", [rmax("o16", "rmax16")], "o16"), else_branch=else16,
        ),
        oh.make_node("ReduceMax", ["state", "axl"], ["st_max"], keepdims=0, name="rmax_state"),
    ]  # fmt: skip
    inits = [
        tensor("c16", np.array(16000, np.int64)),
        tensor("c8", np.array(8000, np.int64)),
        tensor("axl", np.array([-1], np.int64)),
        tensor("bad", np.array([-1, 500], np.int64)),
    ]
    outputs = [
        oh.make_tensor_value_info("feat", f, ["batch", 1]),
        oh.make_tensor_value_info("st_max", f, [2, "batch"]),
    ]
    return model(nodes, [inp, state, sr], outputs, inits)


@pytest.mark.parametrize("flags", [(), ("--dim", "batch=1")])
def test_control_inputs_take_every_branch(tmp_path, flags):
    result, report = convert_verify(tmp_path, silero_model(), *flags)
    assert result.exit_code == 0, result.output
    assert "EQUIVALENT: no difference (" in result.output
    # every rate runs but the one equal to neither constant (the model's last else, which
    # must be taken by some trial too: its Reshape rejects the input, as silero-vad raises
    # on a rate it does not know): that trial is at an edge the model does not accept
    rates = [int(t.feeds["sr"]) for t in trials_of(silero_model())]
    assert set(rates) == {16000, 8000, 16001}
    assert counts(report) == (len(report["trials"]) - rates.count(16001), 0)
    outside = [t for t in report["trials"] if t["status"] == "not accepted"]
    assert len(outside) == rates.count(16001) and all("sr=16001" in t["note"] for t in outside)
    assert all(o["elements"] > 0 for o in report["outputs"])
    report, data = library_verify(silero_model(), dims={"batch": 1})
    assert report.ok and counts(data)[1] == 0 and report.not_accepted() > 0
    assert counts(data)[0] == len(data["trials"]) - report.not_accepted() > 0


def test_control_inputs_an_if_condition_and_a_comparison_take_both_sides():
    text = """(float[N, 5] x, int64 k, bool c) => (float[N] y, float[N] z) {
        zero = Constant <value = int64 {0}> ()
        gt = Greater(k, zero)
        y = If (gt) <then_branch = t () => (float[N] a) { a = ReduceMax <axes = [1], keepdims = 0> (x) },
                     else_branch = e () => (float[N] b) { b = ReduceMin <axes = [1], keepdims = 0> (x) }>
        z = If (c) <then_branch = t2 () => (float[N] a2) { a2 = ReduceMax <axes = [1], keepdims = 0> (x) },
                    else_branch = e2 () => (float[N] b2) { b2 = ReduceMin <axes = [1], keepdims = 0> (x) }>
    }"""  # noqa: E501
    proto = onnx.parser.parse_model(f'<ir_version: 8, opset_import: ["" : 13]>\nm {text}')
    trials = trials_of(proto)
    assert {int(t.feeds["k"]) > 0 for t in trials} == {True, False}
    assert {bool(t.feeds["c"]) for t in trials} == {True, False}


# -- --input-shapes ---------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["x:2,3,4", "x:[2,3,4]", "x: [2, 3, 4]"])
def test_input_shapes_fix_an_inputs_shape(tmp_path, value):
    result, report = convert_verify(tmp_path, paddle_model(), "--input-shapes", value)
    assert result.exit_code == 0, result.output
    assert all("x[0]=2" in t["label"] for t in report["trials"])
    assert counts(report) == (len(report["trials"]), 0)
    report, data = library_verify(paddle_model(), input_shapes={"x": (2, 3, 4)})
    assert report.ok and all("x[0]=2" in t["label"] for t in data["trials"])


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("y:1,3,4", "no generated input of that name"),
        ("x:2,3", "rank 2, but the model declares rank 3"),
        ("x:2,3,5", "size 5 on axis 2, where the model declares 4"),
        ("x:2,-3,4", "expected NAME:D1,D2,..."),
        ("x:2,3,4,x:1,3,4", "given twice"),
    ],
)
def test_input_shapes_bad_values_are_one_line_errors(tmp_path, value, message):
    result, _ = convert_verify(tmp_path, paddle_model(), "--input-shapes", value)
    assert result.exit_code == 2 and message in result.output, result.output
    assert "Traceback" not in result.output


def test_input_shapes_through_the_library_refuse_alike():
    with pytest.raises(maxlower.InvalidModelError, match="rank 2"):
        library_verify(paddle_model(), input_shapes={"x": (2, 3)})
    with pytest.raises(maxlower.InvalidModelError, match="an integer from 0"):
        library_verify(paddle_model(), input_shapes={"x": (2, -3, 4)})


def test_input_shapes_need_verify_and_are_in_help(tmp_path):
    onnx.save(paddle_model(), tmp_path / "m.onnx")
    result = invoke("convert", tmp_path / "m.onnx", "--opset", 13, "--input-shapes", "x:1,3,4")
    assert result.exit_code == 2 and "only apply with --verify" in result.output
    for command in ("verify", "convert", "lower"):
        assert "--input-shapes" in invoke(command, "--help").output


# -- a skipped trial's reason names the flag that fixes it ------------------------------------
@pytest.mark.parametrize(
    ("proto", "flags", "fix"),
    [
        (embedding_model, {"ranges": {"input_ids": (0, 1000)}}, "--range input_ids=-100:100"),
        (lambda: shapes_model("broadcast"), {"dims": {"n": 2, "m": 3}}, "--dim n=SIZE"),
        (lambda: shapes_model("reshape"), {"dims": {"n": 5}}, "--input-shapes a:D1"),
    ],
)
def test_skip_reasons_name_the_flag_that_fixes_them(proto, flags, fix):
    report = maxlower.verify(proto(), proto(), **flags)
    skipped = [t for t in report.to_dict()["trials"] if t["status"] == "skipped"]
    assert skipped and all(fix in t["note"] for t in skipped)
    assert fix in report.summary()


def test_skip_reasons_on_the_command_line(tmp_path):
    result, _ = convert_verify(tmp_path, shapes_model("broadcast"), "--dim", "n=2", "--dim", "m=3")
    assert result.exit_code == 2 and "shapes do not broadcast at n=2 m=3" in result.output
    assert "--input-shapes" in result.output
