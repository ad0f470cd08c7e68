"""The ``llm_judge`` scorer against a real OpenAI-compatible chat server on 127.0.0.1.

The first half calls the scorer the engine uses (from the plugin host) item by item; the
second half goes through the API: evals bound to judges, synchronous runs scored by the
judge, and the default-provider rules at create, update and run start.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from chalicelib import wiring
from chalicelib.domain.ai_providers import AiProviderSpec
from chalicelib.errors import ValidationFailed
from chalicelib.plugins.manager import plugins
from chalicelib.scoring.contract import ItemContext, ScorerFailed, ScoringEnv, UsageRecord
from chalicelib.scoring.llm_judge import llm_judge_scorer
from chalicelib.scoring.validation import env_for_project, validate_scorers
from chalicelib.store import ai_providers, tenancy
from tests.support.runs import all_results, make_suite
from tests.support.servers import Reply, Request, Server, allow_loopback_port, serve

MESSAGES = [{"role": "user", "content": "What is 2+2?"}]
PROMPT = "Grade.\nQ: {{input}}\nA: {{output}}\nRef: {{expected}}\nKeep {{foo}} as is."


def chat_reply(content: str, usage: dict[str, Any] | None = None) -> Reply:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return Reply(200, body)


def replying(content: str, usage: dict[str, Any] | None = None) -> Callable[[Request], Reply]:
    return lambda request: chat_reply(content, usage)


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("PAWL_HTTP_BACKOFF_BASE_S", "0.001")
    monkeypatch.setenv("PAWL_HTTP_MAX_ATTEMPTS", "3")
    wiring.reload_settings()
    yield
    wiring.reload_settings()


@pytest.fixture
def project_id(aws_env: None) -> str:
    return tenancy.create_project("judged").id


def add_provider(project_id: str, server: Server, **fields: Any) -> str:
    spec = {"name": "judge", "base_url": f"{server.url}/v1", "default_model": "judge-small"}
    spec.update(fields)
    return ai_providers.create_provider(project_id, AiProviderSpec(**spec)).id


def judge_config(**fields: Any) -> Any:
    return llm_judge_scorer.config_model.model_validate(
        {"type": "llm_judge", "prompt": PROMPT, "pass_threshold": 0.7, **fields}
    )


def item(output: str | None = "4", expected: str | None = "four") -> ItemContext:
    return ItemContext(input=MESSAGES, output=output, expected=expected, item_metadata={})


def score(project_id: str, config: Any, context: ItemContext | None = None) -> Any:
    scorer = plugins().scorer("llm_judge")
    return scorer.score(config, context or item(), ScoringEnv(project_id=project_id))


# --- the scorer, item by item -------------------------------------------------------------------


def test_the_engine_gets_this_scorer_from_the_plugin_host() -> None:
    assert plugins().scorer("llm_judge") is llm_judge_scorer


def test_request_fills_slots_once_at_temperature_zero_without_tools(project_id: str) -> None:
    usage = {"prompt_tokens": 120, "completion_tokens": 9}
    with serve(replying('{"score": 0.8, "reasoning": "right"}', usage)) as server:
        provider_id = add_provider(project_id, server)
        tricky = item(output="I answer {{output}} and {{expected}}", expected="4")
        outcome = score(project_id, judge_config(ai_provider_id=provider_id), tricky)
    assert (outcome.score, outcome.passed, outcome.reasoning) == (0.8, True, "right")
    [request] = server.requests
    assert request.method == "POST" and request.path == "/v1/chat/completions"
    assert "authorization" not in {name.lower() for name in request.headers}
    body = request.json()
    assert body["temperature"] == 0 and body["model"] == "judge-small"
    assert "tools" not in body and "tool_choice" not in body and "functions" not in body
    [message] = body["messages"]
    assert message["role"] == "user"
    assert message["content"] == (
        f"Grade.\nQ: {json.dumps(MESSAGES)}\nA: I answer {{{{output}}}} and {{{{expected}}}}\n"
        "Ref: 4\nKeep {{foo}} as is."
    )
    assert outcome.usage == (
        UsageRecord(
            source="eval_judge",
            input_tokens=120,
            output_tokens=9,
            cost_usd=0.0,
            model="judge-small",
        ),
    )


def test_missing_expected_output_fills_empty(project_id: str) -> None:
    with serve(replying('{"score": 0.2}')) as server:
        provider_id = add_provider(project_id, server)
        outcome = score(project_id, judge_config(ai_provider_id=provider_id), item(expected=None))
    assert (outcome.score, outcome.passed, outcome.reasoning) == (0.2, False, None)
    assert "\nRef: \n" in server.requests[0].json()["messages"][0]["content"]


def test_model_override_key_from_the_environment_and_reported_cost(
    project_id: str, monkeypatch: pytest.MonkeyPatch, credential_env: Any
) -> None:
    credential_env("TEST_JUDGE_KEY")
    monkeypatch.setenv("TEST_JUDGE_KEY", "sk-test-judge-secret")
    usage = {"prompt_tokens": 5, "completion_tokens": 2, "cost": 0.0031}
    with serve(replying('{"score": 0.7}', usage)) as server:
        provider_id = add_provider(project_id, server, api_key_env="TEST_JUDGE_KEY")
        config = judge_config(ai_provider_id=provider_id, model="judge-large")
        outcome = score(project_id, config)
    assert outcome.passed is True  # score == pass_threshold passes
    request = server.requests[0]
    assert request.headers.get("Authorization") == "Bearer sk-test-judge-secret"
    assert request.json()["model"] == "judge-large"
    assert outcome.usage[0].model == "judge-large" and outcome.usage[0].cost_usd == 0.0031


def test_the_project_default_judges_when_none_is_pinned(project_id: str) -> None:
    with serve(replying('{"score": 1}')) as default, serve(replying('{"score": 0}')) as other:
        add_provider(project_id, other, name="other")
        default_id = add_provider(project_id, default, name="default")
        tenancy.set_default_ai_provider(project_id, default_id)
        outcome = score(project_id, judge_config())
    assert outcome.score == 1.0 and len(default.requests) == 1 and other.requests == []


@pytest.mark.parametrize(
    "content",
    [
        'Here you go:\n```json\n{"score": 0.9, "reasoning": "close enough"}\n```\nDone.',
        'My verdict {"score": 0.9, "reasoning": "close enough"} - thanks',
    ],
)
def test_prose_and_code_fences_around_the_verdict(project_id: str, content: str) -> None:
    with serve(replying(content)) as server:
        provider_id = add_provider(project_id, server)
        outcome = score(project_id, judge_config(ai_provider_id=provider_id))
    assert (outcome.score, outcome.reasoning, outcome.passed) == (0.9, "close enough", True)


@pytest.mark.parametrize(
    "content",
    [
        "The answer is correct. Score: 0.9",
        '{"score": "high", "reasoning": "words are not numbers"}',
        '{"score": true}',
        '{"score": 7, "reasoning": "out of ten"}',
        '{"score": -0.5}',
        '{"reasoning": "forgot the score"}',
    ],
)
def test_a_reply_without_a_verdict_errors_the_item(project_id: str, content: str) -> None:
    usage = {"prompt_tokens": 10, "completion_tokens": 4}
    with serve(replying(content, usage)) as server:
        provider_id = add_provider(project_id, server)
        with pytest.raises(ScorerFailed) as failed:
            score(project_id, judge_config(ai_provider_id=provider_id))
    assert failed.value.code == "JUDGE_REPLY_INVALID"
    # The completion was spent even without a verdict: its usage travels with the failure.
    assert failed.value.meta["usage"].source == "eval_judge"
    assert failed.value.meta["usage"].input_tokens == 10


@pytest.mark.parametrize(("status", "attempts"), [(500, 1), (503, 3), (429, 3), (401, 1)])
def test_provider_http_failures_error_the_item(project_id: str, status: int, attempts: int) -> None:
    with serve(lambda request: Reply(status, {"error": {"message": "overloaded"}})) as server:
        provider_id = add_provider(project_id, server)
        with pytest.raises(ScorerFailed) as failed:
            score(project_id, judge_config(ai_provider_id=provider_id))
    assert failed.value.code == "JUDGE_FAILED"
    assert f"HTTP {status}" in failed.value.message and provider_id in failed.value.message
    assert len(server.requests) == attempts  # 429/503 retried up to PAWL_HTTP_MAX_ATTEMPTS


def test_an_answer_that_is_not_a_completion_errors_the_item(project_id: str) -> None:
    with serve(lambda request: Reply(200, raw=b"<html>proxy error</html>")) as server:
        provider_id = add_provider(project_id, server)
        with pytest.raises(ScorerFailed) as not_json:
            score(project_id, judge_config(ai_provider_id=provider_id))
    with serve(lambda request: Reply(200, {"choices": []})) as server:
        provider_id = add_provider(project_id, server, name="empty")
        with pytest.raises(ScorerFailed) as no_choice:
            score(project_id, judge_config(ai_provider_id=provider_id))
    assert not_json.value.code == no_choice.value.code == "JUDGE_FAILED"


def test_unreachable_provider_and_missing_key_variable(
    project_id: str, monkeypatch: pytest.MonkeyPatch, credential_env: Any
) -> None:
    credential_env("TEST_UNSET_KEY")
    with serve(replying('{"score": 1}')) as server:
        port = server.port
    with allow_loopback_port(port):  # still named, but the server stopped: nothing listens
        down = add_provider(project_id, server, name="down")
        with pytest.raises(ScorerFailed) as unreachable:
            score(project_id, judge_config(ai_provider_id=down))
    assert unreachable.value.code == "JUDGE_FAILED" and str(port) in unreachable.value.message
    monkeypatch.delenv("TEST_UNSET_KEY", raising=False)
    keyless = add_provider(project_id, server, name="keyless", api_key_env="TEST_UNSET_KEY")
    with pytest.raises(ScorerFailed) as no_key:
        score(project_id, judge_config(ai_provider_id=keyless))
    assert no_key.value.code == "JUDGE_FAILED" and "TEST_UNSET_KEY" in no_key.value.message


def test_a_provider_of_another_project_is_not_found(api: Any, project_id: str) -> None:
    # ``api`` loads the app, which registers the ai_provider lookup validation uses.
    other = tenancy.create_project("elsewhere").id
    with serve(replying('{"score": 1}')) as server:
        theirs = add_provider(other, server)
        with pytest.raises(ScorerFailed) as failed:
            score(project_id, judge_config(ai_provider_id=theirs))
        env = env_for_project(project_id, "create", None)
        with pytest.raises(ValidationFailed) as refused:
            validate_scorers([judge_config(ai_provider_id=theirs).model_dump()], env)
    assert failed.value.code == "JUDGE_PROVIDER_NOT_FOUND" and server.requests == []
    assert refused.value.meta["field"] == "scorers.0.ai_provider_id"


# --- through the API: evals, runs and the default-provider rules --------------------------------


def grading_judge(request: Request) -> Reply:
    """Grades the agent's answer (the text after ``A: ``) by what it says."""
    prompt = request.json()["messages"][0]["content"]
    answer = prompt.split("A: ", 1)[1].split("\n", 1)[0]
    verdicts = {
        "good": '{"score": 0.95, "reasoning": "matches the reference"}',
        "meh": 'I would say {"score": 0.4, "reasoning": "partly"}',
        "rambling": "I cannot decide.",
        "overflow": '{"score": 4}',
    }
    if answer == "crash":
        return Reply(500, {"error": "judge down"})
    return chat_reply(verdicts[answer], {"prompt_tokens": 50, "completion_tokens": 5})


def judge_scorer(**fields: Any) -> dict[str, Any]:
    return {"type": "llm_judge", "prompt": PROMPT, "pass_threshold": 0.7, **fields}


def create_provider(api: Any, project: dict[str, Any], server: Server, name: str = "judge") -> str:
    body = {
        "project_id": project["id"],
        "name": name,
        "base_url": f"{server.url}/v1",
        "default_model": "judge-small",
    }
    response = api.post("/api/v1/ai-providers", body)
    assert response.status == 201, response
    return str(response.json["id"])


def set_default(api: Any, project: dict[str, Any], provider_id: str | None) -> Any:
    return api.put(f"/api/v1/projects/{project['id']}", {"default_ai_provider_id": provider_id})


def test_a_run_scored_by_the_judge(api: Any, project: dict[str, Any]) -> None:
    cases = [("echo:good", "ok"), ("echo:meh", "ok"), ("echo:rambling", "ok"), ("echo:crash", None)]
    cases += [("echo:overflow", "ok")]
    with serve(grading_judge) as server:
        provider_id = create_provider(api, project, server)
        scorers = [judge_scorer(ai_provider_id=provider_id)]
        suite = make_suite(api, project, cases, scorers=scorers, pass_threshold=0.5)
        response = api.post(suite.runs_path, {"wait": True})
        assert response.status == 201, response
    run = response.json
    assert (run["completed_count"], run["errored_count"]) == (2, 3)
    # Errors are not zeros: the mean is over the two judged items only.
    assert run["aggregate_scores"]["scorers"]["llm_judge"]["mean"] == pytest.approx(0.675)
    by_answer = {r["output"]: r for r in all_results(api, suite, run["id"])}
    assert by_answer["good"]["scores"] == [
        {"scorer": "llm_judge", "score": 0.95, "passed": True, "reasoning": "matches the reference"}
    ]
    assert by_answer["meh"]["passed"] is False and by_answer["meh"]["scores"][0]["score"] == 0.4
    for answer, code in [
        ("rambling", "JUDGE_REPLY_INVALID"),
        ("overflow", "JUDGE_REPLY_INVALID"),
        ("crash", "JUDGE_FAILED"),
    ]:
        errored = by_answer[answer]
        assert errored["error"]["code"] == code and errored["scores"] == []
        assert errored["error"]["message"].startswith("Scoring failed:")
    assert len(server.requests) == 5  # one completion per item (a 500 is not retried)
    # Judge spend is reported apart from the agent's, including the completions whose
    # reply could not be used (they were still paid for); the crashed call reported none.
    assert run["aggregate_scores"]["usage"]["by_source"] == {
        "eval_judge": {"calls": 4, "input_tokens": 200, "output_tokens": 20, "cost_usd": 0.0}
    }
    assert by_answer["rambling"]["usage"] == [
        {
            "source": "eval_judge",
            "input_tokens": 50,
            "output_tokens": 5,
            "cost_usd": 0.0,
            "model": "judge-small",
        }
    ]


def test_a_judge_needs_a_pinned_provider_or_a_project_default(
    api: Any, project: dict[str, Any]
) -> None:
    with serve(grading_judge) as server:
        refused = _try_suite(api, project, [judge_scorer()])
        assert refused.status == 400 and refused.code == "VALIDATION_FAILED"
        assert refused.json["error"]["meta"]["field"] == "scorers.0.ai_provider_id"
        assert api.get(f"/api/v1/evals?project_id={project['id']}").json["data"] == []

        provider_id = create_provider(api, project, server)
        pinned_scorers = [judge_scorer(ai_provider_id=provider_id)]
        pinned = make_suite(api, project, [("echo:good", "ok")], scorers=pinned_scorers)
        update = api.put(f"/api/v1/evals/{pinned.eval['id']}", {"scorers": [judge_scorer()]})
        assert update.status == 400 and update.json["error"]["meta"]["field"] == (
            "scorers.0.ai_provider_id"
        )

        assert set_default(api, project, provider_id).status == 200
        inherits = make_suite(
            api, project, [("echo:good", "ok")], name="inherits", scorers=[judge_scorer()]
        )
        run = api.post(inherits.runs_path, {"wait": True})
        assert run.status == 201 and run.json["completed_count"] == 1, run
        assert server.requests[-1].json()["model"] == "judge-small"

        # The default cannot be cleared, nor its provider deleted, while an eval inherits it.
        cleared = set_default(api, project, None)
        assert cleared.status == 400 and cleared.code == "VALIDATION_FAILED"
        assert cleared.json["error"]["meta"]["field"] == "default_ai_provider_id"
        assert inherits.eval["id"] in cleared.json["error"]["message"]
        assert cleared.json["error"]["meta"]["eval_ids"] == [inherits.eval["id"]]
        deleted = api.delete(f"/api/v1/ai-providers/{provider_id}")
        assert deleted.status == 409 and deleted.code == "AI_PROVIDER_IN_USE"
        assert pinned.eval["id"] in deleted.json["error"]["message"]
        project_now = api.get(f"/api/v1/projects/{project['id']}").json
        assert project_now["default_ai_provider_id"] == provider_id


def test_run_start_refuses_a_judge_whose_default_is_gone(api: Any, project: dict[str, Any]) -> None:
    with serve(grading_judge) as server:
        provider_id = create_provider(api, project, server)
        assert set_default(api, project, provider_id).status == 200
        suite = make_suite(api, project, [("echo:good", "ok")], scorers=[judge_scorer()])
        # What a clear racing the eval's creation would leave (the API refuses it outright).
        tenancy.set_default_ai_provider(project["id"], None)
        refused = api.post(suite.runs_path, {"wait": True})
        assert refused.status == 400 and refused.code == "VALIDATION_FAILED", refused
        assert refused.json["error"]["meta"]["field"] == "scorers.0.ai_provider_id"
        assert api.get(suite.runs_path).json["data"] == []  # a refused start writes nothing
        assert server.requests == []


def test_an_eval_pinning_a_provider_blocks_its_deletion(api: Any, project: dict[str, Any]) -> None:
    with serve(grading_judge) as server:
        provider_id = create_provider(api, project, server)
        spare = create_provider(api, project, server, name="spare")
        suite = make_suite(
            api, project, [("echo:good", "ok")], scorers=[judge_scorer(ai_provider_id=provider_id)]
        )
    refused = api.delete(f"/api/v1/ai-providers/{provider_id}")
    assert refused.status == 409 and refused.json["error"]["meta"]["eval_ids"] == [suite.eval["id"]]
    assert api.delete(f"/api/v1/ai-providers/{spare}").status == 204
    assert api.delete(f"/api/v1/evals/{suite.eval['id']}").status == 204
    assert api.delete(f"/api/v1/ai-providers/{provider_id}").status == 204


def _try_suite(api: Any, project: dict[str, Any], scorers: list[dict[str, Any]]) -> Any:
    agent = api.post(
        "/api/v1/agents",
        {
            "project_id": project["id"],
            "name": "a",
            "type": "python",
            "config": {"callable": "tests.support.agents:scripted"},
        },
    ).json
    dataset = api.post("/api/v1/datasets", {"project_id": project["id"], "name": "d"}).json
    return api.post(
        "/api/v1/evals",
        {
            "project_id": project["id"],
            "name": "e",
            "agent_id": agent["id"],
            "dataset_id": dataset["id"],
            "scorers": scorers,
        },
    )
