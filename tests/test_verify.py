"""maxlower.verify: comparison rules, generated inputs, runners, NaN classification, report."""

from __future__ import annotations

import itertools
import json
import pathlib

import ml_dtypes
import numpy as np
import onnx
import pytest

import maxlower
from maxlower.errors import InvalidModelError
from maxlower.verify.compare import compare
from maxlower.verify.inputs import (
    axes_inputs,
    axes_variants,
    generate_trials,
    input_specs,
    values,
)
from tests.example_models import EXAMPLE_MODELS

MODELS = pathlib.Path(__file__).resolve().parents[1] / "examples" / "models"
BF16 = np.dtype(ml_dtypes.bfloat16)


def parse(text: str, opset: int = 18) -> onnx.ModelProto:
    return onnx.parser.parse_model(f'<ir_version: 8, opset_import: ["" : {opset}]>\nm {text}')


def trials_of(model: onnx.ModelProto, **options):
    import onnx_ir as ir

    axes = axes_inputs(ir.serde.deserialize_model(model))
    return list(
        generate_trials(
            input_specs(model),
            seed=options.pop("seed", 0),
            trials=options.pop("trials", None),
            axes=axes,
            **options,
        )
    )


# -- comparison ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32, np.float64])
def test_nan_equals_nan_and_signed_zeros_are_equal(dtype):
    a = np.array([np.nan, -0.0, 1.5, -np.inf], dtype=dtype)
    b = np.array([np.nan, 0.0, 1.5, -np.inf], dtype=dtype)
    assert compare(a, b).equal


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32, np.float64])
def test_one_ulp_is_a_difference(dtype):
    a = np.array([1.0, 2.0], dtype=dtype)
    b = a.copy()
    b[1] = np.nextafter(np.float32(2.0), np.float32(3.0)) if dtype == np.float32 else b[1]
    b.view(f"u{b.itemsize}")[1] += 1  # the next representable value, in any float type
    result = compare(a, b)
    assert (result.kind, result.mismatches, result.index) == ("values", 1, (1,))
    assert result.expected == 2.0 and result.actual > 2.0


def test_nan_against_a_number_is_a_difference():
    result = compare(np.array([np.nan, 1.0]), np.array([3.0, 1.0]))
    assert (result.kind, result.mismatches) == ("values", 1)
    assert np.isnan(result.max_difference)


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.uint32, np.int64, np.uint64])
def test_integers_must_be_identical_and_the_difference_is_exact(dtype):
    info = np.iinfo(dtype)
    a = np.array([info.max, 0, info.min], dtype=dtype)
    b = np.array([info.min, 0, info.min], dtype=dtype)
    result = compare(a, b)
    assert (result.kind, result.mismatches, result.index) == ("values", 1, (0,))
    assert result.max_difference == int(info.max) - int(info.min)  # no wrap-around


def test_bools_must_be_identical():
    assert compare(np.array([True, False]), np.array([True, False])).equal
    assert compare(np.array([True, False]), np.array([True, True])).mismatches == 1


def test_shape_and_dtype_differences_fail_even_with_tolerances():
    assert compare(np.zeros((2, 1)), np.zeros((2,)), rtol=1, atol=1).kind == "shape"
    assert compare(np.zeros(2, np.float32), np.zeros(2, np.float64), rtol=1).kind == "dtype"


def test_tolerances_relax_finite_floats_only():
    a = np.array([1.0, np.inf, np.nan], np.float32)
    assert compare(a, np.array([1.001, np.inf, np.nan], np.float32), rtol=1e-2).equal
    assert not compare(a, np.array([1.1, np.inf, np.nan], np.float32), rtol=1e-2).equal
    assert not compare(a, np.array([1.0, 3e38, np.nan], np.float32), rtol=1, atol=1e39).equal
    assert not compare(np.array([1], np.int32), np.array([2], np.int32), atol=5).equal


# -- generated inputs -----------------------------------------------------------------------
ALL_TYPES = [
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float",
    "double",
]


@pytest.mark.parametrize("onnx_type", ALL_TYPES)
def test_every_tensor_type_is_generated_with_its_dtype(onnx_type):
    model = parse(f"({onnx_type}[N, 4] x) => ({onnx_type}[N, 4] y) {{ y = Identity(x) }}")
    expected = np.dtype(
        onnx.helper.tensor_dtype_to_np_dtype(model.graph.input[0].type.tensor_type.elem_type)
    )
    trials = trials_of(model)
    assert {t.kind for t in trials} == {"ties", "specials", "random", "pow2"}
    for trial in trials:
        x = trial.feeds["x"]
        assert x.dtype == expected and x.shape == (trial.sizes["N"], 4)


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32, np.float64])
def test_float_specials(dtype):
    rng = np.random.default_rng(0)
    x = values(np.dtype(dtype), (6, 6), "specials", rng).astype(np.float64)
    info = ml_dtypes.finfo(dtype)
    assert np.isnan(x).any() and np.isposinf(x).any() and np.isneginf(x).any()
    assert (np.signbit(x) & (x == 0)).any() and (~np.signbit(x) & (x == 0)).any()
    assert float(info.max) in x and float(info.min) in x
    assert float(info.smallest_subnormal) in x
    assert len(np.unique(x[np.isfinite(x)])) < x.size  # ties


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint64])
def test_integer_specials_hold_the_extremes(dtype):
    x = values(np.dtype(dtype), (4, 4), "specials", np.random.default_rng(1))
    assert np.iinfo(dtype).min in x and np.iinfo(dtype).max in x


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [
        (np.int32, [2**24 - 1, 2**24, 2**24 + 1, -(2**24 + 1)]),
        (np.int64, [2**53 - 1, 2**53 + 1, -(2**53 + 1), 2**63 - 1]),
        (np.uint64, [2**53 + 1, 2**63, 2**63 + 1]),
        (
            np.float32,
            [
                2.0**24,
                float(np.nextafter(np.float32(2**24), np.float32(0))),
                float(np.nextafter(np.float32(2**24), np.float32(2**25))),
            ],
        ),
        (np.float64, [2.0**53 - 1, 2.0**53, 2.0**53 + 2]),
    ],
)
def test_powers_of_two_trial(dtype, expected):
    x = values(np.dtype(dtype), (8, 8), "pow2", np.random.default_rng(2))
    found = x.astype(np.float64 if x.dtype.kind == "f" else x.dtype).ravel().tolist()
    for value in expected:
        assert value in found, value


def test_float16_powers_of_two_only_where_they_fit():
    x = values(np.dtype(np.float16), (8, 8), "pow2", np.random.default_rng(3))
    x = x.astype(np.float64)
    assert np.isfinite(x).all() and np.abs(x).max() < 2**16
    assert 2048.0 in x and 2047.0 in x and 2050.0 in x  # 2^11 and its float16 neighbours


def test_random_integers_span_the_whole_range():
    x = values(np.dtype(np.int32), (1000,), "random", np.random.default_rng(4))
    assert x.min() < -(2**30) and x.max() > 2**30


def test_the_same_symbolic_dim_has_the_same_size_in_every_input():
    model = parse(
        "(float[B, T] a, int32[T] b, float[B, 2] c) => (float[B, T] y) { y = Identity(a) }"
    )
    trials = trials_of(model)
    for trial in trials:
        a, b, c = (trial.feeds[n] for n in "abc")
        assert a.shape == (trial.sizes["B"], trial.sizes["T"]) == (c.shape[0], b.shape[0])
    sizes = [tuple(t.sizes.values()) for t in trials]
    assert (1, 1) in sizes and (3, 3) in sizes
    assert (0, 3) in sizes and (3, 0) in sizes  # each dim at 0 on its own
    assert any(b != t for b, t in sizes if b and t)  # distinct sizes in one trial
    assert len(trials) == 7 + 2


def test_trials_option_truncates_or_extends_the_schedule():
    model = parse("(float[N] x) => (float[N] y) { y = Identity(x) }")
    assert len(trials_of(model, trials=2)) == 2
    many = trials_of(model, trials=20)
    assert [t.index for t in many] == list(range(20))
    assert {t.kind for t in many[8:]} == {"ties", "specials", "random", "pow2"}


def test_seed_reproduces_and_changes_the_inputs():
    model = parse("(float[N, 3] x) => (float[N, 3] y) { y = Identity(x) }")
    first, again, other = (trials_of(model, seed=s) for s in (5, 5, 6))
    same = [
        np.array_equal(a.feeds["x"], b.feeds["x"], equal_nan=True) for a, b in zip(first, again)
    ]
    assert all(same)
    assert not all(
        np.array_equal(a.feeds["x"], b.feeds["x"], equal_nan=True)
        for a, b in zip(first, other)
        if a.feeds["x"].size
    )


def test_axes_variants_cover_every_subset_negative_forms_and_empty():
    variants = axes_variants(3, None)
    subsets = {tuple(sorted(v % 3 for v in variant)) for variant in variants}
    assert subsets == {s for n in range(4) for s in itertools.combinations(range(3), n)}
    assert [] in variants and [-1] in variants and [-1, -2, -3] in variants
    assert all((v and all(a < 0 for a in v)) or all(a >= 0 for a in v) for v in variants)
    assert all(len(v) == 2 for v in axes_variants(3, 2))


def test_an_input_reaching_reduce_max_axes_gets_valid_axes_in_every_trial():
    model = parse(
        "(float[N, M, K] x, int32[A] ax) => (float[N, M, K] y) {"
        "  a64 = Cast <to = 7> (ax)\n  axes = Identity(a64)\n"
        "  y = ReduceMax <keepdims = 1> (x, axes) }"
    )
    trials = trials_of(model)
    seen = {tuple(t.feeds["ax"].tolist()) for t in trials}
    assert all(t.feeds["ax"].dtype == np.int32 for t in trials)
    assert seen == {tuple(v) for v in axes_variants(3, None)}
    per_trial = {t.index for t in trials}
    assert len(trials) == len(per_trial) * len(axes_variants(3, None))


def test_axes_through_a_function_call_and_of_static_length():
    model = onnx.parser.parse_model("""
        <ir_version: 8, opset_import: ["" : 18, "local" : 1]>
        m (float[N, M] x, int64[1] axes) => (float[N, M] y) { y = local.f(x, axes) }
        <domain: "local", opset_import: ["" : 18]>
        f (data, which) => (out) { out = ReduceMax <keepdims = 1> (data, which) }""")
    trials = trials_of(model)
    # The function body does not know the rank: the verifier falls back to safe axes.
    assert {tuple(t.feeds["axes"].tolist()) for t in trials} == {(0,), (-1,)}


def test_ranges_dims_and_fixed_inputs():
    model = parse("(float[B, T] x, int64[B, T] ids) => (float[B, T] y) { y = Identity(x) }")
    fixed = np.ones((2, 5), np.float32)
    trials = trials_of(model, fixed={"x": fixed}, ranges={"ids": (0, 10)})
    assert len(trials) == 7  # B and T are fixed by x: no size-0 trials
    for trial in trials:
        assert trial.feeds["x"] is fixed
        ids = trial.feeds["ids"]
        assert ids.shape == (2, 5) and ids.min() >= 0 and ids.max() < 10
    trials = trials_of(model, dims={"B": 6})
    assert all(t.feeds["x"].shape[0] == 6 for t in trials)
    assert not any("T" not in t.sizes for t in trials)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"fixed": {"nope": np.zeros(2)}}, "not an input"),
        ({"fixed": {"x": np.zeros((2, 3), np.float64)}}, "float64"),
        ({"fixed": {"x": np.zeros(3, np.float32)}}, "rank 1"),
        ({"fixed": {"x": np.zeros((2, 4), np.float32)}}, "declares 3"),
        ({"dims": {"Q": 2}}, "no input has a dim"),
    ],
)
def test_bad_user_inputs_are_invalid(options, message):
    model = parse("(float[B, 3] x) => (float[B, 3] y) { y = Identity(x) }")
    with pytest.raises(InvalidModelError, match=message):
        trials_of(model, **options)


def test_inputs_without_a_generator_need_values():
    model = parse("(string[2] s) => (string[2] y) { y = Identity(s) }")
    with pytest.raises(InvalidModelError, match="--inputs"):
        maxlower.verify(model, model)
    report = maxlower.verify(model, model, inputs={"s": np.array(["a", "b"], dtype=object)})
    assert report.ok and report.runs == 1


def test_bfloat16_inputs_from_an_npz_file(tmp_path: pathlib.Path):
    model = parse("(bfloat16[N] a, bfloat16[N] b) => (bfloat16[N] y) { y = Max(a, b) }", 13)
    a = np.array([1.5, -2.0, np.nan], BF16)
    np.savez(tmp_path / "ab.npz", a=a, b=np.array([3.0, -3.0, 0.0], BF16))
    report = maxlower.verify(model, model, inputs=tmp_path / "ab.npz")
    assert report.ok and report.runs == 1
    assert report.outputs[0].elements == 3


# -- verify -------------------------------------------------------------------------------
# Never a glob of MODELS: README commands write into examples/models/.
@pytest.mark.parametrize("path", EXAMPLE_MODELS, ids=lambda p: p.name)
def test_a_model_is_equivalent_to_itself(path):
    report = maxlower.verify(path, path)
    assert report.ok and report.status == "equivalent", report.summary()
    assert report.runs > 0 and all(o.status in ("equal", "unspecified") for o in report.outputs)


def test_the_first_diverging_node_is_named():
    reference = parse(
        "(float[N] x, float[N] z) => (float[N] y) {  r = Relu(x)\n  m = Max(r, z)\n  y = Neg(m) }"
    )
    candidate = parse(
        "(float[N] x, float[N] z) => (float[N] y) {  r = Relu(x)\n  m = Min(r, z)\n  y = Neg(m) }"
    )
    report = maxlower.verify(reference, candidate)
    assert report.status == "different"
    divergence = report.divergence
    assert divergence.value == "m" and divergence.reference_op == "Max"
    assert divergence.candidate_op == "Min" and not divergence.unspecified
    text = report.summary()
    assert "first diverging value 'm' (output of Max node '<unnamed Max>'; candidate: Min" in text
    output = report.outputs[0]
    assert output.mismatches > 0 and output.max_difference > 0
    assert f"index {tuple(output.first.index)}" in text and "seed 0" in text


def _nan_reference_and_candidates():
    reference = parse(
        "(float[2, 2] x) => (float[2] y) {  y = ReduceMax <keepdims = 0, axes = [1]> (x) }",
        opset=13,
    )
    # Differs only in row 0, whose set holds the NaN: unspecified by ONNX.
    only_nan_row = parse(
        "(float[2, 2] x) => (float[2] y) {"
        "  r = ReduceMax <keepdims = 0, axes = [1]> (x)\n"
        "  isnan = IsNaN(r)\n  seven = Constant <value = float {7.0}> ()\n"
        "  y = Where(isnan, seven, r) }",
        opset=13,
    )
    # Also differs in row 1, which has no NaN: a real difference.
    other_row = parse(
        "(float[2, 2] x) => (float[2] y) {"
        "  r = ReduceMax <keepdims = 0, axes = [1]> (x)\n"
        "  delta = Constant <value = float[2] {0.0, 96.0}> ()\n"
        "  y = Add(r, delta) }",
        opset=13,
    )
    return reference, only_nan_row, other_row


def test_nan_only_differences_at_reduce_max_are_unspecified_and_fail_with_strict():
    reference, only_nan_row, other_row = _nan_reference_and_candidates()
    feeds = {"x": np.array([[np.nan, 1.0], [2.0, 3.0]], np.float32)}
    report = maxlower.verify(reference, only_nan_row, inputs=feeds)
    assert report.ok and report.status == "equivalent_except_unspecified_nan", report.summary()
    assert report.outputs[0].status == "unspecified"
    assert report.unspecified_divergence.unspecified
    assert "unspecified by ONNX" in report.summary()
    strict = maxlower.verify(reference, only_nan_row, inputs=feeds, strict=True)
    assert strict.status == "equivalent_except_unspecified_nan" and not strict.ok
    real = maxlower.verify(reference, other_row, inputs=feeds)
    assert real.status == "different" and real.outputs[0].status == "different"
    assert real.divergence is not None and not real.divergence.unspecified


def test_argmax_nan_difference_is_unspecified_but_max_nan_is_not():
    reference = parse(
        "(float[N, 4] x) => (int64[N] y) {"
        "  y = ArgMax <axis = 1, keepdims = 0, select_last_index = 1> (x) }",
        13,
    )
    converted = maxlower.convert(reference, 11)  # reverse + ArgMax: NaN lands differently
    report = maxlower.verify(reference, converted)
    assert report.ok, report.summary()
    nan_free = maxlower.verify(reference, converted, strict=True, ranges={"x": (-2, 2)})
    assert nan_free.ok, nan_free.summary()  # with no NaN, nothing is even unspecified


def test_fallback_to_onnx_reference_is_reported():
    # onnxruntime has no Max kernel for int16.
    model = parse("(int16[N] a, int16[N] b) => (int16[N] y) { y = Max(a, b) }", opset=13)
    report = maxlower.verify(model, model)
    assert report.ok
    assert report.runners("reference") == {"onnx.reference": report.runs}
    assert any("onnxruntime cannot load the reference model" in n for n in report.notes)
    assert "onnx.reference" in report.summary()


def test_candidate_failing_to_run_is_a_difference():
    reference = parse("(float[N] x) => (float[N] y) { y = Identity(x) }", 13)
    candidate = parse(
        "(float[N] x) => (float[N] y) {"
        "  shape = Constant <value = int64[1] {3}> ()\n"
        "  y = Reshape(x, shape) }",
        13,
    )
    report = maxlower.verify(reference, candidate)
    assert report.status == "different"
    first = report.outputs[0].first
    assert first.kind == "error" and first.message
    assert "failed to run" in report.summary()


def test_inconclusive_when_the_reference_never_runs_and_dims_fix_it():
    # (the shape is computed at run time: a constant one would give N its size, 6)
    model = parse(
        "(float[N] x) => (float[2, 3] y) {"
        "  shape = Constant <value = int64[2] {2, 3}> ()\n"
        "  zero = Constant <value = int64[2] {0, 0}> ()\n"
        "  computed = Add(shape, zero)\n  y = Reshape(x, computed) }",
        13,
    )
    report = maxlower.verify(model, model)
    assert report.status == "inconclusive" and not report.ok
    assert "--dim" in report.summary()
    assert maxlower.verify(model, model, dims={"N": 6}).ok


def test_interface_differences_fail():
    a = parse("(float[N] x) => (float[N] y) { y = Identity(x) }")
    renamed_output = parse("(float[N] x) => (float[N] z) { z = Identity(x) }")
    other_input_type = parse("(double[N] x) => (float[N] y) { y = Cast <to = 1> (x) }")
    for candidate, fragment in (
        (renamed_output, "outputs differ"),
        (other_input_type, "float64 in the candidate"),
    ):
        report = maxlower.verify(a, candidate)
        assert report.status == "different" and report.runs == 0
        assert any(fragment.lower() in n.lower() for n in report.notes), report.notes


def test_tolerances_accept_small_float_differences():
    reference = parse("(float[N] x) => (float[N] y) { y = Identity(x) }", 13)
    candidate = parse(
        "(float[N] x) => (float[N] y) {"
        "  eps = Constant <value = float {1e-6}> ()\n  y = Add(x, eps) }",
        13,
    )
    kwargs = {"ranges": {"x": (-1, 1)}}
    assert not maxlower.verify(reference, candidate, **kwargs).ok
    assert maxlower.verify(reference, candidate, atol=1e-5, **kwargs).ok


def test_json_report(tmp_path: pathlib.Path):
    reference, _, other_row = _nan_reference_and_candidates()
    report = maxlower.verify(reference, other_row)
    path = tmp_path / "report.json"
    report.write_json(path)
    data = json.loads(path.read_text())
    assert data["ok"] is False and data["status"] == "different"
    assert data["seed"] == 0 and data["outputs"][0]["name"] == "y"
    assert data["outputs"][0]["first"]["index"] is not None
    assert data["divergence"]["value"] == "y"
    assert data["runners"]["reference"]["onnxruntime"] == report.runs
    assert "nan" in path.read_text() or data["outputs"][0]["max_difference"] is not None


def test_verify_accepts_paths_ir_models_and_protos(tmp_path: pathlib.Path):
    import onnx_ir as ir

    path = MODELS / "reduce_max_opset18.onnx"
    proto = onnx.load(path)
    converted = maxlower.convert(ir.load(path), 13)
    assert maxlower.verify(path, converted).ok
    assert maxlower.verify(proto, ir.serde.serialize_model(converted)).ok
    with pytest.raises(InvalidModelError, match="no such file"):
        maxlower.verify(tmp_path / "missing.onnx", proto)


def test_per_trial_fallback_is_reported():
    # onnxruntime loads bool ReduceMax but fails on an empty set (the N=0... M=0 trial).
    model = parse(
        "(bool[N, M] x) => (bool[N] y) {"
        "  axes = Constant <value = int64[1] {1}> ()\n"
        "  y = ReduceMax <keepdims = 0> (x, axes) }",
        opset=20,
    )
    report = maxlower.verify(model, model)
    assert report.ok, report.summary()
    counts = report.runners("reference")
    assert counts["onnx.reference"] >= 1 and counts["onnxruntime"] >= 1
    assert any("empty set with bool type" in n and "onnx.reference" in n for n in report.notes)


def test_a_real_root_is_shown_before_an_earlier_nan_root():
    reference = parse(
        "(float[N, 4] x, float[N, 4] z) => (int64[N] k, float[N, 4] m) {"
        "  k = ArgMax <axis = 1, keepdims = 0, select_last_index = 1> (x)\n"
        "  m = Max(x, z) }",
        opset=13,
    )
    candidate = maxlower.convert(reference, 11)  # ArgMax reversed: NaN lands differently
    for node in candidate.graph.node:
        if node.op_type == "Max":
            node.op_type = "Min"
    # onnxruntime's ArgMax gives 0 on the original and 2 on the reversed form here.
    feeds = {
        "x": np.array([[np.nan, 1, 2, 0]], np.float32),
        "z": np.array([[0, 0, 0, 5]], np.float32),
    }
    report = maxlower.verify(reference, candidate, inputs=feeds)
    assert report.status == "different"
    assert report.outputs[0].status == "different"  # the trial differs for real: no split
    assert report.divergence.value == "m" and not report.divergence.unspecified


def test_nan_at_a_reduce_max_with_initializer_axes_is_unspecified_not_different():
    """The reference's ReduceMax reads its axes from an initializer; the verifier must see
    them to tell that the differing elements reduced a set holding a NaN (onnxruntime's
    ReduceMax gives -0.0 there, the lowered form NaN)."""
    example = pathlib.Path(__file__).resolve().parents[1] / "examples/models"
    original = onnx.load(example / "reduce_max_opset18.onnx")
    lowered = maxlower.lower(original, "primitives")
    report = maxlower.verify(original, lowered)
    assert report.ok
    statuses = {o.name: o.status for o in report.outputs}
    assert statuses["reduced_const_axes"] == "unspecified"
    assert maxlower.verify(original, lowered, strict=True).ok is False
