"""Hypothesis profiles for the robustness tests.

- `ci` (the default): a fixed seed (`derandomize=True`) and few examples, so the suite is
  reproducible and fast;
- `slow`: many random examples, for runs outside CI:

      IDXCHECK_FUZZ_PROFILE=slow python -m pytest tests/robustness -q
      IDXCHECK_FUZZ_EXAMPLES=5000 IDXCHECK_FUZZ_PROFILE=slow python -m pytest tests/robustness -k fuzz

`IDXCHECK_FUZZ_EXAMPLES` sets the number of examples of either profile. The profiles are
applied per test (`@FUZZ`), not loaded globally, so other tests keep Hypothesis' defaults."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_EXAMPLES = os.environ.get("IDXCHECK_FUZZ_EXAMPLES")
_SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=int(_EXAMPLES or 40),
    suppress_health_check=_SUPPRESS,
    print_blob=True,
)
settings.register_profile(
    "slow",
    derandomize=False,
    deadline=None,
    max_examples=int(_EXAMPLES or 2000),
    suppress_health_check=_SUPPRESS,
    print_blob=True,
)
PROFILE = os.environ.get("IDXCHECK_FUZZ_PROFILE", "ci")
FUZZ = settings(settings.get_profile(PROFILE))
