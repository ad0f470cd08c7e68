"""Two endings of one release racing: exactly one commits (threads against moto).

The conditional write is the whole guarantee (``store/releases.py``); these tests make the
race happen rather than hope for it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import pytest

from chalicelib.engine import releases as engine
from chalicelib.errors import PawlError
from chalicelib.store import releases as store
from tests.api.test_releases import Agent, _ok, _release, _world, agent_server

__all__ = ["agent_server"]  # the fixture, shared with test_releases


def _outcome(action: Any, agent_id: str) -> str:
    try:
        action(agent_id)
    except PawlError as exc:
        return str(exc.code)
    return "ok"


@dataclass
class Race:
    """Both endings read the release before either writes: each thread's first read waits
    for the other's, so the two conditional writes really race (nothing is mocked: the
    reads and writes are moto's; only their order is forced). ``writes`` counts the
    ending transactions sent."""

    monkeypatch: pytest.MonkeyPatch
    writes: list[str] = field(default_factory=list)

    def run(self, actions: list[Any], agent_id: str) -> list[str]:
        barrier = threading.Barrier(len(actions))
        waited = threading.local()
        real_read, real_end = store.read, store.end_release

        def read(agent: str) -> store.ReleaseBasis:
            basis = real_read(agent)
            if not getattr(waited, "done", False):
                waited.done = True
                barrier.wait(timeout=30)
            return basis

        def end(ending: store.Ending) -> Any:
            self.writes.append(ending.label)
            return real_end(ending)

        self.monkeypatch.setattr(store, "read", read)
        self.monkeypatch.setattr(store, "end_release", end)
        outcomes: list[str] = []
        threads = [
            threading.Thread(target=lambda a=a: outcomes.append(_outcome(a, agent_id)))
            for a in actions
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        self.monkeypatch.setattr(store, "read", real_read)
        self.monkeypatch.setattr(store, "end_release", real_end)
        return outcomes


@pytest.mark.parametrize("rival", ["promote", "abort"])
def test_two_endings_racing_leave_exactly_one_outcome(
    api: Any, agent_server: Agent, rival: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = _world(api, agent_server)
    agent_server.canary_right.set()
    _ok(api.post(world.runs, {"wait": True, "agent_version": 2}), 201)
    for round_no in range(4):
        _ok(api.put(f"{world.agent}/release", _release(world)))
        # A draft, so the promote writes a new version: a second winner would write two.
        _ok(api.put(world.agent, {"name": f"draft-{round_no}"}))
        before = _ok(api.get(world.agent))["version"]
        race = Race(monkeypatch)
        outcomes = race.run([engine.promote, getattr(engine, rival)], world.agent_id)
        assert len(race.writes) >= 2, race.writes  # both passed their reads: the writes raced
        assert sorted(outcomes)[-1] == "ok" and outcomes.count("ok") == 1, outcomes
        assert set(outcomes) - {"ok"} <= {"NO_ACTIVE_RELEASE", "CONCURRENT_UPDATE"}, outcomes
        agent = _ok(api.get(world.agent))
        assert agent["active_release"] is None and agent["version"] == before + 1
        versions = _ok(api.get(f"{world.agent}/versions?limit=100"))["data"]
        assert len(versions) == before + 1


def test_of_two_endings_read_together_the_second_write_is_refused(
    api: Any, agent_server: Agent
) -> None:
    world = _world(api, agent_server)
    _ok(api.put(f"{world.agent}/release", _release(world, gate=False)))
    first, second = store.read(world.agent_id), store.read(world.agent_id)  # both saw it
    canary = store.Ending(first, engine.agents.get_agent_version(world.agent_id, 2), "p")
    stable = store.Ending(second, engine.agents.get_agent_version(world.agent_id, 1), "a")
    assert store.end_release(canary).version == 2
    with pytest.raises(PawlError) as refused:
        store.end_release(stable)
    assert refused.value.code == "NO_ACTIVE_RELEASE"
    assert _ok(api.get(world.agent))["config"] == {"url": agent_server.url("v2")}
