"""How ``pawl run`` (``PawlClient.wait_for_run``) paces its reads of a run: every interval
while items remain, sooner once the last ones are due, often once every item is recorded
and the settle is running. A scripted run and a clock that only the sleeps move: nothing
here reads the wall clock."""

from __future__ import annotations

from typing import Any

import pytest

from pawl import transport
from pawl.transport import FINISHING_POLL_S, PawlClient, Run, next_poll_s

INTERVAL = 0.25


def _run(recorded: int, status: str = "running", item_count: int = 1000) -> Run:
    return Run.model_validate(
        {
            "id": "evrun_x",
            "eval_id": "eval_x",
            "agent_version": 1,
            "status": status,
            "item_count": item_count,
            "completed_count": recorded,
        }
    )


def test_far_from_the_end_it_reads_every_interval() -> None:
    assert next_poll_s(_run(100), None, INTERVAL) == INTERVAL
    assert next_poll_s(_run(150), (_run(100), 0.25), INTERVAL) == INTERVAL  # 850 to go


def test_a_run_that_has_not_fanned_out_or_not_moved_is_read_every_interval() -> None:
    assert next_poll_s(_run(0, "queued", item_count=0), None, INTERVAL) == INTERVAL
    assert next_poll_s(_run(500), (_run(500), 0.25), INTERVAL) == INTERVAL


def test_it_wakes_when_the_last_items_are_due_by_their_rate() -> None:
    # 50 recorded in 0.25 s, 20 to go: due in 0.1 s.
    assert next_poll_s(_run(980), (_run(930), 0.25), INTERVAL) == pytest.approx(0.1)
    # 2 to go: due almost at once, but never sooner than the finishing pace.
    assert next_poll_s(_run(998), (_run(948), 0.25), INTERVAL) == FINISHING_POLL_S


def test_once_every_item_is_recorded_it_reads_at_the_finishing_pace() -> None:
    assert next_poll_s(_run(1000), (_run(990), 0.25), INTERVAL) == FINISHING_POLL_S
    assert next_poll_s(_run(1000), None, 0.01) == 0.01  # a shorter interval asked for wins


class _Scripted(PawlClient):
    """A client whose run is read from a script, on a clock that only sleeps move."""

    def __init__(self, script: list[Run], monkeypatch: pytest.MonkeyPatch) -> None:
        super().__init__("http://127.0.0.1:9", "key")
        self.script = script
        self.now = 0.0
        self.sleeps: list[float] = []
        monkeypatch.setattr(transport.time, "monotonic", lambda: self.now)
        monkeypatch.setattr(transport.time, "sleep", self._sleep)

    def _sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 3))
        self.now += seconds

    def get_run(self, eval_id: str, run_id: str) -> Any:
        return self.script.pop(0)


def test_a_wait_reads_sooner_near_the_end_and_stops_at_the_finished_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = [_run(800), _run(900), _run(1000), _run(1000), _run(1000, "completed")]
    client = _Scripted(script, monkeypatch)
    done = client.wait_for_run("eval_x", "evrun_x", timeout_s=60, poll_interval_s=INTERVAL)
    assert done.status == "completed"
    # 100 per 0.25 s with 100 to go: due in 0.25 s; then every item recorded: settling.
    assert client.sleeps == [INTERVAL, INTERVAL, FINISHING_POLL_S, FINISHING_POLL_S]
    assert client.script == []  # it read the run exactly as often as the sleeps say
