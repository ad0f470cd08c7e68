"""The ``decider`` scorer against real backends: an http tool and an OpenAI-compatible chat
server on 127.0.0.1. Deciders are created through the API; the scorer is the registered
plugin, called as the engine calls it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chalicelib.errors import ValidationFailed
from chalicelib.plugins.manager import plugins
from chalicelib.scoring.contract import (
    ItemContext,
    ScoreOutcome,
    ScorerFailed,
    ScoringEnv,
    UsageRecord,
)
from chalicelib.scoring.decider_scorer import resolve_decider_versions
from chalicelib.scoring.validation import env_for_project, validate_scorers
from tests.support.servers import Reply, Request, serve

QUESTIONS = [
    {"name": "resolves_issue", "kind": "predicate", "prompt": "Does the reply solve it?"},
    {"name": "tone", "kind": "score", "prompt": "How warm?", "levels": ["cold", "ok", "warm"]},
    {"name": "route", "kind": "choice", "prompt": "Which team?", "options": ["billing", "tech"]},
]
ANSWERS = {
    "answers": [
        {"name": "resolves_issue", "probability": 0.8},
        {"name": "tone", "score": 2},
        {"name": "route", "choice": "billing"},
    ]
}
ITEM = ItemContext(
    input=[{"role": "user", "content": "I was charged twice."}],
    output="Sorry! I refunded the second charge.",
    expected=None,
    item_metadata={"topic": "billing"},
)
#: resolves_issue.probability x tone as 0-1 (three levels: divide by the top index, 2).
SCORE_RULE = {
    "*": [
        {"var": "answers_by_name.resolves_issue.probability"},
        {"/": [{"var": "answers_by_name.tone.score"}, 2]},
    ]
}


def make_decider(api: Any, project_id: str, backend: dict[str, Any]) -> dict[str, Any]:
    body = {"project_id": project_id, "name": "review", "questions": QUESTIONS, "backend": backend}
    response = api.post("/api/v1/deciders", body)
    assert response.status == 201, response
    return dict(response.json)


def tool_backed(api: Any, project_id: str, url: str) -> dict[str, Any]:
    tool = api.post(
        "/api/v1/tools",
        {"project_id": project_id, "name": "judge", "type": "http", "config": {"url": url}},
    )
    assert tool.status == 201, tool
    return make_decider(api, project_id, {"type": "tool", "tool_id": tool.json["id"]})


def env(project_id: str, **fields: Any) -> ScoringEnv:
    return ScoringEnv(
        project_id=project_id,
        eval_id="eval_1",
        run_id="evrun_1",
        dataset_item_id="dsit_1",
        **fields,
    )


def score(decider_id: str, scoring_env: ScoringEnv, **fields: Any) -> ScoreOutcome:
    scorer = plugins().scorer("decider")
    raw = {
        "type": "decider",
        "name": "review",
        "decider_id": decider_id,
        "score": SCORE_RULE,
        "pass_threshold": 0.7,
        **fields,
    }
    outcome: ScoreOutcome = scorer.score(scorer.config_model.model_validate(raw), ITEM, scoring_env)
    return outcome


def test_each_item_is_one_recorded_decision(api: Any, project: dict[str, Any]) -> None:
    with serve(lambda r: Reply(200, ANSWERS)) as server:
        decider = tool_backed(api, project["id"], server.url)
        mapping = {"customer": {"var": "input.0.content"}, "reply": {"var": "output"}}
        outcome = score(decider["id"], env(project["id"]), input=mapping)
        plain = score(decider["id"], env(project["id"]))
        mapped, whole = server.requests
    assert outcome.score == pytest.approx(0.8) and outcome.passed is True
    assert mapped.json()["input"] == {
        "customer": "I was charged twice.",
        "reply": "Sorry! I refunded the second charge.",
    }
    assert whole.json()["input"] == ITEM.as_variables()  # no mapping: the item context itself
    assert outcome.usage == (UsageRecord(source="decider"),)
    assert outcome.decision_id is not None and plain.decision_id != outcome.decision_id
    decision = api.get(f"/api/v1/decisions/{outcome.decision_id}").json
    assert decision["status"] == "completed" and decision["decider_version"] == 1
    assert decision["metadata"] == {
        "eval_id": "eval_1",
        "eval_run_id": "evrun_1",
        "dataset_item_id": "dsit_1",
    }
    assert [a["name"] for a in decision["answers"]] == ["resolves_issue", "tone", "route"]


def test_the_pinned_version_answers(api: Any, project: dict[str, Any]) -> None:
    with serve(lambda r: Reply(200, ANSWERS)) as server:
        decider = tool_backed(api, project["id"], server.url)
        scorers = [
            {"type": "exact_match"},
            {"type": "decider", "name": "review", "decider_id": decider["id"]},
        ]
        assert resolve_decider_versions(scorers, project["id"]) == {"review": 1}
        reworded = [{**QUESTIONS[0], "prompt": "Reworded?"}, *QUESTIONS[1:]]
        updated = api.put(f"/api/v1/deciders/{decider['id']}", {"questions": reworded})
        assert updated.json["version"] == 2
        pinned = score(decider["id"], env(project["id"], decider_versions={"review": 1}))
        current = score(decider["id"], env(project["id"]))
        first, second = server.requests
    assert first.json()["questions"][0]["prompt"] == "Does the reply solve it?"
    assert second.json()["questions"][0]["prompt"] == "Reworded?"
    for outcome, version in ((pinned, 1), (current, 2)):
        decision = api.get(f"/api/v1/decisions/{outcome.decision_id}").json
        assert decision["decider_version"] == version
    assert resolve_decider_versions(scorers, project["id"]) == {"review": 2}
    assert resolve_decider_versions([{"type": "exact_match"}]) is None
    with pytest.raises(ValidationFailed) as refused:
        resolve_decider_versions(
            [*scorers, {"type": "decider", "name": "x", "decider_id": "dcd_0"}]
        )
    assert refused.value.meta["field"] == "scorers.2.decider_id"


def test_a_failed_decision_errors_the_item(api: Any, project: dict[str, Any]) -> None:
    bad = {"answers": [*ANSWERS["answers"][:2], {"name": "route", "choice": "sales"}]}
    with serve(lambda r: Reply(200, bad)) as server:
        decider = tool_backed(api, project["id"], server.url)
        with pytest.raises(ScorerFailed) as failed:
            score(decider["id"], env(project["id"]))
    assert failed.value.code == "DECISION_ANSWER_INVALID"
    decision_id = failed.value.meta["decision_id"]
    assert decision_id in failed.value.message and "decider scorer 'review'" in failed.value.message
    decision = api.get(f"/api/v1/decisions/{decision_id}").json
    assert decision["status"] == "failed" and decision["error"]["code"] == "DECISION_ANSWER_INVALID"


@pytest.mark.parametrize(
    ("rule", "fragment"),
    [
        ({"var": "answers_by_name.tone.score"}, "yielded 2, outside 0-1"),
        ({"-": [0, {"var": "answers_by_name.resolves_issue.probability"}]}, "outside 0-1"),
        ({"var": "answers_by_name.route.choice"}, "'billing', not a number"),
        ({"var": "answers_by_name.missing.probability"}, "None, not a number"),
        ({"==": [1, 1]}, "True, not a number"),
    ],
)
def test_a_score_outside_0_1_errors_the_item(
    api: Any, project: dict[str, Any], rule: Any, fragment: str
) -> None:
    with serve(lambda r: Reply(200, ANSWERS)) as server:
        decider = tool_backed(api, project["id"], server.url)
        with pytest.raises(ScorerFailed) as failed:
            score(decider["id"], env(project["id"]), score=rule)
    assert failed.value.code == "DECIDER_SCORE_INVALID"
    assert fragment in failed.value.message
    assert failed.value.meta["decision_id"] in failed.value.message


def completion(request: Request) -> Reply:
    content = json.dumps(
        {
            "resolves_issue": {"value": True, "probability": 0.9},
            "tone": {"score": 1},
            "route": {"choice": "billing"},
        }
    )
    return Reply(
        200,
        {
            "choices": [{"message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 200, "completion_tokens": 40, "cost": 0.0012},
        },
    )


def test_ai_provider_backend(api: Any, project: dict[str, Any]) -> None:
    with serve(completion) as server:
        provider = api.post(
            "/api/v1/ai-providers",
            {
                "project_id": project["id"],
                "name": "p",
                "base_url": server.url,
                "default_model": "m",
            },
        ).json
        decider = make_decider(
            api, project["id"], {"type": "ai_provider", "ai_provider_id": provider["id"]}
        )
        outcome = score(decider["id"], env(project["id"]))
        [sent] = server.requests
    assert sent.json()["model"] == "m"
    assert "I was charged twice." in sent.json()["messages"][-1]["content"]
    assert outcome.score == pytest.approx(0.45) and outcome.passed is False  # 0.9 x 1/2 < 0.7
    assert outcome.usage == (
        UsageRecord(
            source="decider", input_tokens=200, output_tokens=40, cost_usd=0.0012, model="m"
        ),
    )


def test_scorer_validation_and_a_backend_gone_mid_run(api: Any, project: dict[str, Any]) -> None:
    decider = tool_backed(api, project["id"], "http://127.0.0.1:9/")
    other = api.post("/api/v1/projects", {"name": "other"}).json
    foreign = tool_backed(api, other["id"], "http://127.0.0.1:9/")

    def validate(decider_id: str) -> None:
        scorer = {
            "type": "decider",
            "name": "review",
            "decider_id": decider_id,
            "score": SCORE_RULE,
            "pass_threshold": 0.7,
        }
        validate_scorers([scorer], env_for_project(project["id"], "run_start", None))

    validate(decider["id"])
    for missing in (foreign["id"], "dcd_missing"):
        with pytest.raises(ValidationFailed) as refused:
            validate(missing)
        assert refused.value.meta["field"] == "scorers.0.decider_id"
    tool_id = decider["backend"]["tool_id"]
    assert api.delete(f"/api/v1/tools/{tool_id}").status == 204
    with pytest.raises(ValidationFailed) as refused:
        validate(decider["id"])
    assert refused.value.code == "TOOL_NOT_FOUND"
    assert refused.value.meta["field"] == "scorers.0.decider_id"
    with pytest.raises(ScorerFailed) as failed:
        score(decider["id"], env(project["id"], decider_versions={"review": 1}))
    assert failed.value.code == "TOOL_NOT_FOUND"


def test_a_run_scored_by_a_decider(api: Any, project: dict[str, Any]) -> None:
    """Each result names its decision; a failed decision errors its item, never a 0."""

    def decide(request: Request) -> Reply:
        if request.json()["input"]["reply"] == "bad":
            return Reply(200, {"answers": ANSWERS["answers"][:2]})  # route unanswered
        return Reply(200, ANSWERS)

    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = api.post(path, {"project_id": project["id"], **body})
        assert response.status == 201, response
        return dict(response.json)

    with serve(decide) as server:
        decider = tool_backed(api, project["id"], server.url)
        agent = post(
            "/api/v1/agents",
            {
                "name": "a",
                "type": "python",
                "config": {"callable": "tests.support.agents:scripted"},
            },
        )
        dataset = post("/api/v1/datasets", {"name": "d"})
        for text in ("echo:good", "echo:bad"):
            item = {"input": [{"role": "user", "content": text}]}
            assert api.post(f"/api/v1/datasets/{dataset['id']}/items", item).status == 201
        scorer = {
            "type": "decider",
            "name": "review",
            "decider_id": decider["id"],
            "input": {"reply": {"var": "output"}},
            "score": SCORE_RULE,
            "pass_threshold": 0.7,
        }
        evaluation = post(
            "/api/v1/evals",
            {
                "name": "e",
                "agent_id": agent["id"],
                "dataset_id": dataset["id"],
                "scorers": [scorer],
            },
        )
        runs = f"/api/v1/evals/{evaluation['id']}/runs"
        run = api.post(runs, {"wait": True})
        assert run.status in (200, 201), run
    assert (run.json["completed_count"], run.json["errored_count"]) == (1, 1)
    assert run.json["decider_versions"] == {"review": decider["version"]}  # pinned at start
    results = {r["output"]: r for r in api.get(f"{runs}/{run.json['id']}/results").json["data"]}
    [entry] = results["good"]["scores"]
    assert entry["scorer"] == "review" and entry["score"] == pytest.approx(0.8)
    decision = api.get(f"/api/v1/decisions/{entry['decision_id']}").json
    assert decision["metadata"] == {
        "eval_id": evaluation["id"],
        "eval_run_id": run.json["id"],
        "dataset_item_id": results["good"]["dataset_item_id"],
    }
    error = results["bad"]["error"]
    assert error["code"] == "DECISION_ANSWER_INVALID" and "dec_" in error["message"]
