"""onnx's own version-converter tests, run with maxlower's converter swapped in by one line
(issue 30: a drop-in replacement must pass the tests written for what it replaces).

The four test files here are onnx/onnx's `tests/python/version_converter_test.py` and
`tests/python/version_converter/automatic_*` at commit f75469120 (Apache-2.0, unchanged;
see NOTICE.md). `benchmarks/onnx_converter_suite.py` runs them twice, once with onnx's own
converter, and tabulates every test whose outcome differs, with its reason.

Where maxlower differs from onnx's converter on purpose (it converts exactly what onnx's
refuses, or refuses what onnx's converts inexactly), the test is marked xfail(strict) here
with the reason: strict, so that a change of behaviour either way shows.
"""

from __future__ import annotations

import os
import pathlib

import onnx.version_converter
import pytest

import maxlower

HERE = pathlib.Path(__file__).parent


@pytest.fixture(autouse=True)
def maxlower_swapped_in(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one line, for this directory's tests only (a swap at import time would reach
    every test of the run that calls onnx's converter as a baseline)."""
    monkeypatch.setattr(onnx.version_converter, "convert_version", maxlower.convert_version)


# Each class of difference: why maxlower's outcome differs from onnx's converter's, and the
# tests (file::class::test) it covers. benchmarks/onnx_converter_suite.py lists each test's
# failure as measured; the reasons were read from those failures.
LEGACY_CONTRADICTING = (
    (
        "the test's legacy model contradicts its own op in a way the full check cannot see "
        "at opsets 1-5 (Add-1 with broadcast=1 gives X1's shape (5, 2), the graph declares "
        "Y as (5,); Concat-1 without axis concatenates on axis 1, its inputs have rank 1): "
        "onnx's converter writes a model that fails check_model(full_check=True), maxlower "
        "refuses, naming the node and the contradiction"
    ),
    [
        "version_converter_test.py::TestVersionConverter::test_add_5_8_with_unsqueeze",
        "version_converter_test.py::TestVersionConverter::test_concat_3_5",
    ],
)

INVALID_INPUT = (
    (
        "the test's model fails onnx.checker.check_model(full_check=True) (a type its schema "
        "does not take, a missing shape field, an undefined input or output): maxlower "
        "refuses invalid input (InvalidModelError), onnx's converter converts it as it is"
    ),
    [
        "automatic_upgrade_test.py::TestAutomaticUpgrade::test_AffineGrid_2D",
        "automatic_upgrade_test.py::TestAutomaticUpgrade::test_AffineGrid_3D",
        "automatic_upgrade_test.py::TestAutomaticUpgrade::test_Col2Im_4D",
        "automatic_upgrade_test.py::TestAutomaticUpgrade::test_Col2Im_5D",
        "automatic_upgrade_test.py::TestAutomaticUpgrade::test_ConstantOfShape",
        "automatic_upgrade_test.py::TestAutomaticUpgrade::test_DFT",
        "automatic_upgrade_test.py::TestAutomaticUpgrade::test_Equal",
        "automatic_upgrade_test.py::TestAutomaticUpgrade::test_GRU_3",
        "automatic_upgrade_test.py::TestAutomaticUpgrade::test_GatherND",
        "automatic_upgrade_test.py::TestAutomaticUpgrade::test_LSTM_3",
        "automatic_upgrade_test.py::TestAutomaticUpgrade::test_QLinearConv",
        "automatic_upgrade_test.py::TestAutomaticUpgrade::test_QLinearMatMul",
        "automatic_upgrade_test.py::TestAutomaticUpgrade::test_RNN_3",
        "automatic_upgrade_test.py::TestAutomaticUpgrade::test_StringConcat",
        "automatic_upgrade_test.py::TestAutomaticUpgrade::test_TfIdfVectorizer",
        "version_converter_test.py::TestVersionConverter::test_backwards_incompatible",
        "version_converter_test.py::TestVersionConverter::test_batch_normalization_5_8",
        "version_converter_test.py::TestVersionConverter::test_extend_supported_types_rejects_missing_output",
        "version_converter_test.py::TestVersionConverter::test_gemm_6_7_rejects_1d_A",
        "version_converter_test.py::TestVersionConverter::test_gemm_6_7_rejects_1d_input",
        "version_converter_test.py::TestVersionConverter::test_gemm_7_6_rejects_1d_A",
        "version_converter_test.py::TestVersionConverter::test_gemm_7_6_rejects_1d_input",
        "version_converter_test.py::TestVersionConverter::test_if_subgraph_10_11",
        "version_converter_test.py::TestVersionConverter::test_nested_captured_output",
        "version_converter_test.py::TestVersionConverter::test_range_26_27_float_success",
        "version_converter_test.py::TestVersionConverter::test_range_27_26_low_precision_fails[10]",
        "version_converter_test.py::TestVersionConverter::test_range_27_26_low_precision_fails[16]",
        "version_converter_test.py::TestVersionConverter::test_range_27_26_stash_type_removed",
        "version_converter_test.py::TestVersionConverter::test_rejects_missing_required_inputs[Cast-attrs0-9-8-1-output_shape0]",
        "version_converter_test.py::TestVersionConverter::test_rejects_missing_required_inputs[Softmax-attrs1-12-13-1-output_shape1]",
        "version_converter_test.py::TestVersionConverter::test_rejects_missing_required_inputs[Upsample-attrs2-9-10-1-output_shape2]",
        "version_converter_test.py::TestVersionConverter::test_reshape_6_4",
        "version_converter_test.py::TestVersionConverter::test_scan_8_9_rejects_no_inputs",
        "version_converter_test.py::TestVersionConverter::test_softmax_13_12_rejects_malformed_flatten_input",
        "version_converter_test.py::TestVersionConverter::test_split_13_12_raw_data_dims_mismatch_rejected",
        "version_converter_test.py::TestVersionConverter::test_split_with_optional_input",
        "version_converter_test.py::TestVersionConverter::test_undefined_input",
        "version_converter_test.py::TestVersionConverter::test_undefined_output",
    ],
)

CONVERTS_EXACTLY = (
    (
        "onnx's converter refuses this conversion and maxlower converts it exactly (the test "
        "expects a RuntimeError)"
    ),
    [
        "version_converter_test.py::TestVersionConverter::test_scatter_16_15_bfloat16_fails[ScatterElements]",
        "version_converter_test.py::TestVersionConverter::test_scatter_16_15_bfloat16_fails[ScatterND]",
        "version_converter_test.py::TestVersionConverter::test_scatter_18_17_reduction_max_min_fails[ScatterElements-max]",
        "version_converter_test.py::TestVersionConverter::test_scatter_18_17_reduction_max_min_fails[ScatterElements-min]",
        "version_converter_test.py::TestVersionConverter::test_scatter_18_17_reduction_max_min_fails[ScatterND-max]",
        "version_converter_test.py::TestVersionConverter::test_scatter_18_17_reduction_max_min_fails[ScatterND-min]",
    ],
)

EXPANDED = (
    (
        "the target lacks the op, or the attribute or type in use: maxlower writes the op's "
        "ONNX function body in its place (the default since issue 29; onnx.reference gives "
        "the same values bit for bit, LinearAttention's output within its kernel's rounding), "
        "onnx's converter refuses; expand_functions=False refuses as it does"
    ),
    [
        "automatic_downgrade_test.py::TestAutomaticDowngrade::test_attention_25_to_24_window_fails[left_window_size]",
        "automatic_downgrade_test.py::TestAutomaticDowngrade::test_attention_25_to_24_window_fails[right_window_size]",
        "automatic_downgrade_test.py::TestAutomaticDowngrade::test_LinearAttention_downgrade_fails",
        "automatic_downgrade_test.py::TestAutomaticDowngrade::test_CausalConvWithState_downgrade_fails",
        "version_converter_test.py::TestVersionConverter::test_celu_28_27_unsupported_type_fails[10]",
        "version_converter_test.py::TestVersionConverter::test_celu_28_27_unsupported_type_fails[11]",
        "version_converter_test.py::TestVersionConverter::test_celu_28_27_unsupported_type_fails[16]",
    ],
)

SCAN_SIGNATURE = (
    (
        "onnx's Scan 8 <-> 9 adapter changes the graph's signature (it drops or adds the "
        "batch axis): maxlower refuses it"
    ),
    [
        "automatic_upgrade_test.py::TestAutomaticUpgrade::test_Scan",
        "version_converter_test.py::TestVersionConverter::test_scan_8_9",
        "version_converter_test.py::TestVersionConverter::test_scan_8_9_preserves_unshaped_input",
        "version_converter_test.py::TestVersionConverter::test_scan_9_8_with_valid_node",
    ],
)

NOT_PROVABLY_EXACT = (
    (
        "Resize-10's nearest rounding differs from the later versions' default where its "
        "scales, computed at run time, grow or shrink an axis: maxlower refuses, onnx's "
        "converter converts it"
    ),
    [
        "automatic_upgrade_test.py::TestAutomaticUpgrade::test_Resize",
    ],
)

FAILS_FULL_CHECK = (
    (
        "onnx's converter writes a Constant-1 of uint64, which Constant-1 does not take (the "
        "full check refuses it): maxlower refuses the conversion instead"
    ),
    [
        "version_converter_test.py::TestVersionConverter::test_constant_9_8",
    ],
)

OVERRIDABLE_INITIALIZER = (
    (
        "the scales initializer is also a graph input (a caller may feed other scales), so it"
        " is not a constant that Upsample-8's attribute could hold: maxlower refuses"
    ),
    [
        "version_converter_test.py::TestVersionConverter::test_upsample_with_initializer_9_8",
        "version_converter_test.py::TestVersionConverter::test_upsample_with_long_initializer_name_9_8",
        "version_converter_test.py::TestVersionConverter::test_upsample_with_raw_initializer_9_8",
    ],
)

EXTERNAL_DATA = (
    (
        "the model's tensor lives in an external file and no base_dir says where: maxlower "
        "reads every tensor to check the model and reads none from the working directory "
        "(CVE-2022-25882's class); convert_version(model, n, base_dir=...) converts it"
    ),
    [
        "version_converter_test.py::TestVersionConverter::test_external_data_version_conversion",
    ],
)

ANOTHER_FORM = (
    (
        "the test asserts onnx's converter's own form (a Constant node where maxlower writes "
        "an initializer, an explicit default attribute such as layout=0 where maxlower leaves"
        " it absent, axis 2 where maxlower keeps -1, the domain spelled 'ai.onnx' where "
        "maxlower writes ''): the same function, another spelling"
    ),
    [
        "version_converter_test.py::TestVersionConverter::test_axes_attr_to_input_12_13",
        "version_converter_test.py::TestVersionConverter::test_convert_version_ai_onnx_domain_spelling_preserves_custom_domain",
        "version_converter_test.py::TestVersionConverter::test_gru_13_14",
        "version_converter_test.py::TestVersionConverter::test_lstm_13_14",
        "version_converter_test.py::TestVersionConverter::test_pad_10_11",
        "version_converter_test.py::TestVersionConverter::test_pad_with_value_10_11",
        "version_converter_test.py::TestVersionConverter::test_reshape_4_5_optional_shape",
        "version_converter_test.py::TestVersionConverter::test_reshape_4_6",
        "version_converter_test.py::TestVersionConverter::test_rnn_13_14",
        "version_converter_test.py::TestVersionConverter::test_slice_9_10",
        "version_converter_test.py::TestVersionConverter::test_softmax_12_13",
        "version_converter_test.py::TestVersionConverter::test_softmax_13_12",
        "version_converter_test.py::TestVersionConverter::test_split_12_13",
        "version_converter_test.py::TestVersionConverter::test_upsample_8_9",
    ],
)

DIFFERENCES: dict[str, str] = {
    test: reason
    for reason, tests in (
        LEGACY_CONTRADICTING,
        INVALID_INPUT,
        CONVERTS_EXACTLY,
        EXPANDED,
        SCAN_SIGNATURE,
        NOT_PROVABLY_EXACT,
        FAILS_FULL_CHECK,
        OVERRIDABLE_INITIALIZER,
        EXTERNAL_DATA,
        ANOTHER_FORM,
    )
    for test in tests
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE not in pathlib.Path(item.fspath).parents:
            continue
        item.add_marker(pytest.mark.slow)
        if item.name == "test_ops_tested" and os.environ.get("PYTEST_XDIST_WORKER"):
            # it checks that the other tests of its class ran in this process: under xdist
            # they are spread across workers (benchmarks/onnx_converter_suite.py runs it)
            item.add_marker(pytest.mark.skip(reason="needs the whole class in one process"))
        key = item.nodeid.split("onnx_converter_suite/", 1)[1]
        if key in DIFFERENCES:
            item.add_marker(pytest.mark.xfail(reason=DIFFERENCES[key], strict=True))
