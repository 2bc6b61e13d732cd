"""The suite's two tiers and its hypothesis profiles (docs/testing.md).

Tiers: a test marked `slow` is in the slow tier, every other test in the default tier.
pyproject.toml's addopts deselect the slow tier (`-m "not slow"`), so `python -m pytest`
runs the default tier and `python -m pytest -m slow` the slow tier; each test is in exactly
one of them (tests/test_tiers.py checks the rules that keep it so).

Hypothesis: one profile per tier, chosen by the tier the run selects, or by hypothesis's own
`--hypothesis-profile`. They differ in one multiplier of every fuzz test's budget
(tests/budget.py) and in that the default tier's is derandomised; what is the same
everywhere is said here once:
- no deadline: a case runs onnxruntime and the checker, whose times vary with the machine's
  load (the CI runs two workers on two cores);
- the health checks for slow and large draws are off: the strategies draw whole models, which
  are large and slow to draw by design, and some filter for the cases a test is about;
- no explain phase: after a failure it runs every case again under `sys.settrace`, which
  makes a case that converts and runs a model a hundred times slower. A test that expects a
  failure (a planted bug the harness must find) then ran for over an hour in CI.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, settings

from tests import budget, tiers

SHARED = settings(
    deadline=None,
    phases=[phase for phase in Phase if phase is not Phase.explain],
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
# The default tier's: a small share of every budget (budget.MULTIPLIERS), the same cases every
# run.
settings.register_profile("default", SHARED, derandomize=True, database=None)
# The slow tier's: every budget as written, derandomised where a test says so.
settings.register_profile("slow", SHARED)
# Longer searches by hand: ten times the slow tier's budgets.
settings.register_profile("long", SHARED)

_COLLECTED = pytest.StashKey[list]()


def pytest_configure(config: pytest.Config) -> None:
    chosen = config.getoption("--hypothesis-profile", None)
    tier = "slow" if budget.runs_slow_tier(config.option.markexpr) else "default"
    settings.load_profile(chosen or tier)


@pytest.fixture(
    params=[pytest.param(budget.TIERS[0]), pytest.param(budget.TIERS[1], marks=pytest.mark.slow)]
)
def tier(request: pytest.FixtureRequest) -> str:
    """Which tier's item of a fuzz test this is (tests/budget.py: in_both_tiers)."""
    return request.param


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]):
    """Records every collected test, before `-m` deselects either tier; after, in a run of
    both tiers, keeps one item of each fuzz test: the one of the profile's tier (the other
    would repeat it, at the same budget)."""
    tiers.thin(items)  # (before `-m` selects a tier)
    config.stash[_COLLECTED] = list(items)
    result = yield
    keep = "default" if settings.get_current_profile_name() == "default" else "slow"
    twins: dict[tuple, list[pytest.Item]] = {}
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "tier" in params:
            others = tuple(sorted((k, repr(v)) for k, v in params.items() if k != "tier"))
            twins.setdefault((item.nodeid.split("[")[0], others), []).append(item)
    repeated = [
        item
        for pair in twins.values()
        if len(pair) > 1
        for item in pair
        if item.callspec.params["tier"] != keep
    ]
    if repeated:
        config.hook.pytest_deselected(items=repeated)
        dropped = {id(item) for item in repeated}
        items[:] = [item for item in items if id(item) not in dropped]
    return result


@pytest.fixture(scope="session")
def collected_items(request: pytest.FixtureRequest) -> list[pytest.Item]:
    """Every test this run collected, those `-m` deselected included (tests/test_tiers.py)."""
    return request.config.stash.get(_COLLECTED, [])
