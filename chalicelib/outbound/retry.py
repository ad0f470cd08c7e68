"""When to retry an outbound call and how long to wait (pure)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime

RETRY_STATUSES = frozenset({429, 502, 503, 504})
RETRY_AFTER_CAP_S = 30.0
MAX_BACKOFF_S = 30.0


def backoff_delay(attempt: int, base_s: float, rand: Callable[[], float] = random.random) -> float:
    """Seconds to wait after failed ``attempt`` (1-based): equal jitter on base * 2^(n-1)."""
    ceiling = min(MAX_BACKOFF_S, base_s * 2 ** (attempt - 1))
    return ceiling / 2 + rand() * ceiling / 2


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks for (delta-seconds or HTTP date), capped."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), RETRY_AFTER_CAP_S)
    try:
        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    current = time.time() if now is None else now
    return min(max(0.0, when - current), RETRY_AFTER_CAP_S)
