"""Planted bugs (tests/mutants.py): default `maxlower verify` reports every one of them,
`convert --verify` refuses to write them, and the correct conversion of the same models
passes (so the verifier does not simply fail everything)."""

from __future__ import annotations

import pathlib

import numpy as np
import onnx
import pytest
from click.testing import CliRunner

import maxlower
from maxlower.cli import cli
from maxlower.runtime import bit_equal, run_model
from tests.mutants import MUTANTS, Mutant

BY_NAME = {m.name: m for m in MUTANTS}
REQUIRED = {
    "select_last_index_dropped",
    "tie_breaking_swapped",
    "max_where_greater_without_nan",
    "noop_with_empty_axes_dropped",
    "keepdims_flipped_for_size_one_axis",
    "int32_max_through_float32",
    "int64_max_through_float64",
    "bool_reduce_max_empty_set_true",
    "negative_axis_wrong_rank",
    "broadcast_along_wrong_axis",
    "empty_reduce_max_zero",
    "argmax_keepdims_dropped",
    # the Min family: what does not mirror, and Max code reused where Min was meant
    "min_as_negated_max",
    "min_with_the_max_tie_break",
    "argmin_reversal_through_argmax",
    "empty_reduce_min_max_identity",
}


def invoke(*args) -> object:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_the_required_mutants_are_there():
    assert len(MUTANTS) >= 16
    assert len(BY_NAME) == len(MUTANTS)
    assert set(BY_NAME) >= REQUIRED


@pytest.fixture(scope="module")
def applied() -> dict[str, onnx.ModelProto]:
    return {m.name: m.apply() for m in MUTANTS}


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_mutant_changes_the_meaning(mutant: Mutant, applied):
    """On the witness input the broken model disagrees with the original (or fails)."""
    broken = applied[mutant.name]
    onnx.checker.check_model(broken, full_check=True)
    expected, _ = run_model(mutant.source_model(), mutant.witness)
    try:
        actual, _ = run_model(broken, mutant.witness)
    except Exception:  # failing where the original runs is a change of meaning too
        return
    assert not all(bit_equal(e, a) for e, a in zip(expected, actual, strict=True))
    # ... and the registry is restored afterwards: the real conversion is correct there.
    converted = maxlower.convert(mutant.source_model(), mutant.target)
    fixed, _ = run_model(converted, mutant.witness)
    assert all(bit_equal(e, a) for e, a in zip(expected, fixed, strict=True))


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_default_verify_reports_the_mutant(mutant: Mutant, applied):
    report = maxlower.verify(mutant.source_model(), applied[mutant.name])
    assert report.status == "different", report.summary()
    assert not report.ok
    differing = [o for o in report.outputs if o.status == "different"]
    assert differing and differing[0].first is not None
    assert differing[0].first.seed == 0
    # The report says where: a diverging node, unless the candidate could not run at all.
    assert report.divergence is not None or differing[0].first.kind == "error"


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_correct_conversion_of_the_mutant_model_verifies(mutant: Mutant):
    converted = maxlower.convert(mutant.source_model(), mutant.target)
    report = maxlower.verify(mutant.source_model(), converted)
    assert report.ok, report.summary()


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_cli_verify_exits_1_on_the_mutant(mutant: Mutant, applied, tmp_path: pathlib.Path):
    original, broken = tmp_path / "original.onnx", tmp_path / "broken.onnx"
    onnx.save(mutant.source_model(), original)
    onnx.save(applied[mutant.name], broken)
    result = invoke("verify", original, broken)
    assert result.exit_code == 1, result.output
    assert "DIFFERENT" in result.output


# Mutants whose rewrite changes the shape of a graph output.
CHANGE_AN_OUTPUT_SHAPE = {"keepdims_flipped_for_size_one_axis", "argmax_keepdims_dropped"}


@pytest.mark.parametrize("name", ["int32_max_through_float32", "argmax_keepdims_dropped"])
def test_convert_verify_refuses_a_broken_conversion(name: str, tmp_path: pathlib.Path, monkeypatch):
    mutant = BY_NAME[name]
    source, output = tmp_path / "model.onnx", tmp_path / "out.onnx"
    onnx.save(mutant.source_model(), source)
    with mutant.installed():
        plain = invoke("convert", source, "--opset", mutant.target, "-o", output)
        if name in CHANGE_AN_OUTPUT_SHAPE:
            # the graph outputs keep their declared types, so the result's full check
            # catches these before any verification: a bug in maxlower, exit 4
            assert plain.exit_code == 4 and "internal error" in plain.output
            assert not output.exists()
            return
        assert plain.exit_code == 0 and output.exists()  # without --verify it goes unnoticed
        output.unlink()
        result = invoke("convert", source, "--opset", mutant.target, "-o", output, "--verify")
        assert result.exit_code == 1, result.output
        assert not output.exists()
        assert not list(tmp_path.glob(".out.onnx*")), "no temporary file is left behind"
        assert "DIFFERENT" in result.output and "not written" in result.output
        forced = invoke(
            "convert", source, "--opset", mutant.target, "-o", output, "--verify", "--force"
        )
    assert forced.exit_code == 1, forced.output
    assert output.exists()
    written = onnx.load(output)
    actual, _ = run_model(written, mutant.witness)
    expected, _ = run_model(mutant.source_model(), mutant.witness)
    assert not all(bit_equal(e, a) for e, a in zip(expected, actual)), "--force wrote the mutant"


def test_witness_through_inputs_file(tmp_path: pathlib.Path, applied):
    """--inputs runs exactly the given values: the witness alone exposes the mutant."""
    mutant = BY_NAME["int64_max_through_float64"]
    original, broken = tmp_path / "original.onnx", tmp_path / "broken.onnx"
    onnx.save(mutant.source_model(), original)
    onnx.save(applied[mutant.name], broken)
    np.savez(tmp_path / "witness.npz", **mutant.witness)
    result = invoke("verify", original, broken, "--inputs", tmp_path / "witness.npz")
    assert result.exit_code == 1, result.output
    assert "1 trials" in result.output
    assert f"reference {2**53 + 1}, candidate {2**53}" in result.output
