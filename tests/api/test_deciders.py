"""Decider routes: versions, decisions through a real tool and a real chat server, refusals."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.servers import Reply, serve

QUESTIONS = [
    {"name": "resolves_issue", "kind": "predicate", "prompt": "Does the reply solve it?"},
    {
        "name": "tone",
        "kind": "score",
        "prompt": "How warm is the reply?",
        "levels": ["cold", "neutral", "warm"],
    },
    {
        "name": "route",
        "kind": "choice",
        "prompt": "Which team owns it?",
        "options": ["billing", "technical"],
    },
]
TOOL_ANSWER = {
    "answers": [
        {"name": "route", "choice": "billing"},
        {"name": "resolves_issue", "type": "predicate", "probability": 0.8},
        {"name": "tone", "score": 2},
    ]
}


def tool_reply(answer: Any) -> Any:
    return lambda request: Reply(200, answer)


def chat_completion(content: str) -> dict[str, Any]:
    return {
        "id": "cmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30},
    }


def make_tool(api: Any, project_id: str, url: str, **config: Any) -> str:
    body = {"project_id": project_id, "name": "judge", "type": "http", "config": {"url": url}}
    body["config"].update(config)
    response = api.post("/api/v1/tools", body)
    assert response.status == 201, response
    return str(response.json["id"])


def make_decider(api: Any, project_id: str, backend: dict[str, Any], /, **fields: Any) -> Any:
    body = {"project_id": project_id, "name": "review", "questions": QUESTIONS, "backend": backend}
    return api.post("/api/v1/deciders", {**body, **fields})


def listed(api: Any, project_id: str) -> list[str]:
    return [d["name"] for d in api.get(f"/api/v1/deciders?project_id={project_id}").json["data"]]


def test_tool_backend_answers_all_three_kinds(api: Any, project: dict[str, Any]) -> None:
    with serve(tool_reply(TOOL_ANSWER)) as server:
        tool_id = make_tool(api, project["id"], server.url + "/decide")
        decider = make_decider(api, project["id"], {"type": "tool", "tool_id": tool_id})
        assert decider.status == 201, decider
        assert decider.json["version"] == 1 and decider.json["id"].startswith("dcd_")
        made = api.post(
            f"/api/v1/deciders/{decider.json['id']}/decisions",
            {"input": "I was charged twice.", "metadata": {"ticket": "ZD-1"}},
        )
        assert made.status == 201, made
        [sent] = server.requests
    assert sent.json()["input"] == "I was charged twice."
    assert [q["name"] for q in sent.json()["questions"]] == ["resolves_issue", "tone", "route"]
    decision = made.json
    assert decision["status"] == "completed" and decision["error"] is None
    assert decision["decider_version"] == 1 and decision["metadata"] == {"ticket": "ZD-1"}
    # Stored in question order, normalized per kind.
    assert decision["answers"] == [
        {"type": "predicate", "name": "resolves_issue", "value": True, "probability": 0.8},
        {"type": "score", "name": "tone", "score": 2, "label": "warm"},
        {"type": "choice", "name": "route", "choice": "billing"},
    ]
    assert decision["answers_by_name"]["tone"]["score"] == 2
    assert decision["usage"]["source"] == "decider"
    read = api.get(f"/api/v1/decisions/{decision['id']}")
    assert read.status == 200 and read.json == decision


def test_ai_provider_backend_is_one_json_completion(api: Any, project: dict[str, Any]) -> None:
    content = (
        "Here you go:\n```json\n"
        + json.dumps(
            {
                "resolves_issue": {"value": False, "probability": 0.1},
                "tone": {"score": 1},
                "route": {"choice": "technical"},
            }
        )
        + "\n```"
    )
    with serve(lambda r: Reply(200, chat_completion(content))) as server:
        provider = api.post(
            "/api/v1/ai-providers",
            {
                "project_id": project["id"],
                "name": "local",
                "base_url": server.url + "/v1",
                "default_model": "judge-small",
            },
        )
        assert provider.status == 201, provider
        backend = {
            "type": "ai_provider",
            "ai_provider_id": provider.json["id"],
            "model": "judge-xl",
        }
        decider = make_decider(api, project["id"], backend).json
        made = api.post(f"/api/v1/deciders/{decider['id']}/decisions", {"input": {"reply": "hi"}})
        [sent] = server.requests
    assert sent.path == "/v1/chat/completions"
    request = sent.json()
    assert request["model"] == "judge-xl"
    prompt = request["messages"][-1]["content"]
    for expected in ("resolves_issue", "2: warm", "technical", '"reply": "hi"'):
        assert expected in prompt
    decision = made.json
    assert decision["status"] == "completed", decision
    assert [a.get("value", a.get("score", a.get("choice"))) for a in decision["answers"]] == [
        False,
        1,
        "technical",
    ]
    assert decision["answers"][0]["probability"] == 0.1
    assert decision["usage"] == {
        "source": "decider",
        "input_tokens": 120,
        "output_tokens": 30,
        "cost_usd": 0.0,
        "model": "judge-xl",
    }


ROUTE = {"name": "route", "choice": "billing"}
RESOLVES = {"name": "resolves_issue", "probability": 0.8}
TONE = {"name": "tone", "score": 2}


@pytest.mark.parametrize(
    ("answers", "fragment"),
    [
        ([ROUTE, RESOLVES, TONE, TONE], "answered twice"),
        ([ROUTE, RESOLVES], "no answer to question(s) tone"),
        ([ROUTE, RESOLVES, {"name": "tone", "score": 3}], "integer from 0 to 2"),
        ([ROUTE, RESOLVES, {"name": "tone", "score": 1.5}], "integer from 0 to 2"),
        ([ROUTE, RESOLVES, {"name": "tone", "score": True}], "integer from 0 to 2"),
        ([{"name": "route", "choice": "sales"}, RESOLVES, TONE], "one of billing, technical"),
        ([{**ROUTE, "why": "because"}, RESOLVES, TONE], "unknown field(s) why"),
        ([ROUTE, RESOLVES, TONE, {"name": "ghost", "value": True}], "names no question"),
        ([ROUTE, {"name": "resolves_issue", "probability": 1.5}, TONE], "from 0 to 1"),
        ([ROUTE, {"name": "resolves_issue"}, TONE], "value (true/false) or probability"),
        ([ROUTE, {"name": "resolves_issue", "value": "yes"}, TONE], "true or false"),
        ([ROUTE, {**RESOLVES, "type": "score"}, TONE], "is not the question's 'predicate'"),
        ("all good", "must be a list"),
    ],
)
def test_answer_outside_the_contract_fails_the_decision(
    api: Any, project: dict[str, Any], answers: Any, fragment: str
) -> None:
    with serve(tool_reply({"answers": answers})) as server:
        tool_id = make_tool(api, project["id"], server.url)
        decider = make_decider(api, project["id"], {"type": "tool", "tool_id": tool_id}).json
        made = api.post(f"/api/v1/deciders/{decider['id']}/decisions", {"input": "x"})
    assert made.status == 201, made
    assert made.json["status"] == "failed" and made.json["answers"] is None
    assert made.json["error"]["code"] == "DECISION_ANSWER_INVALID"
    assert fragment in made.json["error"]["message"]
    assert api.get(f"/api/v1/decisions/{made.json['id']}").json == made.json


def test_failing_tool_fails_the_decision_with_its_code(api: Any, project: dict[str, Any]) -> None:
    with serve(lambda r: Reply(500, {"error": "boom"})) as server:
        tool_id = make_tool(api, project["id"], server.url)
        decider = make_decider(api, project["id"], {"type": "tool", "tool_id": tool_id}).json
        made = api.post(f"/api/v1/deciders/{decider['id']}/decisions", {"input": "x"})
    assert made.json["status"] == "failed"
    assert made.json["error"]["code"] == "TOOL_CALL_FAILED"
    assert "HTTP 500" in made.json["error"]["message"]


def test_every_write_is_a_version(api: Any, project: dict[str, Any]) -> None:
    with serve(tool_reply({"answers": [{"name": "ok", "value": True}]})) as server:
        tool_id = make_tool(api, project["id"], server.url)
        decider = make_decider(api, project["id"], {"type": "tool", "tool_id": tool_id}).json
        path = f"/api/v1/deciders/{decider['id']}"
        new_questions = [{"name": "ok", "kind": "predicate", "prompt": "Is it ok?"}]
        updated = api.put(path, {"questions": new_questions, "expected_version": 1})
        assert updated.status == 200, updated
        assert updated.json["version"] == 2 and updated.json["questions"] == new_questions
        stale = api.put(path, {"name": "renamed", "expected_version": 1})
        assert stale.status == 409 and stale.code == "VERSION_CONFLICT"
        decision = api.post(f"{path}/decisions", {"input": "x"}).json
    assert decision["status"] == "completed" and decision["decider_version"] == 2
    versions = api.get(f"{path}/versions").json["data"]
    assert [v["version"] for v in versions] == [1, 2]
    assert api.get(f"{path}/versions/1").json["questions"] == QUESTIONS
    assert api.get(f"{path}/versions/2").json["questions"] == new_questions
    assert api.get(f"{path}/versions/3").status == 404
    assert api.get(f"{path}/versions/two").status == 404
    backend = {"type": "tool", "tool_id": tool_id}
    assert make_decider(api, project["id"], backend, name="taken").status == 201
    clash = api.put(path, {"name": "taken"})
    assert clash.status == 409 and clash.code == "NAME_CONFLICT"
    renamed = api.put(path, {"name": "renamed", "description": "v3"})
    assert renamed.json["version"] == 3 and renamed.json["questions"] == new_questions
    assert make_decider(api, project["id"], backend).status == 201  # "review" is free again
    assert api.delete(path).status == 204
    assert api.get(path).status == 404
    assert api.get(f"/api/v1/decisions/{decision['id']}").status == 200  # outlives its decider


def question(**fields: Any) -> list[dict[str, Any]]:
    return [{**QUESTIONS[0], **fields}]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"questions": []}, "questions"),
        ({"questions": [QUESTIONS[0], QUESTIONS[0]]}, "questions"),
        ({"questions": question(name="1bad")}, "questions.0.predicate.name"),
        ({"questions": question(kind="rating")}, "questions.0"),
        ({"questions": question(levels=["a", "b"])}, "questions.0.predicate.levels"),
        ({"questions": [{**QUESTIONS[1], "levels": ["only"]}]}, "questions.0.score.levels"),
        ({"questions": [{**QUESTIONS[2], "options": ["a", "a"]}]}, "questions.0.choice.options"),
        ({"questions": [{**QUESTIONS[2], "options": None}]}, "questions.0.choice.options"),
        ({"backend": {"type": "agent"}}, "backend"),
        ({"backend": {"type": "tool"}}, "backend.tool.tool_id"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_refusals_name_the_field_and_write_nothing(
    api: Any, project: dict[str, Any], fields: dict[str, Any], field: str
) -> None:
    tool_id = make_tool(api, project["id"], "http://127.0.0.1:9/")
    refused = make_decider(api, project["id"], {"type": "tool", "tool_id": tool_id}, **fields)
    assert refused.status == 400, refused
    assert refused.json["error"]["meta"]["field"] == field, refused
    assert listed(api, project["id"]) == []


def test_backends_that_cannot_answer_are_refused(api: Any, project: dict[str, Any]) -> None:
    client = api.post(
        "/api/v1/tools", {"project_id": project["id"], "name": "c", "type": "client"}
    ).json
    pinned = make_tool(
        api, project["id"], "http://127.0.0.1:9/", preset_parameters={"questions": []}
    )
    cases = [
        ({"type": "tool", "tool_id": "tool_missing"}, "TOOL_NOT_FOUND"),
        ({"type": "tool", "tool_id": client["id"]}, "DECIDER_TOOL_NOT_CALLABLE"),
        ({"type": "tool", "tool_id": pinned}, "DECIDER_TOOL_NOT_CALLABLE"),
        ({"type": "ai_provider", "ai_provider_id": "aip_missing"}, "AI_PROVIDER_NOT_FOUND"),
    ]
    for backend, code in cases:
        refused = make_decider(api, project["id"], backend)
        assert refused.status == 400 and refused.code == code, refused
    assert listed(api, project["id"]) == []


def test_decision_request_refusals(api: Any, project: dict[str, Any]) -> None:
    tool_id = make_tool(api, project["id"], "http://127.0.0.1:9/")
    decider = make_decider(api, project["id"], {"type": "tool", "tool_id": tool_id}).json
    path = f"/api/v1/deciders/{decider['id']}/decisions"
    assert api.post(path, {}).json["error"]["meta"]["field"] == "input"
    assert api.post(path, {"input": None}).json["error"]["meta"]["field"] == "input"
    assert api.post(path, {"input": "x", "wait": True}).json["error"]["meta"]["field"] == "wait"
    big = api.post(path, {"input": "x", "metadata": {"k": "v" * 20_000}})
    assert big.status == 400 and big.json["error"]["meta"]["field"] == "metadata"
    # The tool is deleted: the request is refused before any decision is written.
    assert api.delete(f"/api/v1/tools/{tool_id}").status == 204
    gone = api.post(path, {"input": "x"})
    assert gone.status == 400 and gone.code == "TOOL_NOT_FOUND"


def test_tenancy(api: Any, project: dict[str, Any], project_key: str) -> None:
    other = api.post("/api/v1/projects", {"name": "other"}).json
    with serve(tool_reply({"answers": [{"name": "ok", "value": True}]})) as server:
        foreign_tool = make_tool(api, other["id"], server.url)
        one = [{"name": "ok", "kind": "predicate", "prompt": "ok?"}]
        backend = {"type": "tool", "tool_id": foreign_tool}
        foreign = make_decider(api, other["id"], backend, questions=one).json
        decision = api.post(f"/api/v1/deciders/{foreign['id']}/decisions", {"input": "x"}).json
    scoped = api.as_key(project_key)
    assert scoped.get(f"/api/v1/deciders/{foreign['id']}").status == 404
    assert scoped.get(f"/api/v1/deciders/{foreign['id']}/versions/1").status == 404
    assert scoped.post(f"/api/v1/deciders/{foreign['id']}/decisions", {"input": "x"}).status == 404
    assert scoped.get(f"/api/v1/decisions/{decision['id']}").status == 404
    # Another project's tool is as missing as no tool.
    refused = scoped.post(
        "/api/v1/deciders", {"name": "mine", "questions": one, "backend": backend}
    )
    assert refused.status == 400 and refused.code == "TOOL_NOT_FOUND"
    assert make_decider(scoped, other["id"], backend).status == 403
