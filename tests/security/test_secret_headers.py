"""Finding 5 (header values returned in clear): secret headers are write-only.

Agent and tool header values whose name looks secret are masked on every read (create,
update, get, list, versions) while the real value still reaches the agent or tool (a real
HTTP server here records what it received), and never reaches pawl's logs. Sending the mask
back on an update keeps the stored value.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from chalicelib.domain.secret_headers import MASK, is_secret_header
from tests.conftest import Api
from tests.support.servers import Reply, Request, serve

AGENTS = "/api/v1/agents"
TOOLS = "/api/v1/tools"
AGENT_SECRETS = {
    "Authorization": "Bearer agent-secret-1",
    "X-Upstream-Token": "agent-secret-2",
    "Cookie": "session=agent-secret-3",
}
TOOL_SECRETS = {"X-Api-Key": "tool-secret-1", "Proxy-Authorization": "Basic tool-secret-2"}
PLAIN = {"X-Trace": "visible-value"}


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("Authorization", True),
        ("proxy-authorization", True),
        ("X-API-KEY", True),
        ("Cookie", True),
        ("X-Session-Token", True),
        ("X-Client-Secret", True),
        ("X-Db-Password", True),
        ("X-Auth-User", True),
        ("Ocp-Apim-Subscription-Key", True),
        ("X-Trace", False),
        ("Accept", False),
        ("Content-Type", False),
    ],
)
def test_which_headers_are_secret(name: str, secret: bool) -> None:
    assert is_secret_header(name) is secret


@pytest.fixture
def scoped(api: Api, project_key: str, caplog: pytest.LogCaptureFixture) -> Api:
    """The project key's client, with pawl's logs captured down to DEBUG (no secret may show)."""
    caplog.set_level(logging.DEBUG, logger="pawl")
    return api.as_key(project_key)


def _agent_answer(request: Request) -> Reply:
    return Reply(200, {"output": "ok"})


def _masked(headers: dict[str, str]) -> dict[str, str]:
    return {name: MASK if is_secret_header(name) else value for name, value in headers.items()}


def _generate(api: Api, agent_id: str) -> Any:
    body = {"input": [{"role": "user", "content": "hi"}]}
    response = api.post(f"{AGENTS}/{agent_id}/generate", body)
    assert response.status == 201 and response.json["status"] == "completed", response
    return response.json


def _all_agent_reads(api: Api, project_id: str, agent_id: str) -> list[Any]:
    versions = api.get(f"{AGENTS}/{agent_id}/versions").json["data"]
    return [
        api.get(f"{AGENTS}/{agent_id}").json,
        *api.get(f"{AGENTS}?project_id={project_id}").json["data"],
        *versions,
        *(api.get(f"{AGENTS}/{agent_id}/versions/{v['version']}").json for v in versions),
    ]


def test_agent_secret_headers_are_masked_but_sent(
    scoped: Api, project: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    headers = {**AGENT_SECRETS, **PLAIN}
    with serve(_agent_answer) as server:
        config = {"url": f"{server.url}/agent", "headers": headers}
        body = {"project_id": project["id"], "name": "a", "type": "http", "config": config}
        created = scoped.post(AGENTS, body)
        assert created.status == 201, created
        agent = created.json
        assert agent["config"]["headers"] == _masked(headers)
        _generate(scoped, agent["id"])

        # The client edits another field and sends the config back as it read it.
        read = scoped.get(f"{AGENTS}/{agent['id']}").json
        updated = scoped.put(
            f"{AGENTS}/{agent['id']}", {"config": {**read["config"], "timeout_s": 12}}
        )
        assert updated.status == 200 and updated.json["version"] == 2, updated
        assert updated.json["config"]["headers"] == _masked(headers)
        _generate(scoped, agent["id"])

        reads = _all_agent_reads(scoped, project["id"], agent["id"])
        assert [r["config"]["headers"] for r in reads] == [_masked(headers)] * len(reads)
        for sent in server.requests:  # both versions sent the real values
            for name, value in headers.items():
                assert sent.headers[name] == value
    assert len(server.requests) == 2
    for secret in AGENT_SECRETS.values():
        assert secret not in caplog.text


def test_mask_without_a_stored_value_is_refused(scoped: Api, project: dict[str, Any]) -> None:
    config = {"url": "http://127.0.0.1:9/agent", "headers": {"Authorization": "Bearer x"}}
    body = {"project_id": project["id"], "name": "a", "type": "http", "config": config}
    agent = scoped.post(AGENTS, body).json
    new_header = {**config["headers"], "X-Other-Key": MASK}
    refused = scoped.put(f"{AGENTS}/{agent['id']}", {"config": {**config, "headers": new_header}})
    assert refused.status == 400, refused
    assert refused.json["error"]["meta"]["field"] == "config.headers.X-Other-Key"
    assert scoped.get(f"{AGENTS}/{agent['id']}").json["version"] == 1
    # A new real value replaces the stored one (the agent is then sent the new value).
    changed = scoped.put(
        f"{AGENTS}/{agent['id']}",
        {"config": {**config, "headers": {"authorization": "Bearer new"}}},
    )
    assert changed.status == 200 and changed.json["config"]["headers"] == {"authorization": MASK}


def test_tool_secret_headers_are_masked_but_sent(
    scoped: Api, project: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    headers = {**TOOL_SECRETS, **PLAIN}
    answer = {"answers": [{"name": "ok", "value": True}]}
    with serve(lambda request: Reply(200, answer)) as server:
        config = {"url": f"{server.url}/decide", "headers": headers}
        body = {"project_id": project["id"], "name": "t", "type": "http", "config": config}
        tool = scoped.post(TOOLS, body)
        assert tool.status == 201 and tool.json["config"]["headers"] == _masked(headers), tool
        tool_id = tool.json["id"]
        assert scoped.get(f"{TOOLS}/{tool_id}").json["config"]["headers"] == _masked(headers)
        listed = scoped.get(f"{TOOLS}?project_id={project['id']}").json["data"]
        assert listed[0]["config"]["headers"] == _masked(headers)

        read = scoped.get(f"{TOOLS}/{tool_id}").json
        kept = scoped.put(f"{TOOLS}/{tool_id}", {"config": {**read["config"], "timeout_s": 9}})
        assert kept.status == 200 and kept.json["config"]["headers"] == _masked(headers), kept

        question = {"name": "ok", "kind": "predicate", "prompt": "Is it ok?"}
        decider = scoped.post(
            "/api/v1/deciders",
            {
                "project_id": project["id"],
                "name": "d",
                "questions": [question],
                "backend": {"type": "tool", "tool_id": tool_id},
            },
        )
        assert decider.status == 201, decider
        made = scoped.post(f"/api/v1/deciders/{decider.json['id']}/decisions", {"input": "x"})
        assert made.status == 201 and made.json["status"] == "completed", made
        [sent] = server.requests
    for name, value in headers.items():
        assert sent.headers[name] == value
    for secret in TOOL_SECRETS.values():
        assert secret not in caplog.text
