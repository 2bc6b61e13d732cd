"""`maxlower check` and `maxlower.check`: the pre-flight report, its exit codes, and the two
doors giving the same answer (issue 18)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import onnx
import pytest
from click.testing import CliRunner

import maxlower
from maxlower.cli import cli
from tests import doc_pages, tiers
from tests.fixtures.catalog import fixtures
from tests.test_profiles import model_text

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = {f.name: f for f in fixtures()}
PROFILES = ["coreml", "ncnn", "openvino", "qnn-htp", "rknn", "sentis", "tflite"]


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def write(tmp_path, text: str, name: str = "m.onnx"):
    path = tmp_path / name
    onnx.save(onnx.parser.parse_model(text), path)
    return path


ACCEPTED = model_text("(float[2,3] x) => (int64[2,1] z)", "y = ArgMax <axis=1> (x)\n  z = Neg (y)")
FIXABLE = model_text(
    "(float[2,3] x) => (int64[2,1] y)", "y = ArgMax <axis=1, select_last_index=1> (x)"
)
UNFIXABLE = model_text("(int64[3] a, int64[3] b) => (int64[3] y)", "y = Max (a, b)")
FAMILY_ONLY = model_text("(float[2,3] a, float[2,3] b) => (float[2,3] y)", "y = Max (a, b)")


@pytest.mark.parametrize(
    ("text", "profile", "code", "strict_code", "says"),
    [
        (ACCEPTED, "qnn-htp", 0, 0, "the Max/Min family fits 'qnn-htp' as it is; 1 other op"),
        (FAMILY_ONLY, "qnn-htp", 0, 0, "verdict: 'qnn-htp' accepts the model as it is\n"),
        (FIXABLE, "tflite", 0, 1, "would rewrite 1 node"),
        (UNFIXABLE, "qnn-htp", 3, 3, "cannot be made acceptable exactly"),
    ],
)
def test_exit_codes_and_verdicts(tmp_path, text, profile, code, strict_code, says):
    path = write(tmp_path, text)
    result = invoke("check", path, "-p", profile)
    assert result.exit_code == code and says in result.output
    assert invoke("check", path, "-p", profile, "--strict").exit_code == strict_code
    assert list(tmp_path.iterdir()) == [path]  # nothing written


def test_report_names_rule_source_form_and_cost(tmp_path):
    result = invoke("check", write(tmp_path, FIXABLE), "-p", "tflite")
    out = result.output
    assert "rule: [ops.ArgMax] select_last_index; source: onnx2tf/ops/ArgMax.py" in out
    assert "lower: arg_max_select_last_index_to_reversal; 3 nodes, estimated cost" in out
    result = invoke("check", write(tmp_path, UNFIXABLE), "-p", "qnn-htp")
    assert "to make it possible: int64 has no exact narrower type" in result.output


OTHER_OPS = model_text(
    "(float[1,2,4] x, bool c) => (float[1,2,8] y, float[1,2] i)",
    """p = Pad <mode = "reflect"> (x, pads)
  y = If (c) <then_branch = g1 () => (float[1,2,8] t) { t = Identity (p) },
              else_branch = g2 () => (float[1,2,8] e) { e = Neg (p) }>
  i = ReduceMax <axes = [2], keepdims = 0> (x)""",
    inits="int64[6] pads = {0, 0, 2, 0, 0, 2}",
)


def test_check_names_the_ops_its_profile_says_nothing_about(tmp_path):
    """'ncnn' judges the family only: a model's Pad, If and the ops inside its branches are
    listed as not checked, and the verdict does not say the model is accepted (issue 30)."""
    path = write(tmp_path, OTHER_OPS)
    result = invoke("check", path, "-p", "ncnn", "--json", tmp_path / "r.json")
    assert "not checked against 'ncnn': 4 other ops (Identity, If, Neg, Pad)" in result.output
    assert "accepts the model" not in result.output
    assert "4 other ops were not checked against this profile" in result.output
    document = json.loads((tmp_path / "r.json").read_text())
    assert document["unchecked_ops"] == {"ncnn": ["Identity", "If", "Neg", "Pad"]}
    assert maxlower.check(onnx.load(path), "ncnn").unchecked == {
        "ncnn": ["Identity", "If", "Neg", "Pad"]
    }
    # a profile with a kernel registry judges every op: nothing is left unchecked
    assert maxlower.check(onnx.load(path), "onnxruntime").unchecked == {}
    both = maxlower.check(onnx.load(path), ["onnxruntime", "ncnn"])
    assert set(both.unchecked) == {"ncnn"}


def test_opset_window_and_opset_option_are_reported(tmp_path):
    path = write(tmp_path, model_text("(float[3] a) => (float[3] y)", "y = Max (a, a)", 18))
    result = invoke("check", path, "-p", "sentis")
    assert result.exit_code == 0 and "converts to opset 15 first" in result.output
    assert invoke("check", path, "-p", "sentis", "--strict").exit_code == 1
    refused = invoke("check", path, "-p", "sentis", "--opset", "17")
    assert refused.exit_code == 2 and "outside profile 'sentis'" in refused.output
    assert "opsets 7-15" in refused.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-p", "tensorflow"], "no profile named 'tensorflow'"),
        (["-p", "qnn-htp", "--opset", "0"], "opset"),
        ([], "Missing option"),
    ],
)
def test_bad_invocations_are_exit_2_one_line(tmp_path, args, message):
    path = write(tmp_path, ACCEPTED)
    result = invoke("check", path, *args, "--json", tmp_path / "out.json")
    assert result.exit_code == 2 and message in result.output
    assert result.output.count("\n") == 1 and result.output.startswith("maxlower: error:")
    assert not (tmp_path / "out.json").exists()


# (the larger zoo networks in the slow tier: tests/tiers.py)
@pytest.mark.parametrize(
    "name", tiers.split(sorted(FIXTURES), keep=lambda name: not tiers.large_network(name))
)
def test_cli_and_library_give_the_same_report(tmp_path, name):
    path = FIXTURES[name].path
    for profiles in [[p] for p in PROFILES] + [["qnn-htp", "onnxruntime"], ["rknn", "tflite"]]:
        out = tmp_path / "report.json"
        out.unlink(missing_ok=True)
        args = [a for p in profiles for a in ("-p", p)]
        result = invoke("check", path, *args, "--json", out, "-q")
        try:
            library = maxlower.check(onnx.load(path), profiles)
        except maxlower.ConversionError as error:  # no conversion into the opset window
            assert result.exit_code == 3 and result.output == f"maxlower: error: {error}\n"
            assert not out.exists()
            continue
        assert result.exit_code == library.exit_code(), (profiles, result.output)
        document = json.loads(out.read_text())
        assert document.pop("input") == str(path)
        assert document == json.loads(json.dumps(library.to_dict())), profiles


def readme_check_examples() -> list[tuple[str, str]]:
    """(command, output) of each `$ maxlower check ...` example in README.md and docs/*.md
    (docs/cli.md holds one per target)."""
    examples = []
    for _, block in doc_pages.blocks("text"):
        for chunk in re.split(r"^\$ ", block, flags=re.M)[1:]:
            command, _, output = chunk.partition("\n")
            if command.startswith("maxlower check "):
                examples.append((command.split("#")[0].strip(), output.strip("\n")))
    return examples


def test_readme_shows_one_real_example_per_target(monkeypatch):
    examples = readme_check_examples()
    shown = {p for command, _ in examples for p in re.findall(r"-p (\S+)", command)}
    assert set(PROFILES) <= shown
    monkeypatch.chdir(ROOT)
    for command, output in examples:
        result = invoke(*shlex.split(command)[1:])
        assert result.output.strip("\n") == output, command
