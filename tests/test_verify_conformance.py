"""No false alarms: every correct conversion of the 41 conformance cases, to every opset it
converts to, passes `maxlower convert --verify` (exit 0, file written), and each case model
is equivalent to itself over 20 seeds.

The seeds of the conversions rotate through 0..19 so that every seed is exercised here;
`benchmarks/verify_cost.py --sweep` runs all 20 seeds on every conversion (RESULTS.md).

The default tier runs both tests on SAMPLE, one case of each op and of the element types and
axes that verification generates inputs for differently (the Min family's cases are in the
default tier at a rotating opset each: tests/test_verify_min_family.py); the slow tier runs
the other cases.
"""

from __future__ import annotations

import pathlib

import onnx
import pytest
from click.testing import CliRunner

import maxlower
from maxlower.cli import cli
from passes import ConversionError
from tests import tiers
from tests.conformance import family_cases

LATEST = onnx.defs.onnx_opset_version()
CASES = {case.name: case for case in family_cases()}
SEEDS = 20
SAMPLE = {
    "test_argmax_keepdims_example_select_last_index",
    "test_max_float16",
    "test_max_int64",
    "test_reduce_max_keepdims_example",  # axes given at run time
    "test_reduce_max_bool_inputs",
}
NAMES = tiers.split(sorted(CASES), keep=SAMPLE.__contains__)


@pytest.mark.parametrize("name", NAMES)
def test_convert_verify_passes_every_conversion(name: str, tmp_path: pathlib.Path):
    case = CASES[name]
    source = tmp_path / "case.onnx"
    onnx.save(case.model, source)
    runner = CliRunner()
    converted = 0
    for opset in range(1, LATEST + 1):
        try:
            maxlower.convert(case.model, opset)
        except ConversionError:
            continue  # tests/test_conformance.py checks that these refusals are the known ones
        output = tmp_path / f"case.{opset}.onnx"
        seed = (sorted(CASES).index(name) + opset) % SEEDS
        result = runner.invoke(
            cli,
            [
                "convert",
                str(source),
                "--opset",
                str(opset),
                "-o",
                str(output),
                "--verify",
                "--seed",
                str(seed),
            ],
            catch_exceptions=False,
        )
        assert result.exit_code == 0, f"{name}@{opset} seed {seed}:\n{result.output}"
        assert "verification: EQUIVALENT" in result.output
        assert output.exists()
        converted += 1
    assert converted >= LATEST - 5


@pytest.mark.parametrize("name", NAMES)
def test_case_model_is_equivalent_to_itself_over_20_seeds(name: str):
    model = CASES[name].model
    for seed in range(SEEDS):
        report = maxlower.verify(model, model, seed=seed)
        assert report.ok, f"{name} seed {seed}:\n{report.summary()}"
        # A model against itself, in the same runner, has nothing even unspecified.
        assert all(o.status == "equal" for o in report.outputs), report.summary()
