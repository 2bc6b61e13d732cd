"""Settings every hypothesis test of the suite shares, as one hypothesis profile.

Each fuzz test states only its budget (`max_examples`, usually from an environment variable)
and whether it is derandomized; what is the same everywhere is said here once:
- no deadline: a case runs onnxruntime and the checker, whose times vary with the machine's
  load (the CI runs two workers on two cores);
- the health checks for slow and large draws are off: the strategies draw whole models, which
  are large and slow to draw by design, and some filter for the cases a test is about.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile(
    "maxlower",
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
settings.load_profile("maxlower")
