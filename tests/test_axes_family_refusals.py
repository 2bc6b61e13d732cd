"""The axes family's refusals through both doors: each negative golden case of
tests/golden/version_reductions.onnxtxt and version_axes_ops.onnxtxt, written to a file and
converted by `maxlower convert`, exits 3 with one `maxlower: error:` line that names the
op, the reason and a remedy that is not the refused target, leaves no output file, and
says what `maxlower.convert` raises for the same model (the rows of docs/bad-inputs.md)."""

from __future__ import annotations

import re

import onnx
import pytest
from click.testing import CliRunner

import maxlower
from maxlower.cli import cli
from passes import ConversionError
from tests.golden import GOLDEN_DIR, load_cases

CASES = [
    pytest.param(case, id=case.name)
    for name in ("version_reductions", "version_axes_ops")
    for case in load_cases(GOLDEN_DIR / f"{name}.onnxtxt")
    if case.error
]


def test_every_class_is_drawn():
    assert len(CASES) >= 8


@pytest.mark.parametrize("case", CASES)
def test_axes_family_refusal_is_one_line_exit_3(case, tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save(case.source_model(), path)
    result = CliRunner().invoke(
        cli, ["convert", str(path), "--opset", str(case.target)], catch_exceptions=False
    )
    assert result.exit_code == 3, result.output
    line = result.stderr
    assert line.startswith("maxlower: error: ") and line.count("\n") == 1, line
    assert "Traceback" not in line and "To make it possible: " in line
    assert case.error in line
    remedy = line.split("To make it possible: ", 1)[1]
    assert not re.search(rf"\bopset {case.target}\b(?! or later)", remedy), remedy
    assert [p.name for p in tmp_path.iterdir()] == ["model.onnx"]
    with pytest.raises(ConversionError) as info:
        maxlower.convert(case.source_model(), case.target)
    assert str(info.value) in line
