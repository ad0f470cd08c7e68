"""Eval-gated releases over HTTP: versions, restore, the staged split, the gate, the loop.

Real parts: moto, the app through chalice.test.Client, a real HTTP agent on 127.0.0.1 whose
``/v1`` and ``/v2`` paths are the two configs (``/v2`` answers wrongly until told not to).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.support.drain import drain_queues
from tests.support.servers import Reply, Request, Server, serve

AGENTS = "/api/v1/agents"
ANSWER = "Invoices are issued on the first of each month."


@dataclass
class Agent:
    """The HTTP agent: ``/v1`` always right, ``/v2`` right once ``canary_right`` is set."""

    server: Server
    canary_right: threading.Event = field(default_factory=threading.Event)

    def url(self, version: str) -> str:
        return f"{self.server.url}/{version}"


@pytest.fixture
def agent_server() -> Iterator[Agent]:
    holder: list[Agent] = []

    def answer(request: Request) -> Reply:
        right = request.path.endswith("/v1") or holder[0].canary_right.is_set()
        return Reply(200, {"output": ANSWER if right else f"wrong ({request.path})"})

    with serve(answer) as server:
        holder.append(Agent(server))
        yield holder[0]


def _ok(response: Any, status: int = 200) -> Any:
    assert response.status == status, response
    return response.json


@dataclass
class World:
    project_id: str
    agent_id: str
    eval_id: str

    @property
    def agent(self) -> str:
        return f"{AGENTS}/{self.agent_id}"

    @property
    def runs(self) -> str:
        return f"/api/v1/evals/{self.eval_id}/runs"


def _eval(api: Any, project_id: str, agent_id: str, name: str = "gate") -> str:
    dataset = _ok(api.post("/api/v1/datasets", {"project_id": project_id, "name": name}), 201)
    item = {"input": [{"role": "user", "content": "When?"}], "expected_output": ANSWER}
    _ok(api.post(f"/api/v1/datasets/{dataset['id']}/items", item), 201)
    body = {
        "project_id": project_id,
        "name": name,
        "agent_id": agent_id,
        "dataset_id": dataset["id"],
        "scorers": [{"type": "exact_match"}],
        "pass_threshold": 1.0,
    }
    return str(_ok(api.post("/api/v1/evals", body), 201)["id"])


def _world(api: Any, server: Agent, project_name: str = "acme") -> World:
    """An agent at version 1 (``/v1``) and 2 (``/v2``, labelled ``candidate``), one gate eval."""
    project_id = _ok(api.post("/api/v1/projects", {"name": project_name}), 201)["id"]
    body = {"project_id": project_id, "name": "notes", "type": "http"}
    agent = _ok(api.post(AGENTS, {**body, "config": {"url": server.url("v1")}}), 201)
    eval_id = _eval(api, project_id, agent["id"])
    world = World(project_id, agent["id"], eval_id)
    changed = {"config": {"url": server.url("v2")}, "version_label": "candidate"}
    assert _ok(api.put(world.agent, changed))["version"] == 2
    return world


def _release(world: World, percent: int = 20, gate: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {"stable_version": 1, "canary_version": 2, "canary_percent": percent}
    return {**body, "promotion_gate": world.eval_id if gate else None}


def _refused(response: Any, status: int, code: str) -> Any:
    assert (response.status, response.code) == (status, code), response
    return response.json["error"]


def test_the_tutorial_gate_a_canary_promotion_on_an_eval(api: Any, agent_server: Agent) -> None:
    world = _world(api, agent_server)
    released = _ok(api.put(f"{world.agent}/release", _release(world)))
    assert released["active_release"] == _release(world)
    promote = f"{world.agent}/release/promote"

    error = _refused(api.post(promote), 409, "PROMOTION_GATE_UNMET")
    assert error["meta"] == {"promotion_gate": world.eval_id, "agent_version": 2}

    # A green run of the stable version (an unpinned run during a release) is no evidence.
    stable_run = _ok(api.post(world.runs, {"wait": True}), 201)
    assert (stable_run["agent_version"], stable_run["passed"]) == (1, True)
    _refused(api.post(promote), 409, "PROMOTION_GATE_UNMET")

    # A run pinned to the canary that did not pass is no evidence either.
    failed = _ok(api.post(world.runs, {"wait": True, "agent_version": 2}), 201)
    assert (failed["status"], failed["passed"]) == ("completed", False)
    _refused(api.post(promote), 409, "PROMOTION_GATE_UNMET")
    assert _ok(api.get(world.agent))["active_release"] == _release(world)  # untouched

    agent_server.canary_right.set()
    canary_run = _ok(api.post(world.runs, {"wait": True, "agent_version": 2}), 201)
    assert (canary_run["agent_version"], canary_run["passed"]) == (2, True)
    promoted = _ok(api.post(promote))
    assert promoted["active_release"] is None and promoted["version"] == 2
    assert promoted["config"] == {"url": agent_server.url("v2")}

    versions = _ok(api.get(f"{world.agent}/versions"))["data"]
    assert [(v["version"], v["eval_run_id"], v["label"]) for v in versions] == [
        (1, None, None),
        (2, canary_run["id"], "candidate"),
    ]
    assert _ok(api.get(f"{world.agent}/versions/2"))["eval_run_id"] == canary_run["id"]
    _refused(api.post(promote), 409, "NO_ACTIVE_RELEASE")
    _refused(api.post(f"{world.agent}/release/abort"), 409, "NO_ACTIVE_RELEASE")


def _served(api: Any, world: World, **who: str) -> tuple[int, str]:
    body = {"input": [{"role": "user", "content": "When?"}], **who}
    generation = _ok(api.post(f"{world.agent}/generate", body), 201)
    stored = _ok(api.get(f"/api/v1/generations/{generation['id']}"))
    assert stored["agent_version"] == generation["agent_version"]
    return generation["agent_version"], generation["output"]


def test_generate_serves_the_canary_to_its_share_of_callers(api: Any, agent_server: Agent) -> None:
    world = _world(api, agent_server)
    _ok(api.put(f"{world.agent}/release", _release(world, percent=50, gate=False)))
    sides = {actor: _served(api, world, actor_id=actor)[0] for actor in map(str, range(30))}
    assert set(sides.values()) == {1, 2}  # 30 callers at 50%: both sides serve
    assert 5 <= list(sides.values()).count(2) <= 25  # outside: p < 1e-4
    for actor in ("3", "17"):  # the same actor keeps its side, call after call
        assert {_served(api, world, actor_id=actor)[0] for _ in range(3)} == {sides[actor]}
    by_session = _served(api, world, session_id="sess-1")[0]
    assert {_served(api, world, session_id="sess-1")[0] for _ in range(3)} == {by_session}
    # The output is the served version's config answering (v1 right, v2 still wrong).
    assert {_served(api, world, actor_id=a) for a in ("3", "17")} == {
        (sides["3"], ANSWER if sides["3"] == 1 else "wrong (/v2)"),
        (sides["17"], ANSWER if sides["17"] == 1 else "wrong (/v2)"),
    }
    for percent, only in ((0, 1), (100, 2)):
        _ok(api.put(f"{world.agent}/release", _release(world, percent=percent, gate=False)))
        assert {_served(api, world)[0] for _ in range(4)} == {only}


def test_a_draft_edit_disturbs_no_side_and_abort_restores_stable(
    api: Any, agent_server: Agent
) -> None:
    world = _world(api, agent_server)
    _ok(api.put(f"{world.agent}/release", _release(world, percent=100)))
    draft = _ok(api.put(world.agent, {"config": {"url": agent_server.url("v3")}}))
    assert draft["version"] == 3 and draft["active_release"] == _release(world, percent=100)
    assert _served(api, world, actor_id="a")[0] == 2  # the draft serves nobody
    assert _ok(api.post(world.runs, {"wait": True}), 201)["agent_version"] == 1
    aborted = _ok(api.post(f"{world.agent}/release/abort"))  # ungated: no evidence needed
    assert aborted["active_release"] is None and aborted["version"] == 4
    assert aborted["config"] == {"url": agent_server.url("v1")}
    v4 = _ok(api.get(f"{world.agent}/versions/4"))
    assert (v4["label"], v4["eval_run_id"], v4["config"]) == (
        "aborted to v1",
        None,
        aborted["config"],
    )
    assert _served(api, world)[0] == 4


def test_a_gate_whose_eval_was_deleted_blocks_promotion(api: Any, agent_server: Agent) -> None:
    world = _world(api, agent_server)
    agent_server.canary_right.set()
    _ok(api.put(f"{world.agent}/release", _release(world)))
    _ok(api.post(world.runs, {"wait": True, "agent_version": 2}), 201)
    assert api.delete(f"/api/v1/evals/{world.eval_id}").status == 204
    _refused(api.post(f"{world.agent}/release/promote"), 409, "PROMOTION_GATE_UNMET")
    assert _ok(api.get(world.agent))["active_release"] is not None


def test_set_release_refuses_what_cannot_be_released(api: Any, agent_server: Agent) -> None:
    world = _world(api, agent_server)
    other_agent = _ok(
        api.post(
            AGENTS,
            {"project_id": world.project_id, "name": "other", "type": "http",
             "config": {"url": agent_server.url("v1")}},
        ),
        201,
    )  # fmt: skip
    other_agents_eval = _eval(api, world.project_id, other_agent["id"], "other-gate")
    elsewhere = _world(api, agent_server, "globex")
    release = f"{world.agent}/release"
    cases = [
        ({**_release(world), "canary_version": 1}, "canary_version"),
        ({**_release(world), "canary_version": 9}, "canary_version"),
        ({**_release(world), "stable_version": 0}, "stable_version"),
        ({**_release(world), "canary_percent": 101}, "canary_percent"),
        ({**_release(world), "canary_version": "2"}, "canary_version"),
        ({**_release(world), "promotion_gate": other_agents_eval}, "promotion_gate"),
        ({**_release(world), "promotion_gate": elsewhere.eval_id}, "promotion_gate"),
        ({**_release(world), "promotion_gate": "not-an-eval"}, "promotion_gate"),
        ({**_release(world), "traffic": "all"}, "traffic"),
        ({"stable_version": 1, "canary_version": 2}, "canary_percent"),
    ]
    for body, where in cases:
        error = _refused(api.put(release, body), 400, "VALIDATION_FAILED")
        assert where in str(error["meta"].get("field", error)), (body, error)
    assert _ok(api.get(world.agent))["active_release"] is None


def test_a_key_of_another_project_reaches_none_of_the_release_routes(
    api: Any, agent_server: Agent
) -> None:
    world = _world(api, agent_server)
    _ok(api.put(f"{world.agent}/release", _release(world, gate=False)))
    other = _ok(api.post("/api/v1/projects", {"name": "globex"}), 201)
    key = _ok(api.post("/api/v1/api-keys", {"project_id": other["id"], "name": "k"}), 201)["key"]
    foreign = api.as_key(key)
    calls = [
        ("PUT", f"{world.agent}/release", _release(world)),
        ("POST", f"{world.agent}/release/promote", None),
        ("POST", f"{world.agent}/release/abort", None),
        ("POST", f"{world.agent}/versions/1/restore", {}),
        ("PATCH", world.agent, {"name": "stolen"}),
    ]
    for method, path, body in calls:
        _refused(foreign.request(method, path, body), 404, "RESOURCE_NOT_FOUND")
    agent = _ok(api.get(world.agent))
    assert agent["active_release"] == _release(world, gate=False) and agent["version"] == 2


def test_restore_copies_an_archive_as_a_new_version_and_put_patch_agree(
    api: Any, agent_server: Agent
) -> None:
    world = _world(api, agent_server)
    restored = _ok(api.post(f"{world.agent}/versions/1/restore"))
    assert restored["version"] == 3 and restored["config"] == {"url": agent_server.url("v1")}
    assert _ok(api.get(f"{world.agent}/versions/3"))["label"] == "restored from v1"
    assert _ok(api.post(f"{world.agent}/versions/1/restore"))["version"] == 3  # a no-op
    again = _ok(api.post(f"{world.agent}/versions/2/restore", {"label": "back-to-candidate"}))
    assert again["version"] == 4
    assert _ok(api.get(f"{world.agent}/versions/4"))["label"] == "back-to-candidate"
    _refused(api.post(f"{world.agent}/versions/9/restore"), 404, "RESOURCE_NOT_FOUND")
    _refused(api.post(f"{world.agent}/versions/1/restore", {"lable": "x"}), 400,
             "VALIDATION_FAILED")  # fmt: skip
    # A PUT and a PATCH leave the same history: an unchanged write archives nothing.
    same = {"config": {"url": agent_server.url("v2")}}
    assert _ok(api.put(world.agent, same))["version"] == 4
    assert _ok(api.request("PATCH", world.agent, same))["version"] == 4
    patched = _ok(api.request("PATCH", world.agent, {"name": "notes-2", "version_label": "p"}))
    assert patched["version"] == 5 and patched["name"] == "notes-2"
    assert _ok(api.get(f"{world.agent}/versions/5"))["label"] == "p"
    _refused(api.request("PATCH", world.agent, {"version_label": None}), 400, "VALIDATION_FAILED")


def test_the_loop_runs_unattended_a_release_starts_the_pinned_gate_run(
    api: Any, app: Any, agent_server: Agent
) -> None:
    world = _world(api, agent_server)
    agent_server.canary_right.set()
    trigger = {
        "project_id": world.project_id,
        "name": "gate-the-canary",
        "type": "event",
        "event_pattern": "agents.release.set",
        "target_type": "eval",
        "target_id": world.eval_id,
        "input": {"agent_version": "canary"},
    }
    _ok(api.post("/api/v1/triggers", trigger), 201)
    received: list[Any] = []

    def receive(request: Request) -> Reply:
        received.append(request.json())
        return Reply(200, {})

    with serve(receive) as receiver:
        hook = {"project_id": world.project_id, "url": f"{receiver.url}/hook",
                "events": ["agents.release.promoted", "agents.release.aborted"]}  # fmt: skip
        _ok(api.post("/api/v1/webhooks", hook), 201)
        _ok(api.put(f"{world.agent}/release", _release(world)))
        [run] = _ok(api.get(world.runs))["data"]
        assert (run["status"], run["agent_version"]) == ("queued", 2)
        drain_queues(app)
        done = _ok(api.get(f"{world.runs}/{run['id']}"))
        assert (done["status"], done["passed"]) == ("completed", True)
        promoted = _ok(api.post(f"{world.agent}/release/promote"))
        assert promoted["active_release"] is None
        assert _ok(api.get(f"{world.agent}/versions/2"))["eval_run_id"] == run["id"]
        drain_queues(app)
    [event] = received
    assert (event["event"], event["resource_id"]) == ("agents.release.promoted", world.agent_id)
    assert event["data"]["eval_run_id"] == run["id"] and event["data"]["canary_version"] == 2


def _template(url: str) -> dict[str, Any]:
    agent = {"name": "bot", "type": "http", "config": {"url": url}}
    return {"resources": {"Bot": {"type": "agent", "properties": agent}}}


def _history(api: Any, agent_id: str) -> list[tuple[int, dict[str, Any]]]:
    versions = _ok(api.get(f"{AGENTS}/{agent_id}/versions"))["data"]
    return [(v["version"], v["config"]) for v in versions]


def test_a_formation_apply_a_put_and_a_patch_leave_the_same_history(
    api: Any, project: dict[str, Any], agent_server: Agent
) -> None:
    v1, v2 = agent_server.url("v1"), agent_server.url("v2")
    body = {"project_id": project["id"], "name": "stack", "template": _template(v1)}
    formation = _ok(api.post("/api/v1/formations", body), 201)
    path = f"/api/v1/formations/{formation['id']}"
    for url in (v1, v2, v2):  # unchanged, changed, unchanged
        assert _ok(api.put(path, {"template": _template(url)}))["status"] == "active"
    formed = formation["resources"][0]["physical_resource_id"]
    histories = [_history(api, formed)]
    for method in ("PUT", "PATCH"):
        agent = {"project_id": project["id"], "name": f"by-{method}", "type": "http"}
        made = _ok(api.post(AGENTS, {**agent, "config": {"url": v1}}), 201)
        for url in (v1, v2, v2):
            _ok(api.request(method, f"{AGENTS}/{made['id']}", {"config": {"url": url}}))
        histories.append(_history(api, made["id"]))
    assert histories == [[(1, {"url": v1}), (2, {"url": v2})]] * 3
