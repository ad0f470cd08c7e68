"""The snapshot gate: a pause waits for in-flight work and holds new work back."""

from __future__ import annotations

import threading

from chalicelib.local.quiesce import Quiesce


def test_pause_waits_for_in_flight_work_then_holds_new_work() -> None:
    gate = Quiesce()
    in_work = threading.Event()
    release_work = threading.Event()
    events: list[str] = []

    def worker() -> None:
        with gate.working():
            in_work.set()
            release_work.wait(10)
            events.append("first work done")

    first = threading.Thread(target=worker)
    first.start()
    assert in_work.wait(10)

    paused = threading.Event()
    release_pause = threading.Event()

    def pauser() -> None:
        with gate.paused(timeout_s=10) as quiet:
            events.append(f"paused quiet={quiet}")
            paused.set()
            release_pause.wait(10)

    pause_thread = threading.Thread(target=pauser)
    pause_thread.start()
    late_started = threading.Event()

    def late_worker() -> None:
        with gate.working():
            events.append("late work")
            late_started.set()

    late = threading.Thread(target=late_worker)
    late.start()
    assert not paused.wait(0.1)  # the first invocation is still running
    release_work.set()
    assert paused.wait(10)
    assert not late_started.is_set()  # held back while paused
    release_pause.set()
    assert late_started.wait(10)
    for thread in (first, pause_thread, late):
        thread.join(10)
    assert events == ["first work done", "paused quiet=True", "late work"]


def test_pause_gives_up_after_its_timeout_and_lets_work_continue() -> None:
    gate = Quiesce()
    with gate.working():
        with gate.paused(timeout_s=0.05) as quiet:
            assert quiet is False
        with gate.working():  # not blocked: the failed pause released the gate
            assert gate.active == 2
    assert gate.active == 0
    assert gate.entered == 2  # the runtime skips a snapshot when this has not moved
