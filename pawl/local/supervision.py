"""Keeping the AWS stand-in alive under a running runtime, or saying plainly that it is not.

The stand-in is a child process (``local/standin_process.py``). If it dies (an OOM kill, a
crash in moto, a stray ``kill -9``), every data route would fail while ``/health`` still
answered ``ok``. :class:`StandInSupervisor` watches the child instead:

- it notices the exit within :data:`POLL_S`, and from then until the stand-in is back the
  runtime is *unavailable*: the HTTP front answers every request (``/health`` included)
  with 503 ``UNAVAILABLE`` naming the reason;
- it restarts the stand-in on the same port with the same key pair (nothing in pawl's
  environment or clients changes), recreates the resources, restores the snapshot and
  replays the journal (every acknowledged write), then re-drives in-flight runs and
  pending webhook deliveries, whose SQS messages died with the child;
- a :class:`RestartBudget` bounds it: more than ``max_restarts`` deaths within
  ``window_s`` (a crash loop), or a restart that fails, and it gives up. The runtime then
  stays unavailable and reports the one-line reason, on which ``pawl serve`` stops and
  exits non-zero.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

log = logging.getLogger("pawl.local")

#: How often the child's liveness is checked.
POLL_S = 0.2
#: Deaths tolerated within the window before the runtime gives up.
DEFAULT_MAX_RESTARTS = 3
DEFAULT_RESTART_WINDOW_S = 60.0


class Watched(Protocol):
    """What the supervisor needs of the stand-in (``local/standin.py``'s AwsStandIn)."""

    @property
    def pid(self) -> int | None: ...

    def exit_status(self) -> int | None:
        """The child's exit status once it exited on its own; None while it runs."""


@dataclass
class RestartBudget:
    """At most ``max_restarts`` deaths within any ``window_s`` seconds are restarted."""

    max_restarts: int = DEFAULT_MAX_RESTARTS
    window_s: float = DEFAULT_RESTART_WINDOW_S
    _deaths: deque[float] = field(default_factory=deque)

    def allows_restart_at(self, now: float) -> bool:
        """Count a death at ``now``; whether it may still be restarted."""
        self._deaths.append(now)
        while self._deaths and self._deaths[0] < now - self.window_s:
            self._deaths.popleft()
        return len(self._deaths) <= self.max_restarts

    def describe(self) -> str:
        return (
            f"{len(self._deaths)} death(s) within {self.window_s:g} s, "
            f"{self.max_restarts} restart(s) allowed"
        )


class StandInSupervisor:
    """Watch the stand-in; restart it through ``restart``, or give up with one reason."""

    def __init__(
        self,
        standin: Watched,
        restart: Callable[[], None],
        budget: RestartBudget | None = None,
    ) -> None:
        self.standin = standin
        self._restart = restart
        self.budget = budget or RestartBudget()
        #: Why the runtime cannot serve right now (None: it can).
        self.unavailable: str | None = None
        #: Set once the supervisor gave up; ``failure`` says why, in one line.
        self.gave_up = threading.Event()
        self.failure: str | None = None
        self.restarts = 0

    def watch(self, stopping: threading.Event) -> None:
        """Thread target: check the child until ``stopping`` is set or it gives up."""
        while not stopping.wait(POLL_S):
            status = self.standin.exit_status()
            if status is None:
                continue
            if stopping.is_set():
                return  # the runtime's own stop ended it
            if not self._recover(status, stopping):
                return

    def _recover(self, status: int, stopping: threading.Event) -> bool:
        """One death: restart within the budget (True), or give up (False)."""
        died = f"the AWS stand-in (pid {self.standin.pid}) exited with status {status}"
        self.unavailable = f"{died}; restarting it"
        if not self.budget.allows_restart_at(time.monotonic()):
            self._give_up(f"{died} ({self.budget.describe()}): giving up")
            return False
        log.error("%s: restarting it from the snapshot and the journal", died)
        try:
            self._restart()
        except Exception as exc:
            if stopping.is_set():
                return False
            self._give_up(f"{died} and could not be restarted: {exc}")
            return False
        self.restarts += 1
        self.unavailable = None
        log.warning(
            "the AWS stand-in is back (pid %s): every journaled write kept", self.standin.pid
        )
        return True

    def _give_up(self, reason: str) -> None:
        self.failure = reason
        self.unavailable = reason
        log.error("%s", reason)
        self.gave_up.set()
