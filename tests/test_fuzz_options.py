"""Fuzzed bad option values and profile files (tests/strategies_options.py): every one is
refused with exit code 2 and one `maxlower: error: ...` line, never a traceback or exit 4.
A small budget (EXAMPLES cases per test in the slow tier, fewer in the default tier:
tests/budget.py): the refusals come before any model is read."""

from __future__ import annotations

import pathlib
import tempfile

import pytest
from click.testing import CliRunner
from hypothesis import given

import maxlower
from maxlower.cli import cli
from tests import budget
from tests.strategies_options import bad_library_options, bad_option_lines, bad_profile_texts
from tests.test_bad_inputs import good_model, save

EXAMPLES = 150


def assert_refused(args: list) -> None:
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 2, (args, result.exit_code, result.output)
    assert result.stderr.startswith("maxlower: error: "), (args, result.stderr)
    assert result.stderr.count("\n") == 1, (args, result.stderr)
    assert "Traceback" not in result.output


@budget.fuzz(EXAMPLES, derandomize=True)
@given(bad_option_lines())
def test_bad_option_values_are_refused_in_one_line(case):
    _, args = case
    with tempfile.TemporaryDirectory() as directory:
        model = save(good_model(), pathlib.Path(directory))
        assert_refused([model if a == "{model}" else a for a in args])


@budget.fuzz(EXAMPLES, derandomize=True)
@given(bad_profile_texts())
def test_malformed_profiles_are_refused_in_one_line(case):
    _, text = case
    with tempfile.TemporaryDirectory() as directory:
        directory = pathlib.Path(directory)
        model = save(good_model(), directory)
        profile = directory / "fuzzed.toml"
        profile.write_text(text, encoding="utf-8")
        assert_refused(["lower", model, "--profile", profile, "--dry-run"])
        assert_refused(["convert", model, "--opset", "12", "--profile", profile, "--dry-run"])


@budget.fuzz(EXAMPLES, derandomize=True)
@given(bad_library_options())
def test_bad_library_options_raise_invalid_model_error(options):
    with pytest.raises(maxlower.InvalidModelError, match=r"^--"):
        maxlower.verify(good_model(), good_model(), **options)
