"""A policy changed between creating an eval and running it holds at run start.

The key that created the eval (and a /v2 run) while it could read the dataset and call the
agent loses that; its next start is refused as if they did not exist — REST ``wait: true``,
REST queued, and ``/v2`` — leaves no run behind and never calls the (real, counting) agent.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.security.test_what_held import _v2_suite
from tests.support.runs import make_item
from tests.support.servers import Reply, Server, serve

ALLOW_ALL = {"effect": "Allow", "action": ["*"], "resource": ["*"]}


@pytest.fixture
def counting_agent(aws_env: None) -> Iterator[Server]:
    with serve(lambda request: Reply(200, {"output": "alpha"})) as server:
        yield server


def _created(response: Any) -> dict[str, Any]:
    assert response.status == 201, response
    return dict(response.json)


@pytest.fixture
def setup(api: Any, counting_agent: Server) -> dict[str, Any]:
    """A key whose one policy allows everything, and what it made with it."""
    project = _created(api.post("/api/v1/projects", {"name": "acme"}))
    policy = _created(
        api.post("/api/v1/policies", {"name": "team", "document": {"statement": [ALLOW_ALL]}})
    )
    key = _created(
        api.post(
            "/api/v1/api-keys",
            {"project_id": project["id"], "name": "team", "policy_ids": [policy["id"]]},
        )
    )
    team = api.as_key(key["key"])
    agent = _created(
        team.post(
            "/api/v1/agents",
            {
                "project_id": project["id"],
                "name": "bot",
                "type": "http",
                "config": {"url": counting_agent.url},
            },
        )
    )
    dataset = _created(team.post("/api/v1/datasets", {"project_id": project["id"], "name": "d"}))
    make_item(team, dataset["id"], "alpha", "alpha")
    evaluation = _created(
        team.post(
            "/api/v1/evals",
            {
                "project_id": project["id"],
                "name": "e",
                "agent_id": agent["id"],
                "dataset_id": dataset["id"],
                "scorers": [{"type": "exact_match"}],
            },
        )
    )
    first = _created(team.post(f"/api/v1/evals/{evaluation['id']}/runs", {"wait": True}))
    assert first["status"] == "completed", first
    return {
        "project": project,
        "policy": policy,
        "team": team,
        "agent": agent,
        "dataset": dataset,
        "eval": evaluation,
    }


def _deny(api: Any, setup: dict[str, Any], actions: list[str], kind: str) -> None:
    """The admin edits the key's policy: now ``actions`` are denied on the eval's ``kind``."""
    resource = f"srn:{setup['project']['id']}:{kind}:{setup[kind]['id']}"
    deny = {"effect": "Deny", "action": actions, "resource": [resource]}
    document = {"statement": [ALLOW_ALL, deny]}
    updated = api.put(f"/api/v1/policies/{setup['policy']['id']}", {"document": document})
    assert updated.status == 200, updated


def _runs(api: Any, setup: dict[str, Any]) -> list[dict[str, Any]]:
    return list(api.get(f"/api/v1/evals/{setup['eval']['id']}/runs").json["data"])


@pytest.mark.parametrize("wait", [True, False], ids=["sync", "queued"])
@pytest.mark.parametrize(
    ("actions", "kind", "field"),
    [
        (["evaluations:GetDataset"], "dataset", "dataset_id"),
        (["agents:GetAgent"], "agent", "agent_id"),
        (["agents:CreateAgentGeneration"], "agent", "agent_id"),
    ],
)
def test_a_run_start_honours_the_policy_as_it_is_now(
    api: Any,
    setup: dict[str, Any],
    counting_agent: Server,
    wait: bool,
    actions: list[str],
    kind: str,
    field: str,
) -> None:
    runs_before, calls_before = _runs(api, setup), len(counting_agent.requests)
    _deny(api, setup, actions, kind)
    started = setup["team"].post(f"/api/v1/evals/{setup['eval']['id']}/runs", {"wait": wait})
    assert started.status == 400, started
    assert started.json["error"] == {
        "code": "VALIDATION_FAILED",
        "message": f"{kind} {setup[kind]['id']} not found in this project",
        "meta": {"field": field},
    }
    assert _runs(api, setup) == runs_before  # nothing written
    assert len(counting_agent.requests) == calls_before  # and the agent never called


def test_a_v2_run_honours_the_policy_as_it_is_now(
    api: Any, setup: dict[str, Any], counting_agent: Server
) -> None:
    team = setup["team"]
    assert team.post("/v2/eval-suites", _v2_suite()).status == 201
    body = {
        "mode": "eval",
        "evalSuiteRef": "victim.corp.evals.secret-suite@1.0.0",
        "agentId": setup["agent"]["id"],
    }
    allowed = team.post("/v2/runs", body)
    assert allowed.status == 201, allowed
    calls_before = len(counting_agent.requests)
    _deny(api, setup, ["agents:*"], "agent")
    refused = team.post("/v2/runs", body)
    assert (refused.status, refused.json) == (
        400,
        {
            "error": "validation_error",
            "message": "agentId names no agent of this project",
            "details": {"field": "agentId"},
        },
    ), refused
    assert len(counting_agent.requests) == calls_before
    assert team.get(f"/v2/runs/{allowed.json['runId']}").status == 200  # the first one stands


def test_a_trigger_bound_before_the_change_no_longer_fires_for_its_binder(
    api: Any, setup: dict[str, Any]
) -> None:
    # Documented (iam.md, triggers.md): every firing re-checks the key that bound it.
    team = setup["team"]
    trigger = _created(
        team.post(
            "/api/v1/triggers",
            {
                "project_id": setup["project"]["id"],
                "name": "nightly",
                "type": "manual",
                "target_type": "eval",
                "target_id": setup["eval"]["id"],
            },
        )
    )
    _deny(api, setup, ["evaluations:GetDataset"], "dataset")
    rebind = team.request(
        "PATCH", f"/api/v1/triggers/{trigger['id']}", {"target_id": setup["eval"]["id"]}
    )
    assert rebind.status == 400 and rebind.json["error"]["meta"] == {"field": "dataset_id"}
    runs_before = len(api.get(f"/api/v1/evals/{setup['eval']['id']}/runs").json["data"])
    fired = team.post(f"/api/v1/triggers/{trigger['id']}/fire")
    assert fired.status == 200 and fired.json["status"] == "failed", fired
    error = fired.json["error"]
    assert error["code"] == "TRIGGER_BINDING_DENIED" and error["meta"]["field"] == "dataset_id"
    after = api.get(f"/api/v1/evals/{setup['eval']['id']}/runs").json["data"]
    assert len(after) == runs_before  # no run started
