"""A real HTTP agent (a handler for ``servers.serve``) whose calls wait until the test lets them go.

Every call is counted when it arrives (``started``) and when it answers (``finished``), so a
test can say how many calls had started at a given moment (say, when a cancel answered)
without timing anything. ``release(k)`` lets ``k`` of the waiting calls answer;
``open()`` lets every waiting and future call answer at once. Each answer reports usage,
as a hosted model's would, so each call makes one usage event. A call never waits longer
than :data:`SAFETY_TIMEOUT_S` (a test that forgot to release it must not hang).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from tests.support.servers import Reply, Request

SAFETY_TIMEOUT_S = 30
USAGE = {"input_tokens": 7, "output_tokens": 3, "cost_usd": 0.002}


@dataclass
class _Call:
    released: threading.Event = field(default_factory=threading.Event)
    fail: bool = False


class GatedAgent:
    def __init__(self) -> None:
        self.started = 0
        self.finished = 0
        self._waiting: list[_Call] = []
        self._open = False
        self._changed = threading.Condition()

    def __call__(self, request: Request) -> Reply:
        call = _Call()
        with self._changed:
            self.started += 1
            if self._open:
                call.released.set()
            else:
                self._waiting.append(call)
            self._changed.notify_all()
        call.released.wait(SAFETY_TIMEOUT_S)
        with self._changed:
            self.finished += 1
            self._changed.notify_all()
        if call.fail:
            return Reply(400, {"error": "the gated agent was told to fail this call"})
        return Reply(200, {"output": "ok", "usage": USAGE})

    @property
    def waiting(self) -> int:
        with self._changed:
            return len(self._waiting)

    def wait_for_waiting(self, count: int, timeout_s: float = SAFETY_TIMEOUT_S) -> None:
        """Until at least ``count`` calls are waiting (raises if that never happens)."""
        with self._changed:
            if not self._changed.wait_for(lambda: len(self._waiting) >= count, timeout_s):
                raise AssertionError(f"{count} calls never waited at once ({self.started} came)")

    def release(self, count: int, failing: int = 0) -> None:
        """Let ``count`` waiting calls answer, the first ``failing`` of them with a 400."""
        with self._changed:
            assert len(self._waiting) >= count, (len(self._waiting), count)
            chosen, self._waiting = self._waiting[:count], self._waiting[count:]
        for position, call in enumerate(chosen):
            call.fail = position < failing
            call.released.set()

    def wait_for_finished(self, count: int, timeout_s: float = SAFETY_TIMEOUT_S) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: self.finished >= count, timeout_s):
                raise AssertionError(f"only {self.finished} of {count} calls answered")

    def open(self) -> None:
        """Every waiting call answers now, and every later one at once."""
        with self._changed:
            self._open = True
            waiting, self._waiting = self._waiting, []
        for call in waiting:
            call.released.set()
