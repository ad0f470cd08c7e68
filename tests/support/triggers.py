"""Trigger test support: a fake clock behind ``chalicelib.clock``, a real HTTP agent, a suite.

The clock is the one every pawl module reads (``chalicelib.clock.now``), replaced for the
test and moved by hand: schedules are driven by ``advance``, never by sleeping.

The ``fake_clock`` and ``suite`` fixtures serve the trigger test modules in tests/api and
tests/integration; tests/conftest.py loads this module as a pytest plugin for them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chalicelib import clock
from tests.support.servers import Reply, Request, Server, serve

TRIGGERS = "/api/v1/triggers"
FIRINGS = "/api/v1/trigger-firings"
# Where every trigger test's clock starts: half a minute past a slot, so cadences are visible.
T0 = datetime(2026, 12, 1, 10, 0, 30, tzinfo=UTC)


class FakeClock:
    """``chalicelib.clock.now`` for one test: fixed until advanced."""

    def __init__(self, start: datetime) -> None:
        self.moment = start
        self.lock = threading.Lock()

    def __call__(self) -> datetime:
        with self.lock:
            return self.moment

    def advance(self, **delta: float) -> datetime:
        with self.lock:
            self.moment += timedelta(**delta)
            return self.moment

    def install(self, monkeypatch: pytest.MonkeyPatch) -> FakeClock:
        monkeypatch.setattr(clock, "now", self)
        return self


def answer_ok(request: Request) -> Reply:
    return Reply(body={"output": "ok"})


@contextmanager
def http_agent() -> Iterator[Server]:
    """A real agent on 127.0.0.1 that answers ``ok`` to every item."""
    with serve(answer_ok) as server:
        yield server


@dataclass
class TriggerSuite:
    project: dict[str, Any]
    agent: dict[str, Any]
    eval: dict[str, Any]
    agent_server: Server

    @property
    def runs_path(self) -> str:
        return f"/api/v1/evals/{self.eval['id']}/runs"


def _ok(response: Any, status: int = 201) -> Any:
    assert response.status == status, response
    return response.json


def make_trigger_suite(
    api: Any, project: dict[str, Any], server: Server, name: str = "nightly"
) -> TriggerSuite:
    """An http agent (the real server), a one-item dataset and an eval scoring ``contains ok``."""
    pid = project["id"]
    agent_body = {"name": f"{name}-agent", "type": "http", "config": {"url": server.url}}
    agent = _ok(api.post("/api/v1/agents", {"project_id": pid, **agent_body}))
    dataset = _ok(api.post("/api/v1/datasets", {"project_id": pid, "name": f"{name}-cases"}))
    item = {"input": [{"role": "user", "content": "say ok"}], "expected_output": "ok"}
    _ok(api.post(f"/api/v1/datasets/{dataset['id']}/items", item))
    evaluation = _ok(
        api.post(
            "/api/v1/evals",
            {
                "project_id": pid,
                "name": name,
                "agent_id": agent["id"],
                "dataset_id": dataset["id"],
                "scorers": [{"type": "contains", "value": "ok"}],
            },
        )
    )
    return TriggerSuite(project, agent, evaluation, server)


@pytest.fixture
def fake_clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    return FakeClock(T0).install(monkeypatch)


@pytest.fixture
def suite(api: Any, project: dict[str, Any], fake_clock: FakeClock) -> Iterator[TriggerSuite]:
    with http_agent() as server:
        yield make_trigger_suite(api, project, server)


def trigger_body(suite: TriggerSuite, kind: str = "manual", **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "project_id": suite.project["id"],
        "name": f"{kind}-trigger",
        "type": kind,
        "target_type": "eval",
        "target_id": suite.eval["id"],
    }
    return {**body, **fields}


def create_trigger(api: Any, suite: TriggerSuite, kind: str = "manual", **fields: Any) -> Any:
    return _ok(api.post(TRIGGERS, trigger_body(suite, kind, **fields)))


def runs_of(api: Any, suite: TriggerSuite) -> list[dict[str, Any]]:
    return list(_ok(api.get(suite.runs_path), 200)["data"])


def firings_of(api: Any, project_id: str, trigger_id: str | None = None) -> list[dict[str, Any]]:
    query = f"?project_id={project_id}" + (f"&trigger_id={trigger_id}" if trigger_id else "")
    return list(_ok(api.get(FIRINGS + query), 200)["data"])
