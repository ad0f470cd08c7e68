"""The stand-in's supervisor without processes: the restart budget, and what each death does."""

from __future__ import annotations

import threading

from pawl.local.supervision import RestartBudget, StandInSupervisor


def test_the_budget_allows_max_restarts_within_the_window() -> None:
    budget = RestartBudget(max_restarts=2, window_s=60)
    assert budget.allows_restart_at(0) and budget.allows_restart_at(10)
    assert not budget.allows_restart_at(20)  # a third death within a minute: a crash loop
    fresh = RestartBudget(max_restarts=2, window_s=60)
    assert all(fresh.allows_restart_at(t) for t in (0, 61, 122, 183))  # spaced out: fine
    assert not RestartBudget(max_restarts=0).allows_restart_at(0)


class FakeChild:
    """A stand-in that dies when told (pawl's own supervisor code is real)."""

    def __init__(self) -> None:
        self.pid: int | None = 100
        self.status: int | None = None

    def exit_status(self) -> int | None:
        return self.status


def _watching(supervisor: StandInSupervisor, stopping: threading.Event) -> threading.Thread:
    thread = threading.Thread(target=supervisor.watch, args=(stopping,), daemon=True)
    thread.start()
    return thread


def test_each_death_is_restarted_until_the_budget_runs_out() -> None:
    child = FakeChild()
    restarted = threading.Semaphore(0)
    seen_unavailable: list[str | None] = []

    def restart() -> None:
        seen_unavailable.append(supervisor.unavailable)
        child.pid, child.status = (child.pid or 0) + 1, None
        restarted.release()

    supervisor = StandInSupervisor(child, restart, RestartBudget(max_restarts=2, window_s=600))
    stopping = threading.Event()
    thread = _watching(supervisor, stopping)
    for _ in range(2):
        child.status = -9
        assert restarted.acquire(timeout=10)
    child.status = -9
    assert supervisor.gave_up.wait(10)
    thread.join(10)
    assert supervisor.restarts == 2
    assert all(reason and "restarting" in reason for reason in seen_unavailable)
    assert supervisor.failure is not None and "giving up" in supervisor.failure
    assert supervisor.unavailable == supervisor.failure and "\n" not in supervisor.failure


def test_a_restart_that_fails_gives_up_with_its_reason() -> None:
    child = FakeChild()

    def restart() -> None:
        raise RuntimeError("port 4566 is taken")

    supervisor = StandInSupervisor(child, restart)
    stopping = threading.Event()
    thread = _watching(supervisor, stopping)
    child.status = 1
    assert supervisor.gave_up.wait(10)
    thread.join(10)
    assert supervisor.failure is not None and supervisor.failure.endswith("port 4566 is taken")


def test_a_stop_is_not_a_death() -> None:
    child = FakeChild()
    supervisor = StandInSupervisor(child, lambda: None)
    stopping = threading.Event()
    thread = _watching(supervisor, stopping)
    stopping.set()
    child.status = 0  # the runtime's own stop ended it
    thread.join(10)
    assert not thread.is_alive() and supervisor.restarts == 0 and supervisor.failure is None
