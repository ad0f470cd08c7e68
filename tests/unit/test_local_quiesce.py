"""The in-flight count: what drain waits on."""

from __future__ import annotations

import threading

from pawl.local.quiesce import Quiesce


def test_active_counts_invocations_in_flight_and_nested() -> None:
    gate = Quiesce()
    in_work = threading.Event()
    release = threading.Event()

    def worker() -> None:
        with gate.working():
            in_work.set()
            release.wait(10)

    thread = threading.Thread(target=worker)
    thread.start()
    assert in_work.wait(10)
    with gate.working():
        assert gate.active == 2
    assert gate.active == 1
    release.set()
    thread.join(10)
    assert gate.active == 0


def test_active_drops_when_an_invocation_raises() -> None:
    gate = Quiesce()
    try:
        with gate.working():
            raise ValueError("handler failed")
    except ValueError:
        pass
    assert gate.active == 0
