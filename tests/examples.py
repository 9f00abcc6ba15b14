"""Hypothesis example budgets: the README suite's, and the thorough run's that ``.ci/run`` adds.

``S3SPILL_HYPOTHESIS_PROFILE`` names the profile (``suite``, the default, or ``thorough``);
``tests/conftest.py`` registers both and loads the one named. A test's own
``@settings(max_examples=N)`` wins over any profile's (loading a profile changes the defaults,
not a test's explicit settings), so a property test whose examples are costly says both of its
counts: ``@settings(max_examples=examples(suite=15, thorough=60))``. The suite runs the first;
``.ci/run``'s thorough step runs every file that calls :func:`examples` (its ``THOROUGH_FILES``,
which ``tests/test_examples.py`` keeps complete) with the second, the count each test had before
the suite was given a budget. A seeded random loop that is costly takes its count the same way.
"""

from __future__ import annotations

import os

PROFILES = ("suite", "thorough")
PROFILE = os.environ.get("S3SPILL_HYPOTHESIS_PROFILE", "suite")
if PROFILE not in PROFILES:
    raise RuntimeError(f"S3SPILL_HYPOTHESIS_PROFILE={PROFILE!r}: expected one of {', '.join(PROFILES)}")
THOROUGH = PROFILE == "thorough"


def examples(*, suite: int, thorough: int) -> int:
    """``suite`` examples in the README suite, ``thorough`` under the thorough profile."""
    if not 0 < suite <= thorough:
        raise ValueError(f"examples(suite={suite}, thorough={thorough}): need 0 < suite <= thorough")
    return thorough if THOROUGH else suite
