"""Bad inputs, round 2 (docs/bad-inputs.md): options, profiles, opset imports, function
calls and runs without end. Each class is refused as one `maxlower: error: ...` line with
exit code 2, by every command it applies to, with nothing written; never exit code 4.
"""

from __future__ import annotations

import pathlib
import re
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import maxlower
from benchmarks.scale import function_dag
from maxlower.errors import InvalidModelError
from maxlower.profiles import ProfileError, load_profile
from maxlower.runtime import reference_evaluator
from maxlower.verify.runner import RunTimedOut, run_budgeted
from tests.test_bad_inputs import (
    _huge_input_model,
    assert_one_line_error,
    good_model,
    invoke,
    save,
    snapshot,
)

LATEST = onnx.defs.onnx_opset_version()


def command_line(command: str, path: pathlib.Path, out: pathlib.Path, *extra) -> list:
    """`command` on `path`; `extra` are verifier options (convert and lower get --verify)."""
    verify = ["--verify", *extra] if extra else []
    return {
        "convert": ["convert", path, "--opset", "12", "-o", out, *verify],
        "lower": ["lower", path, "--profile", "primitives", "-o", out, *verify],
        "inspect": ["inspect", path, "--opset", "12"],
        "verify": ["verify", path, path, "--json", out.with_suffix(".json"), *extra],
    }[command]


def run_refused(tmp_path, path, args, *fragments) -> None:
    """`args` exits 2 with one line holding `fragments`, and writes nothing."""
    before = snapshot(tmp_path)
    result = invoke(*args)
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert_one_line_error(result, *fragments)
    assert snapshot(tmp_path) == before


# --- verifier options --------------------------------------------------------------------

BAD_VERIFY_OPTIONS = {
    "range-infinite": (["--range", "x=-inf:inf"], "--range x=-inf:inf", "finite"),
    "range-overflowing": (["--range", "x=0:1e400"], "--range x=0:inf", "finite"),
    "range-too-wide": (["--range", "x=-1e308:1e308"], "overflows"),
    "rtol-nan": (["--rtol", "nan"], "--rtol nan", "not NaN or infinite"),
    "atol-inf": (["--atol", "inf"], "--atol inf"),
    "seed-negative": (["--seed", "-1"], "--seed -1", "0 to 2^64-1"),
    "seed-huge": (["--seed", str(2**64)], "--seed"),
    "trials-huge": (["--trials", str(10**20)], "--trials", "100,000"),
    "dim-huge": (["--dim", f"N={2**63}"], "--dim N"),
    "timeout-zero": (["--timeout", "0"], "--timeout 0"),
    "timeout-nan": (["--timeout", "nan"], "--timeout nan"),
}


@pytest.mark.parametrize("command", ["convert", "lower", "verify"])
@pytest.mark.parametrize("option", sorted(BAD_VERIFY_OPTIONS))
def test_bad_verifier_options_are_refused(tmp_path, option: str, command: str):
    args, *fragments = BAD_VERIFY_OPTIONS[option]
    path = save(good_model(), tmp_path)
    line = command_line(command, path, tmp_path / "out.onnx", *args)
    run_refused(tmp_path, path, line, *fragments, "--help")


@pytest.mark.parametrize(
    "options, fragment",
    [
        ({"seed": -1}, "--seed -1"),
        ({"seed": True}, "--seed True"),
        ({"trials": 0}, "--trials 0"),
        ({"rtol": float("nan")}, "--rtol nan"),
        ({"atol": float("inf")}, "--atol inf"),
        ({"timeout": -1.0}, "--timeout -1"),
        ({"ranges": {"x": (0.0, float("inf"))}}, "--range x=0:inf"),
        ({"ranges": {"x": (1.0, 0.0)}}, "LOW < HIGH"),
        ({"dims": {"N": -2}}, "--dim N -2"),
    ],
)
def test_the_library_refuses_the_same_options(options: dict, fragment: str):
    with pytest.raises(InvalidModelError, match=re.escape(fragment)):
        maxlower.verify(good_model(), good_model(), **options)


def test_huge_declared_dims_are_not_verified_through_convert_or_lower(tmp_path):
    """convert/lower --verify refuse inputs too large to generate as `verify` does
    (test_bad_inputs.py::test_huge_declared_input_dims_are_not_verified)."""
    path = save(_huge_input_model(), tmp_path)
    for command in ("convert", "lower", "verify"):
        line = command_line(command, path, tmp_path / "out.onnx", "--trials", "1")
        result = invoke(*line)
        assert result.exit_code == 2, result.output
        assert result.stderr == (
            "maxlower: error: input 'x' is declared FLOAT[1099511627776, 1099511627776]: "
            "4.84e+24 bytes of test data per trial, over the verifier's 1 GiB; give its "
            "values with --inputs\n"
        )
        assert not (tmp_path / "out.onnx").exists() and not (tmp_path / "out.json").exists()
    with pytest.raises(InvalidModelError, match=r"4\.84e"):
        maxlower.verify(_huge_input_model(), _huge_input_model())


# --- runs without end --------------------------------------------------------------------


def loop_model(trips: int = 2**62) -> onnx.ModelProto:
    """A Loop of `trips` iterations of Max: runs for centuries unless stopped."""
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Max", ["v_in", "v_in"], ["v_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [2]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [2]),
        ],
    )
    graph = helper.make_graph(
        [helper.make_node("Loop", ["n", "c", "x"], ["y"], body=body, name="loop")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [
            helper.make_tensor("n", TensorProto.INT64, [], [trips]),
            helper.make_tensor("c", TensorProto.BOOL, [], [True]),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


@pytest.mark.parametrize("command", ["convert", "lower", "verify"])
def test_a_run_past_the_timeout_is_skipped_and_nothing_is_verified(tmp_path, command: str):
    path = save(loop_model(), tmp_path)
    out = tmp_path / "out.onnx"
    started = time.monotonic()
    result = invoke(*command_line(command, path, out, "--timeout", "0.2", "--trials", "2"))
    assert time.monotonic() - started < 60
    assert result.exit_code == 2, result.output
    assert "NOT VERIFIED" in result.output
    assert "2 run(s) skipped because a model ran past the time budget (--timeout 0.2 s)" in (
        result.output
    )
    assert not out.exists()


def test_the_library_reports_a_timeout_as_not_verified():
    report = maxlower.verify(loop_model(), loop_model(), trials=1, timeout=0.2)
    assert report.status == "inconclusive" and not report.ok
    assert report.trials[0].status == "skipped"
    assert "ran past --timeout 0.2 s" in report.trials[0].note
    short = maxlower.verify(loop_model(3), loop_model(3), trials=2, timeout=5)
    assert short.ok and short.runs == 2


def test_onnx_reference_is_stopped_too():
    """onnx.reference runs Python; the budget raises in its thread. A budget that runs out
    around the end of a run gives the outputs or RunTimedOut, and leaves nothing pending."""
    evaluator = reference_evaluator(loop_model())
    started = time.monotonic()
    with pytest.raises(RunTimedOut):
        run_budgeted(evaluator, {"x": np.zeros(2, np.float32)}, 0.2)
    assert time.monotonic() - started < 10
    quick = reference_evaluator(loop_model(2))
    outcomes = set()
    for budget in np.linspace(1e-5, 3e-3, 60):
        try:
            (y,) = run_budgeted(quick, {"x": np.ones(2, np.float32)}, float(budget))
            outcomes.add(y.tolist() == [1.0, 1.0])
        except RunTimedOut:
            outcomes.add("timed out")
        time.sleep(0.005)  # a stray exception would land here
    assert outcomes <= {True, "timed out"}


# --- profiles ----------------------------------------------------------------------------

BAD_PROFILES = {
    "deep-nesting": ("description = 'x'\nops = " + "[" * 3000 + "]" * 3000, "nested too deeply"),
    "nested-past-the-schema": (
        'description = "x"\n[ops.Max]\ntypes = [[["float32"]]]\n',
        "nested 6 levels deep",
    ),
    "name-with-slash": ('description = "x"\nname = "a/b"\n', 'name = "a/b"'),
    "name-with-newline": ('description = "x"\nname = "a\\nb"\n', 'name = "a\\nb"'),
    "name-too-long": ('description = "x"\nname = "' + "é" * 128 + '"\n', "255 bytes"),
    "misspelt-op": ('description = "x"\n[ops.Argmax]\nabsent = true\n', "did you mean 'ArgMax'"),
    "bool-in-opsets": ('description = "x"\n[ops.Max]\nopsets = [true, 99]\n', "[true, 99]"),
    "bool-as-rank": ('description = "x"\n[ops.ArgMax]\nmin_rank = false\n', "min_rank = false"),
    "int-as-bool": ('description = "x"\n[ops.Max]\nbroadcast = 0\n', "broadcast = 0"),
    "misspelt-key": ('descripton = "x"\n', "did you mean 'description'"),
    "misspelt-type": ('description = "x"\n[ops.Max]\ntypes = ["flaot32"]\n', "'float32'"),
    "two-line-description": ('description = "a\\nb"\n', "'description'"),
}


@pytest.mark.parametrize("command", ["convert", "lower"])
@pytest.mark.parametrize("case", sorted(BAD_PROFILES))
def test_malformed_profiles_are_refused(tmp_path, case: str, command: str):
    text, fragment = BAD_PROFILES[case]
    profile = tmp_path / "bad.toml"
    profile.write_text(text, encoding="utf-8")
    path = save(good_model(), tmp_path)
    args = {
        "convert": ["convert", path, "--opset", "12", "--profile", profile],
        "lower": ["lower", path, "--profile", profile],
    }[command]
    run_refused(tmp_path, path, args, str(profile), fragment)
    with pytest.raises(ProfileError, match=r"bad\.toml"):
        load_profile(profile)


# --- opset imports -----------------------------------------------------------------------


def imported(*imports: tuple[str, int]) -> onnx.ModelProto:
    model = good_model()
    del model.opset_import[:]
    model.opset_import.extend(helper.make_opsetid(d, v) for d, v in imports)
    return model


ALL = ("convert", "lower", "inspect", "verify")


@pytest.mark.parametrize("command", ALL)
@pytest.mark.parametrize("order", ["plain-first", "alias-first"])
def test_default_domain_at_two_versions_is_refused(tmp_path, order: str, command: str):
    imports = [("", 13), ("ai.onnx", 18)]
    path = save(imported(*(imports if order == "plain-first" else imports[::-1])), tmp_path)
    line = command_line(command, path, tmp_path / "out.onnx")
    run_refused(tmp_path, path, line, "imports the default domain twice", "(opset 18)")


@pytest.mark.parametrize("command", ALL)
@pytest.mark.parametrize("imports", [[("ai.onnx", 13)], [("", 13), ("ai.onnx", 13)]])
def test_the_ai_onnx_spelling_is_the_default_domain(tmp_path, imports, command: str):
    path = save(imported(*imports), tmp_path)
    result = invoke(*command_line(command, path, tmp_path / "out.onnx"))
    assert result.exit_code == 0, result.output


# --- function calls ----------------------------------------------------------------------


def recursive_functions() -> onnx.ModelProto:
    model = function_dag(2)
    model.functions[0].node[0].CopyFrom(helper.make_node("f2", ["a"], ["b"], domain="local"))
    return model


@pytest.mark.parametrize("command", ALL)
@pytest.mark.parametrize("case", ["dag-40-levels", "recursive"])
def test_function_calls_beyond_the_budget_are_refused(tmp_path, monkeypatch, case, command):
    """Refused before onnx's checker or shape inference, which would expand 2^40 calls."""

    def expanded(*args, **kwargs):
        raise AssertionError("shape inference ran on the model")

    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", expanded)
    model = function_dag(40) if case == "dag-40-levels" else recursive_functions()
    path = save(model, tmp_path)
    fragment = "3.3e+12 nodes" if case == "dag-40-levels" else "call themselves"
    run_refused(tmp_path, path, command_line(command, path, tmp_path / "out.onnx"), fragment)


def test_function_calls_within_the_budget_convert():
    converted = maxlower.convert(function_dag(10), 12)
    onnx.checker.check_model(converted, full_check=True)
