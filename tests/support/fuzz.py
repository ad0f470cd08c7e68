"""What the schemathesis tests (``/api/v1`` and ``/v2``) share: how hard and how repeatably
they generate."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

#: Examples per operation and generation mode: ~50 operations stay well under a minute.
MAX_EXAMPLES = 6

#: hypothesis settings for a schemathesis test over the app: the same cases every run, no
#: example database, no per-example deadline (each case makes real HTTP calls), every
#: health check suppressed.
FUZZ_SETTINGS = settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
