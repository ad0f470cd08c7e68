"""Resources a stored resource names, re-checked as the caller each time pawl is made to use
them: a decision re-checks its decider's backend, and an eval's scorer that falls back on
the project's default AI provider needs read on it (docs/iam.md, "References")."""

from __future__ import annotations

from typing import Any

from chalicelib import ids
from tests.api.test_authorization import allow, key_with
from tests.api.test_deciders import QUESTIONS, chat_completion, make_decider, make_tool
from tests.support.servers import Reply, serve

TOOL_ANSWER = {
    "answers": [
        {"name": "route", "choice": "billing"},
        {"name": "resolves_issue", "type": "predicate", "probability": 0.8},
        {"name": "tone", "score": 2},
    ]
}


def deny(actions: list[str], *resources: str) -> dict[str, Any]:
    return {"effect": "Deny", "action": actions, "resource": list(resources)}


def _decide(client: Any, decider_id: str) -> Any:
    return client.post(f"/api/v1/deciders/{decider_id}/decisions", {"input": "charged twice"})


def test_a_decision_re_checks_the_deciders_tool_as_the_caller(
    api: Any, project: dict[str, Any]
) -> None:
    pid = project["id"]
    with serve(lambda request: Reply(200, TOOL_ANSWER)) as tool_server:
        tool_id = make_tool(api, pid, tool_server.url + "/decide")
        decider = make_decider(api, pid, {"type": "tool", "tool_id": tool_id}).json
        everything = allow(["*"], "*")
        denied = key_with(
            api, pid, everything, deny(["tools:GetTool"], f"srn:{pid}:tool:{tool_id}")
        )
        not_allowed = key_with(
            api, pid, allow(["deciders:CreateDecision"], f"srn:{pid}:decider:{decider['id']}")
        )
        allowed = key_with(
            api,
            pid,
            allow(["deciders:CreateDecision"], f"srn:{pid}:decider:{decider['id']}"),
            allow(["tools:GetTool"], f"srn:{pid}:tool:{tool_id}"),
        )
        refusals = [_decide(denied, decider["id"]), _decide(not_allowed, decider["id"])]
        assert len(tool_server.requests) == 0
        made = _decide(allowed, decider["id"])
        assert made.status == 201, made
        assert len(tool_server.requests) == 1
    # Answered as a tool that is not there: what bind_backend says of a deleted one.
    missing = {
        "code": "TOOL_NOT_FOUND",
        "message": f"tool {tool_id} does not exist in this project",
        "meta": {"field": "backend.tool_id"},
    }
    for refused in refusals:
        assert refused.status == 400, refused
        assert refused.json["error"]["code"] == missing["code"]
        assert refused.json["error"]["message"] == missing["message"]
        assert refused.json["error"]["meta"]["field"] == "backend.tool_id"
    assert api.get(f"/api/v1/decisions/{made.json['id']}").status == 200


def test_a_decision_re_checks_the_deciders_ai_provider_as_the_caller(
    api: Any, project: dict[str, Any]
) -> None:
    pid = project["id"]
    content = (
        '{"resolves_issue": {"value": true}, "tone": {"score": 1}, "route": {"choice": "billing"}}'
    )
    with serve(lambda request: Reply(200, chat_completion(content))) as provider_server:
        provider = api.post(
            "/api/v1/ai-providers",
            {
                "project_id": pid,
                "name": "p",
                "base_url": provider_server.url + "/v1",
                "default_model": "m",
            },
        ).json
        backend = {"type": "ai_provider", "ai_provider_id": provider["id"]}
        decider = make_decider(api, pid, backend, questions=QUESTIONS).json
        provider_srn = f"srn:{pid}:ai-provider:{provider['id']}"
        denied = key_with(
            api, pid, allow(["*"], "*"), deny(["ai-providers:GetAiProvider"], provider_srn)
        )
        refused = _decide(denied, decider["id"])
        assert len(provider_server.requests) == 0
        made = _decide(key_with(api, pid, allow(["*"], "*")), decider["id"])
        assert made.status == 201 and len(provider_server.requests) == 1
    assert refused.status == 400, refused
    assert refused.json["error"]["code"] == "AI_PROVIDER_NOT_FOUND"
    assert refused.json["error"]["message"] == (
        f"AI provider {provider['id']} does not exist in this project"
    )
    assert refused.json["error"]["meta"]["field"] == "backend.ai_provider_id"
    assert ids.is_id("ai_provider", provider["id"])
