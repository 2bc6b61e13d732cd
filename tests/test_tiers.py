"""The rules that keep the two tiers (docs/testing.md) what they are, so that they cannot rot
silently: `python -m pytest` runs the default tier and `python -m pytest -m slow` the slow
one, each test is in exactly one of them, every test file has tests in the default tier (so
that it covers every module), every fuzz test has an item in each tier with its budget from
tests/budget.py, and no test reads a budget from an environment variable of its own.
"""

from __future__ import annotations

import pathlib
import re
import shlex
import sys

import pytest
from hypothesis import settings

from tests import budget

ROOT = pathlib.Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
TEST_FILES = sorted(p.relative_to(ROOT).as_posix() for p in TESTS.glob("test_*.py"))

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib


def tier_of(item: pytest.Item) -> str:
    return "slow" if item.get_closest_marker("slow") else "default"


@pytest.fixture
def whole_suite(collected_items: list[pytest.Item]) -> list[pytest.Item]:
    """Every test of the suite, both tiers: the run must have collected every test file."""
    files = {item.nodeid.split("::")[0] for item in collected_items}
    missing = sorted(set(TEST_FILES) - files)
    if missing:
        pytest.skip(f"this run did not collect the whole suite ({missing[0]}, ...)")
    return collected_items


def test_pytest_runs_the_default_tier_and_minus_m_slow_the_slow_tier():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    ini = options["ini_options"]
    args = shlex.split(ini["addopts"])
    assert "--strict-markers" in args  # a misspelt marker is an error, not a third tier
    assert args[args.index("-m") + 1] == "not slow"
    assert any(line.startswith("slow:") for line in ini["markers"])
    assert not budget.runs_slow_tier("not slow") and budget.runs_slow_tier("slow")


def test_ci_runs_both_tiers_and_fails_on_either():
    script = (ROOT / ".ci" / "run").read_text()
    commands = [line.strip() for line in script.splitlines() if "python -m pytest" in line]
    assert "set -euo pipefail" in script  # any exit code but 0 fails the run (5: no tests)
    assert [c for c in commands if not c.startswith("#")] == [
        "python -m pytest -n auto",
        "python -m pytest -n auto -m slow",
    ]


def test_the_tiers_partition_the_suite(whole_suite: list[pytest.Item]):
    tiers = {}
    for item in whole_suite:
        assert tiers.setdefault(item.nodeid, tier_of(item)) == tier_of(item), item.nodeid
    by_tier = {tier: {n for n, t in tiers.items() if t == tier} for tier in budget.TIERS}
    assert set(tiers.values()) == set(budget.TIERS)
    assert by_tier["default"] and by_tier["slow"]
    # every test file has default-tier tests: the default tier covers every module
    default_files = {nodeid.split("::")[0] for nodeid in by_tier["default"]}
    assert sorted(set(TEST_FILES) - default_files) == []


def test_every_fuzz_test_has_an_item_in_each_tier(whole_suite: list[pytest.Item]):
    fuzz = [item for item in whole_suite if getattr(item, "function", None) is not None]
    hypothesis_tests = [item for item in fuzz if getattr(item.function, "is_hypothesis_test", 0)]
    assert len(hypothesis_tests) > 40
    for item in hypothesis_tests:  # its budget from budget.fuzz (which puts it in both tiers)
        assert "tier" in item.fixturenames, f"{item.nodeid}: not @budget.fuzz(n, ...)"
    twins: dict[str, set[str]] = {}
    for item in whole_suite:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "tier" in params:
            assert tier_of(item) == params["tier"], item.nodeid
            ids = item.nodeid.split("[", 1)[1].removesuffix("]").split("-")
            ids.remove(params["tier"])  # the tier's part of the id: the rest names the twin
            twins.setdefault(f"{item.nodeid.split('[')[0]}[{'-'.join(ids)}]", set()).add(
                params["tier"]
            )
    assert twins and all(tiers == set(budget.TIERS) for tiers in twins.values()), twins


def test_the_default_tier_runs_a_small_share_of_every_budget_the_same_every_time():
    assert budget.MULTIPLIERS["slow"] >= 1  # the slow tier runs every budget in full
    assert 0 < budget.MULTIPLIERS["default"] <= 0.1
    assert settings.get_profile("default").derandomize
    assert settings.get_profile("default").database is None
    if settings.get_current_profile_name() == "default":
        assert budget.examples(1000) == 1000 * budget.MULTIPLIERS["default"]
        assert budget.examples(1) == 1  # never none
        assert settings.default.derandomize


# The suite's one variable of its own, and not a budget (tests/test_report_browser.py)
VARIABLES = {"MAXLOWER_UPDATE_SCREENSHOT"}


def test_no_test_reads_a_budget_from_an_environment_variable():
    """Budgets come from tests/budget.py; the thirteen MAXLOWER_FUZZ_*_EXAMPLES-like variables
    each file once had (MAXLOWER_FUZZ_SECONDS, MAXLOWER_EXT_DATA_EXAMPLES, ...) are gone."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        if path == pathlib.Path(__file__):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            names = set(re.findall(r"\bMAXLOWER_\w+", line)) - VARIABLES
            if names:
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == []


def test_every_thinned_matrix_is_a_test_with_items_in_both_tiers(whole_suite):
    """tests/tiers.py THINNED names tests that exist (a misspelt one would thin nothing),
    each keeping items in the default tier and giving some to the slow one."""
    from tests import tiers

    by_test: dict[str, set[str]] = {}
    for item in whole_suite:
        by_test.setdefault(item.nodeid.split("[")[0], set()).add(tier_of(item))
    for test in tiers.THINNED:
        assert by_test.get(test) == {"default", "slow"}, (test, by_test.get(test))
