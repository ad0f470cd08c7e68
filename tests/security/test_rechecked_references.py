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


# --- a scorer that falls back on the project's default AI provider --------------------------

UNPINNED_JUDGE = {"type": "llm_judge", "prompt": "Is {{output}} right?", "pass_threshold": 0.5}


def _default_provider(api: Any, project_id: str, url: str) -> str:
    provider = api.post(
        "/api/v1/ai-providers",
        {"project_id": project_id, "name": "judge", "base_url": url + "/v1", "default_model": "m"},
    )
    assert provider.status == 201, provider
    updated = api.put(
        f"/api/v1/projects/{project_id}", {"default_ai_provider_id": provider.json["id"]}
    )
    assert updated.status == 200, updated
    return str(provider.json["id"])


def _missing_default(index: int, provider_id: str) -> dict[str, Any]:
    where = f"scorers.{index}.ai_provider_id"
    return {
        "code": "VALIDATION_FAILED",
        "message": f"{where}: the project's default ai_provider {provider_id} no longer exists",
        "meta": {"field": where},
    }


def test_an_unpinned_judge_needs_read_on_the_default_provider_at_create_update_and_start(
    api: Any, project: dict[str, Any], plugins: Any
) -> None:
    from tests.support.runs import make_suite

    pid = project["id"]
    with serve(lambda request: Reply(200, chat_completion('{"score": 1}'))) as judge:
        provider_id = _default_provider(api, pid, judge.url)
        suite = make_suite(api, project, [("echo:a", "a")], scorers=[UNPINNED_JUDGE])
        provider_srn = f"srn:{pid}:ai-provider:{provider_id}"
        denied = key_with(
            api, pid, allow(["*"], "*"), deny(["ai-providers:GetAiProvider"], provider_srn)
        )
        body = {
            "name": "second",
            "agent_id": suite.agent["id"],
            "dataset_id": suite.dataset["id"],
            "scorers": [{"type": "exact_match"}, UNPINNED_JUDGE],
        }
        created = denied.post("/api/v1/evals", body)
        updated = denied.put(f"/api/v1/evals/{suite.eval['id']}", {"scorers": [UNPINNED_JUDGE]})
        started = denied.post(suite.runs_path, {"wait": True})
        assert len(judge.requests) == 0
        # A pinned judge names its own provider: that one is what needs read, not the default.
        pinned = {**UNPINNED_JUDGE, "ai_provider_id": provider_id}
        assert denied.post("/api/v1/evals", {**body, "scorers": [pinned]}).status == 400
        allowed = key_with(api, pid, allow(["*"], "*"))
        assert allowed.post("/api/v1/evals", body).status == 201
        control = allowed.post(suite.runs_path, {"wait": True})
        assert control.status == 201, control
        assert len(judge.requests) >= 1
    assert (created.status, created.json["error"]) == (400, _missing_default(1, provider_id))
    assert (updated.status, updated.json["error"]) == (400, _missing_default(0, provider_id))
    assert (started.status, started.json["error"]) == (400, _missing_default(0, provider_id))
    names = [e["name"] for e in api.get(f"/api/v1/evals?project_id={pid}").json["data"]]
    assert names.count("second") == 1  # only the allowed key's
    runs = api.get(suite.runs_path).json["data"]
    assert [r["id"] for r in runs] == [control.json["id"]]


def test_a_v2_rubric_run_needs_read_on_the_default_provider(
    api: Any, project: dict[str, Any]
) -> None:
    from tests.v2.conftest import assert_envelope
    from tests.v2.conftest import suite as v2_suite

    pid = project["id"]
    with serve(lambda request: Reply(200, chat_completion('{"met": [true]}'))) as judge:
        provider_id = _default_provider(api, pid, judge.url)
        provider_srn = f"srn:{pid}:ai-provider:{provider_id}"
        denied = key_with(
            api, pid, allow(["*"], "*"), deny(["ai-providers:GetAiProvider"], provider_srn)
        )
        allowed = key_with(api, pid, allow(["*"], "*"))
        rubric = v2_suite(
            "acme.tests.evals.manners",
            modes=["golden", "rubric"],
            tasks=[
                {
                    "taskId": "greet",
                    "input": "say hi",
                    "expected": {"kind": "rubric", "rubric": [{"criterion": "ok", "weight": 1}]},
                }
            ],
            thresholds={"passScore": 0.5},
        )
        assert allowed.post("/v2/eval-suites", rubric).status == 201
        run = {
            "mode": "eval",
            "evalSuiteRef": "acme.tests.evals.manners",
            "agentId": "conformance-eval-agent",
        }
        modes = lambda client: client.get("/v2/discovery").json["agents"]["evalSuite"]["modes"]  # noqa: E731
        assert modes(denied) == ["golden", "regression"]  # as a project without a judge
        assert modes(allowed) == ["golden", "rubric", "regression"]
        refused = denied.post("/v2/runs", run)
        assert len(judge.requests) == 0
        assert allowed.post("/v2/runs", run).status == 201
    assert_envelope(refused, 400, "validation_error")
    assert "no judge" in str(refused.json)  # what a project without a judge is told
