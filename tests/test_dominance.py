"""Never lose to onnx.version_converter: on the committed corpus (tests/fixtures/corpus.py),
no pair where the converter's result is correct and maxlower's is not; no invalid or wrong
maxlower result; every refusal with a remedy that does not name the target that failed.

`benchmarks/whole_model.py` runs every model to every target (figures in
benchmarks/RESULTS.md). Here, within CI's budget: every third-party model (sklearn,
tf2onnx, patterns) to every target, and the PyTorch models and their shape-less copies of
at most MAX_NODES nodes to a fixed, deterministic share of the targets (by a hash of
model and target). The converter's categories come from the benchmark's committed record
(`tests/fixtures/dominance_converter.json`) when it was written with this onnx, else the
converter runs here too. maxlower always runs here: that is what is tested.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
import zlib

import onnx
import pytest

from tests import tiers
from tests.fixtures.catalog import HERE, outputs_of
from tests.fixtures.corpus import CONVERTER_VERDICTS, TARGETS, entries

MAX_NODES = 120
SHARE = 3  # one PyTorch pair in SHARE runs here


@functools.cache
def benchmark():
    script = HERE.parents[1] / "benchmarks" / "whole_model.py"
    spec = importlib.util.spec_from_file_location("whole_model_dominance", script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it executes
    spec.loader.exec_module(module)
    return module


def _sampled(name: str, target: int) -> bool:
    if not name.startswith(("pytorch/", "shapeless/")):
        return True
    return zlib.crc32(f"{name}@{target}".encode()) % SHARE == 0


def _cases():
    cases = []
    for entry in entries():
        if len(onnx.load(entry.path, load_external_data=False).graph.node) > MAX_NODES:
            continue
        targets = [t for t in TARGETS if _sampled(entry.name, t)]
        if targets:
            cases.append(pytest.param(entry, targets, id=entry.name))
    # the larger zoo networks in the slow tier (tests/tiers.py)
    return tiers.split(cases, keep=lambda case: not tiers.large_network(case[0].name))


CASES = _cases()


@functools.cache
def converter_verdicts() -> dict[str, str] | None:
    if not CONVERTER_VERDICTS.exists():
        return None
    record = json.loads(CONVERTER_VERDICTS.read_text())
    if record["onnx"] != onnx.__version__ or record["targets"] != list(TARGETS):
        return None
    return record["verdicts"]


def test_the_record_covers_the_corpus():
    """A model added to the corpus needs the benchmark rerun (its record written)."""
    record = json.loads(CONVERTER_VERDICTS.read_text())
    missing = [
        f"{e.name}@{t}"
        for e in entries()
        for t in TARGETS
        if f"{e.name}@{t}" not in record["verdicts"]
    ]
    assert not missing, f"rerun python benchmarks/whole_model.py: {missing[:5]}"


def test_the_sample_spans_every_exporter_and_target():
    groups = {case.values[0].group for case in CASES}
    assert groups == {"pytorch", "shapeless", "sklearn", "tf2onnx", "patterns"}
    assert {t for case in CASES for t in case.values[1]} == set(TARGETS)


@pytest.mark.parametrize(("entry", "targets"), CASES)
def test_maxlower_is_correct_wherever_the_converter_is(entry, targets):
    bench = benchmark()
    model = entry.load()
    feeds = entry.feeds(model)
    expected, _ = outputs_of(model, feeds)
    verdicts = converter_verdicts()
    problems = []
    for target in targets:
        mine = bench.evaluate(entry, model, feeds, expected, "maxlower", target)
        if verdicts is not None:
            theirs = verdicts[f"{entry.name}@{target}"]
        else:
            theirs = bench.evaluate(
                entry, model, feeds, expected, "onnx.version_converter", target
            ).category
        if theirs in bench.CORRECT and mine.category not in bench.CORRECT:
            problems.append(f"→{target}: the converter is {theirs}, maxlower {mine.category}")
        if mine.category not in (*bench.CORRECT, "refused"):
            problems.append(f"→{target}: maxlower {mine.category}: {mine.message}")
        if mine.remedy_problem is not None:
            problems.append(f"→{target}: {mine.remedy_problem}: {mine.message}")
    assert not problems, "\n".join(problems)


def test_the_checks_can_fail():
    """The benchmark's rules see a miss and a remedy that names the failed target."""
    bench = benchmark()
    pairs = [
        bench.Pair("m", "onnx.version_converter", 11, "ok"),
        bench.Pair("m", "maxlower", 11, "refused", "no"),
        bench.Pair("m", "onnx.version_converter", 13, "refused"),
        bench.Pair("m", "maxlower", 13, "ok"),
    ]
    assert [(p.fixture, p.target) for p in bench.misses(pairs)] == [("m", 11)]
    assert bench.remedy_problem("x. To make it possible: a target opset in 11..12", 12)
    assert bench.remedy_problem("x. To make it possible: target opset 9 or later", 11)
    assert bench.remedy_problem("x without a remedy", 11) == "no remedy"
    assert bench.remedy_problem("x. To make it possible: a target opset in 11..12", 13) is None
