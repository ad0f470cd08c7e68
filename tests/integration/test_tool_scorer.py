"""The ``tool`` scorer against real tools: HTTP servers on 127.0.0.1, a plugin's builtin
action, moto's Docker-less Lambda. Tools are created through the API; the scorer is the
registered plugin, called as the engine calls it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from moto import mock_aws

from chalicelib import wiring
from chalicelib.agents import lambda_agent
from chalicelib.domain.tools import Tool
from chalicelib.errors import ValidationFailed
from chalicelib.plugins.manager import plugins
from chalicelib.plugins.markers import hookimpl
from chalicelib.scoring.contract import ItemContext, ScoreOutcome, ScorerFailed, ScoringEnv
from chalicelib.scoring.validation import env_for_project, validate_scorers
from chalicelib.tools import call_tool
from tests.support.servers import Reply, Request, allow_loopback_port, serve

ITEM = ItemContext(
    input=[{"role": "user", "content": "Is this friendly?"}],
    output="Absolutely, very friendly!",
    expected="yes",
    item_metadata={"topic": "tone"},
)
SECRET = "s3cret-token-value"


def make_tool(api: Any, project_id: str, tool_type: str = "http", **config: Any) -> str:
    body = {"project_id": project_id, "name": f"t{len(config)}-{tool_type}", "type": tool_type}
    response = api.post("/api/v1/tools", {**body, "config": config})
    assert response.status == 201, response
    return str(response.json["id"])


def score(
    project_id: str, tool_id: str, tool_context: dict[str, str] | None = None, **fields: Any
) -> ScoreOutcome:
    scorer = plugins().scorer("tool")
    config = scorer.config_model.model_validate(
        {"type": "tool", "name": "tone", "tool_id": tool_id, **fields}
    )
    env = ScoringEnv(project_id=project_id, tool_context=tool_context or {})
    outcome: ScoreOutcome = scorer.score(config, ITEM, env)
    return outcome


def answering(body: Any, content_type: str = "application/json") -> Any:
    raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    return lambda request: Reply(200, raw=raw, headers={"Content-Type": content_type})


@pytest.mark.parametrize(
    ("answer", "threshold", "passed"),
    [
        ({"score": 0.9, "passed": False}, 0.5, False),  # the tool's own verdict wins
        ({"score": 0.1, "passed": True}, None, True),
        ({"score": 0.6}, 0.5, True),
        ({"score": 0.5}, 0.5, True),  # >=, as llm_judge
        ({"score": 0.49, "passed": None}, 0.5, False),  # null counts as absent
    ],
)
def test_verdict_resolution(
    api: Any, project: dict[str, Any], answer: dict[str, Any], threshold: float | None, passed: bool
) -> None:
    with serve(answering({**answer, "reasoning": "warm", "trace": "ignored"})) as server:
        tool_id = make_tool(api, project["id"], url=server.url)
        fields = {} if threshold is None else {"pass_threshold": threshold}
        outcome = score(project["id"], tool_id, **fields)
    assert (outcome.score, outcome.passed, outcome.reasoning) == (answer["score"], passed, "warm")


def test_no_verdict_errors_the_item(api: Any, project: dict[str, Any]) -> None:
    with serve(answering({"score": 0.9})) as server:
        tool_id = make_tool(api, project["id"], url=server.url)
        with pytest.raises(ScorerFailed) as failed:
            score(project["id"], tool_id)
    assert failed.value.code == "TOOL_VERDICT_MISSING"
    assert "tool scorer 'tone'" in str(failed.value)


def test_input_is_the_item_context_with_presets_at_top_level(
    api: Any, project: dict[str, Any]
) -> None:
    with serve(answering({"score": 1, "passed": True})) as server:
        tool_id = make_tool(
            api, project["id"], url=server.url, preset_parameters={"rubric": "tool", "lang": "en"}
        )
        score(project["id"], tool_id, preset_parameters={"rubric": "scorer", "strict": True})
        [sent] = server.requests
    assert sent.method == "POST"
    assert sent.json() == {
        "input": [{"role": "user", "content": "Is this friendly?"}],
        "output": "Absolutely, very friendly!",
        "expected": "yes",
        "item": {"metadata": {"topic": "tone"}},
        "rubric": "scorer",  # the scorer's preset over the tool's own
        "lang": "en",
        "strict": True,
    }  # no "object": the agent has no output_schema


def test_context_tokens_are_filled_and_narrowed(api: Any, project: dict[str, Any]) -> None:
    context = {"token": SECRET, "tenant": "acme", "other": "x"}
    with serve(answering({"score": 1, "passed": True})) as server:
        narrowed = make_tool(
            api,
            project["id"],
            url=server.url,
            headers={"Authorization": "Bearer {{context:token}}"},
            preset_parameters={"tenant": "{{context:tenant}}"},
            context_keys=["token", "tenant"],
        )
        everything = make_tool(api, project["id"], url=server.url + "/all")
        score(project["id"], narrowed, context, pass_threshold=0.5)
        score(project["id"], everything, context, pass_threshold=0.5)
        first, second = server.requests
    assert first.headers["Authorization"] == f"Bearer {SECRET}"
    assert first.json()["tenant"] == "acme"
    assert first.headers["X-Pawl-Context-token"] == SECRET
    assert "X-Pawl-Context-other" not in first.headers  # context_keys keeps it away
    assert second.headers["X-Pawl-Context-other"] == "x"  # no context_keys: every key


def test_missing_context_key_errors_the_item_without_calling(
    api: Any, project: dict[str, Any]
) -> None:
    with serve(answering({"score": 1, "passed": True})) as server:
        tool_id = make_tool(
            api,
            project["id"],
            url=server.url,
            headers={"Authorization": "Bearer {{context:token}}"},
        )
        with pytest.raises(ScorerFailed) as failed:
            score(project["id"], tool_id, {"tenant": "acme"})
        assert server.requests == []
    assert failed.value.code == "MISSING_TOOL_CONTEXT_KEY"
    assert "'token'" in str(failed.value)


def test_text_answers_are_scanned_for_their_first_object(api: Any, project: dict[str, Any]) -> None:
    text = 'Verdict {draft} below:\n```json\n{"score": 0.7, "passed": true}\n``` {"score": 0}'
    with serve(answering(text, "text/plain; charset=utf-8")) as server:
        tool_id = make_tool(api, project["id"], url=server.url)
        outcome = score(project["id"], tool_id)
    assert (outcome.score, outcome.passed) == (0.7, True)


@pytest.mark.parametrize(
    ("reply", "code", "fragment"),
    [
        (answering({"score": 1.2, "passed": True}), "TOOL_ANSWER_INVALID", "outside 0-1"),
        (answering({"score": -0.1}), "TOOL_ANSWER_INVALID", "outside 0-1"),
        (answering({"score": "0.5"}), "TOOL_ANSWER_INVALID", 'numeric "score"'),
        (answering({"score": True}), "TOOL_ANSWER_INVALID", 'numeric "score"'),
        (answering({"passed": True}), "TOOL_ANSWER_INVALID", 'numeric "score"'),
        (answering({"score": 1, "passed": "yes"}), "TOOL_ANSWER_INVALID", '"passed"'),
        (answering({"score": 1, "reasoning": 3}), "TOOL_ANSWER_INVALID", '"reasoning"'),
        (answering("no verdict here", "text/plain"), "TOOL_ANSWER_INVALID", "no JSON object"),
        (answering([{"score": 1}]), "TOOL_ANSWER_INVALID", "no JSON object"),
        (answering('{"score": 1', "application/json"), "TOOL_ANSWER_INVALID", "no JSON object"),
        (lambda r: Reply(500, {"echo": SECRET}), "TOOL_CALL_FAILED", "HTTP 500"),
        (lambda r: Reply(404, {}), "TOOL_CALL_FAILED", "HTTP 404"),
    ],
)
def test_unusable_answers_error_the_item(
    api: Any, project: dict[str, Any], reply: Any, code: str, fragment: str
) -> None:
    with serve(reply) as server:
        tool_id = make_tool(
            api, project["id"], url=server.url, headers={"X-Key": "{{context:token}}"}
        )
        with pytest.raises(ScorerFailed) as failed:
            score(project["id"], tool_id, {"token": SECRET}, pass_threshold=0.5)
    assert failed.value.code == code
    message = str(failed.value)
    assert fragment in message and "tool scorer 'tone'" in message
    assert SECRET not in message  # an echoed secret is redacted


def test_unreachable_tool_errors_the_item(api: Any, project: dict[str, Any]) -> None:
    with serve(answering({})) as server:
        url = server.url
    with allow_loopback_port(server.port):  # still named, but the server is gone
        tool_id = make_tool(api, project["id"], url=url)
        with pytest.raises(ScorerFailed) as failed:
            score(project["id"], tool_id, pass_threshold=0.5)
    assert failed.value.code == "TOOL_CALL_FAILED"


def validate(project_id: str, scorer: dict[str, Any], phase: str = "create") -> None:
    validate_scorers(
        [{"type": "tool", "name": "tone", **scorer}], env_for_project(project_id, phase, None)
    )


def test_scorer_validation(api: Any, project: dict[str, Any]) -> None:
    http = make_tool(api, project["id"], url="http://127.0.0.1:9/")
    client = make_tool(api, project["id"], "client")
    pinned = make_tool(
        api, project["id"], url="http://127.0.0.1:9/", preset_parameters={"output": "x"}
    )
    other = api.post("/api/v1/projects", {"name": "other"}).json
    foreign = make_tool(api, other["id"], url="http://127.0.0.1:9/")
    validate(project["id"], {"tool_id": http, "pass_threshold": 0.5})
    cases = [
        ({"tool_id": client}, "scorers.0.tool_id", "calling client"),
        ({"tool_id": foreign}, "scorers.0.tool_id", "not found"),
        ({"tool_id": "tool_missing"}, "scorers.0.tool_id", "not found"),
        ({"tool_id": pinned}, "scorers.0.tool_id", "would overwrite"),
        ({"tool_id": http, "action": "grade"}, "scorers.0.action", "no actions"),
        (
            {"tool_id": http, "preset_parameters": {"item": 1}},
            "scorers.0.preset_parameters",
            "reserved",
        ),
    ]
    for scorer, field, fragment in cases:
        with pytest.raises(ValidationFailed) as refused:
            validate(project["id"], scorer)
        assert refused.value.meta["field"] == field and fragment in refused.value.message
    # Deleted since the eval was written: the run-start check refuses it, and an item
    # scored anyway (a run already going) errors.
    assert api.delete(f"/api/v1/tools/{http}").status == 204
    with pytest.raises(ValidationFailed) as refused:
        validate(project["id"], {"tool_id": http}, phase="run_start")
    assert refused.value.meta["field"] == "scorers.0.tool_id"
    with pytest.raises(ScorerFailed) as failed:
        score(project["id"], http, pass_threshold=0.5)
    assert failed.value.code == "TOOL_NOT_FOUND"


class GraderPlugin:
    """A plugin with one builtin tool action: scores by output length."""

    seen: list[dict[str, Any]] = []

    @hookimpl
    def pawl_register_builtin_tools(self) -> dict[str, Any]:
        def length(payload: dict[str, Any]) -> dict[str, Any]:
            GraderPlugin.seen.append(payload)
            if payload.get("explode"):
                raise RuntimeError("grader exploded")
            return {"score": min(1.0, len(payload["output"]) / payload["target"])}

        return {"length": length}


@pytest.fixture
def grader_plugin(aws_env: None) -> Iterator[None]:
    host = wiring.new_plugin_host(load_entry_points=False)
    host.pm.register(GraderPlugin(), name="grader")
    wiring.install_plugins(host)
    GraderPlugin.seen.clear()
    yield
    wiring.install_plugins()


def test_builtin_tool_action(api: Any, project: dict[str, Any], grader_plugin: None) -> None:
    tool_id = make_tool(
        api, project["id"], "builtin", actions=["length"], preset_parameters={"target": 52}
    )
    with pytest.raises(ValidationFailed) as refused:
        validate(project["id"], {"tool_id": tool_id})
    assert refused.value.meta["field"] == "scorers.0.action"
    validate(project["id"], {"tool_id": tool_id, "action": "length", "pass_threshold": 0.5})
    outcome = score(project["id"], tool_id, action="length", pass_threshold=0.5)
    assert (outcome.score, outcome.passed) == (0.5, True)
    assert GraderPlugin.seen[0]["output"] == ITEM.output and GraderPlugin.seen[0]["target"] == 52
    with pytest.raises(ScorerFailed) as failed:
        score(project["id"], tool_id, action="length", preset_parameters={"explode": True})
    assert failed.value.code == "TOOL_CALL_FAILED"
    assert "grader exploded" in str(failed.value)


# --- lambda tools (moto's Docker-less Lambda: it echoes the event, or answers what was queued)

MOTO_RESULTS = "http://motoapi.amazonaws.com/moto-api/static/lambda-simple/response"


@pytest.fixture
def docker_less_lambda() -> Iterator[list[dict[str, Any]]]:
    with mock_aws(config={"lambda": {"use_docker": False}}):
        wiring.drop_aws_clients()
        sent: list[dict[str, Any]] = []
        lambda_agent.invoke_client().meta.events.register(
            "before-call.lambda.Invoke", lambda params, **kwargs: sent.append(params)
        )
        yield sent
    wiring.drop_aws_clients()


def lambda_tool(**config: Any) -> Tool:
    return Tool(
        id="tool_l",
        project_id="proj_l",
        name="l",
        type="lambda",
        config={"function_name": "grader", **config},
        created_at="2026-01-01T00:00:00Z",
        updated_at="2026-01-01T00:00:00Z",
    )


def test_lambda_tool_event_and_answers(docker_less_lambda: list[dict[str, Any]]) -> None:
    tool = lambda_tool(preset_parameters={"score": 0.25}, context_keys=["tenant"])
    echoed = call_tool(tool, {"output": "hi"}, tool_context={"tenant": "acme", "token": SECRET})
    # Nothing queued: moto echoes the event, which is exactly what the function received.
    assert echoed == {"score": 0.25, "output": "hi", "tool_context": {"tenant": "acme"}}
    response = requests.post(
        MOTO_RESULTS,
        json={"results": [json.dumps('graded: {"score": 0.8}')], "region": "us-east-1"},
    )
    assert response.status_code == 201
    assert call_tool(lambda_tool(), {"output": "hi"}) == {"score": 0.8}
    [first, _] = docker_less_lambda
    assert first["url_path"].startswith("/2015-03-31/functions/grader/invocations")


# --- a run, end to end: the engine calls the registered scorer ------------------------------


def test_a_run_scored_by_a_tool(api: Any, project: dict[str, Any]) -> None:
    """Scores and verdicts land on results; a tool failure errors its item, never a 0."""

    def grade(request: Request) -> Reply:
        output = request.json()["output"]
        if output == "broken":
            return Reply(500, {"error": "grader down"})
        return Reply(200, {"score": 0.9 if output == "great" else 0.3, "reasoning": output})

    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = api.post(path, {"project_id": project["id"], **body})
        assert response.status == 201, response
        return dict(response.json)

    with serve(grade) as server:
        tool_id = make_tool(
            api, project["id"], url=server.url, headers={"X-Key": "{{context:token}}"}
        )
        agent = post(
            "/api/v1/agents",
            {
                "name": "a",
                "type": "python",
                "config": {"callable": "tests.support.agents:scripted"},
            },
        )
        dataset = post("/api/v1/datasets", {"name": "d"})
        for text in ("echo:great", "echo:meh", "echo:broken"):
            item = {"input": [{"role": "user", "content": text}]}
            assert api.post(f"/api/v1/datasets/{dataset['id']}/items", item).status == 201
        scorer = {"type": "tool", "name": "tone", "tool_id": tool_id, "pass_threshold": 0.5}
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
        run = api.post(runs, {"wait": True, "tool_context": {"token": SECRET}})
        assert run.status in (200, 201), run
        assert {r.headers["X-Key"] for r in server.requests} == {SECRET}
    assert run.json["status"] == "completed"
    assert (run.json["completed_count"], run.json["errored_count"]) == (2, 1)
    results = api.get(f"{runs}/{run.json['id']}/results").json["data"]
    by_output = {r["output"]: r for r in results}
    assert by_output["great"]["scores"] == [
        {"scorer": "tone", "score": 0.9, "passed": True, "reasoning": "great"}
    ]
    assert by_output["meh"]["passed"] is False
    broken = by_output["broken"]
    assert broken["error"]["code"] == "TOOL_CALL_FAILED"
    assert "tool scorer 'tone'" in broken["error"]["message"]
    assert broken["scores"] in ([], None) and broken["output"] == "broken"
