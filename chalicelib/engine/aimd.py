"""A run's adaptive concurrency (pure): slow start, additive increase, multiplicative decrease.

A run starts with ``INITIAL_WINDOW`` calls in flight, not its whole ``max_concurrency``:
40 connections opened in the same millisecond overflow a modest server's listen backlog
(Python's ``http.server`` keeps 5). As TCP does with its congestion window:

- *slow start*: each item that finished without congestion adds one call, so the window
  doubles with every round of calls, up to the threshold (at first the run's limit);
- *additive increase*: above the threshold each such item adds ``1/window``, one call
  per round;
- *multiplicative decrease*: congestion (429, 503, a connection that failed before any
  answer) halves the window and sets the threshold there, at most once per round: a
  congestion report from a call that started before the last decrease is the same
  overload seen late, and does not halve again.

A window can also *resume* where an earlier run against the same agent left it
(:meth:`AimdWindow.resuming`, :meth:`AimdWindow.learned`): what an agent can take is the
agent's, not the run's, so a run that follows another does not spend four rounds of agent
calls relearning it (a 200 ms agent at 40: 0.55 s of its 5 s), as TCP keeps a destination's
congestion figures for the next connection to it. A congestion the earlier run met is
kept too (the threshold), so a run against an agent that pushed back grows additively.

:class:`RetryQuota` keeps retries from outliving a dead agent: a retry takes a token,
an answered attempt puts one back (AWS SDKs' "retry quota"); while the quota is empty
items fail at their first failure instead of each retrying to its budget, so a run
against an agent that is down ends as quickly as it did without retries.

No locks, no clock: the caller (``engine.concurrency``) serialises access.
"""

from __future__ import annotations

from dataclasses import dataclass, field

INITIAL_WINDOW = 4
MIN_WINDOW = 1

#: (window reached, threshold or None): what a run passes on to the next one (same agent).
Learned = tuple[float, float | None]


@dataclass
class AimdWindow:
    """How many of a run's calls may be in flight, adapted to what the calls report."""

    ceiling: int
    window: float = field(init=False)
    threshold: float = field(init=False)
    #: Bumped by every decrease; a call remembers the epoch it started in.
    epoch: int = 0

    def __post_init__(self) -> None:
        self.ceiling = max(MIN_WINDOW, self.ceiling)
        self.window = float(min(INITIAL_WINDOW, self.ceiling))
        self.threshold = float(self.ceiling)

    @classmethod
    def resuming(cls, ceiling: int, learned: Learned | None) -> AimdWindow:
        """A window for a new run: where ``learned`` (an earlier run's, same agent) left
        off, within this run's ``ceiling``; a fresh slow start without it."""
        window = cls(ceiling)
        if learned is not None:
            reached, threshold = learned
            window.window = float(max(MIN_WINDOW, min(window.ceiling, reached)))
            if threshold is not None:
                window.threshold = float(max(MIN_WINDOW, min(window.ceiling, threshold)))
        return window

    def learned(self) -> Learned:
        """What a later run against the same agent resumes from: the window reached and,
        once congestion set one, the threshold (None: it never met congestion)."""
        return self.window, (self.threshold if self.epoch else None)

    @property
    def limit(self) -> int:
        return max(MIN_WINDOW, min(self.ceiling, int(self.window)))

    def succeeded(self) -> None:
        """A call finished without congestion: grow (doubling below the threshold)."""
        growth = 1.0 if self.window < self.threshold else 1.0 / self.window
        self.window = min(float(self.ceiling), self.window + growth)

    def congested(self, started_epoch: int) -> bool:
        """A call that started in ``started_epoch`` met congestion; True if this halved."""
        if started_epoch < self.epoch:
            return False
        self.threshold = max(float(MIN_WINDOW), self.window / 2)
        self.window = self.threshold
        self.epoch += 1
        return True


@dataclass
class RetryQuota:
    """Tokens for retries: a retry takes one, an answered attempt returns one."""

    capacity: int
    tokens: int = field(init=False)

    def __post_init__(self) -> None:
        self.capacity = max(1, self.capacity)
        self.tokens = self.capacity

    def take(self) -> bool:
        if self.tokens <= 0:
            return False
        self.tokens -= 1
        return True

    def answered(self) -> None:
        self.tokens = min(self.capacity, self.tokens + 1)


def quota_for(ceiling: int) -> int:
    """A run's retry quota: two retries per call it may have in flight, at least ten."""
    return max(10, 2 * ceiling)
