"""Fuzz issue 18's classes: random family models lowered for one or two accelerator profiles
(opset windows, final int64 rejections, graph outputs, ranks), and malformed accelerator keys.

For every case: `lower` gives a model that holds no node the profiles reject, passes the full
checker, sits in their opset window and computes what the input does (`maxlower.verify`), or
refuses in one line with exit code 3; and `maxlower.check` agrees (it lists a node without an
exact form exactly when `lower` refuses for a rejected node). Budget:
EXAMPLES cases per test in the slow tier, a small share in the default tier
(tests/budget.py), derandomised in both.
"""

from __future__ import annotations

import onnx
import pytest
from hypothesis import HealthCheck, given, note

import maxlower
from maxlower.api import lower
from maxlower.profiles import ProfileError, load_profiles, tomllib
from maxlower.profiles.rules import parse_profile
from passes.errors import ConversionError
from tests import budget
from tests.strategies_accel import AcceleratorCase, accelerator_cases, bad_accelerator_profiles
from tests.test_accel_conformance import rejected_nodes

EXAMPLES = 25
SETTINGS = dict(
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _default_opset(model: onnx.ModelProto) -> int:
    return {o.domain: o.version for o in model.opset_import}[""]


@budget.fuzz(EXAMPLES, **SETTINGS)
@given(accelerator_cases())
def test_lowering_for_accelerators_is_exact_or_refused_as_check_foresees(case: AcceleratorCase):
    note(case.text())
    profiles = load_profiles(list(case.profiles))
    try:
        lowered = lower(case.model, list(case.profiles))
    except ConversionError as error:
        assert "\n" not in str(error) and "To make it possible:" in str(error)
        try:
            report = maxlower.check(case.model, list(case.profiles))
        except ConversionError as again:  # conversion into the window: the same refusal
            assert str(again) == str(error)
            return
        assert report.exit_code() == 3 and report.unlowered
        return
    onnx.checker.check_model(lowered, full_check=True)
    assert rejected_nodes(lowered, profiles) == []
    if profiles.opsets is not None:
        first, last = profiles.opsets
        assert first <= _default_opset(lowered) <= last
    report = maxlower.check(case.model, list(case.profiles))
    assert report.exit_code() == 0 and not report.unlowered
    verdict = maxlower.verify(case.model, lowered, trials=2)
    assert verdict.status != "different", verdict.summary()


@budget.fuzz(EXAMPLES, **SETTINGS)
@given(bad_accelerator_profiles())
def test_malformed_accelerator_keys_are_refused_in_one_line(bad):
    kind, text = bad
    note(text)
    with pytest.raises(ProfileError) as info:
        parse_profile(tomllib.loads(text), "fuzzed", None, text)
    assert "\n" not in str(info.value), kind
