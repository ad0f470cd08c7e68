"""The built-in agent adapters, called through the plugin facade the run engine uses.

http and model agents are real HTTP servers on 127.0.0.1; python agents are functions in
this module; lambda agents run on moto's Docker-less Lambda (see the lambda section).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from moto import mock_aws

from chalicelib import wiring
from chalicelib.agents import lambda_agent
from chalicelib.agents.configs import (
    HttpAgentConfig,
    LambdaAgentConfig,
    ModelAgentConfig,
    PythonAgentConfig,
)
from chalicelib.agents.contract import AdapterFailed, AgentReply, AgentRequest, Usage
from chalicelib.errors import ValidationFailed
from chalicelib.plugins.manager import plugins
from tests.conftest import PLACEHOLDER_ALLOW_LIST
from tests.support.servers import Handler, Reply, Request, serve

MESSAGES = [{"role": "user", "content": "What is 2+2?"}]
CONTEXT = {"tenant": "acme", "ocaToken": "tok-very-secret", "session_id": "sess_1"}


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("PAWL_HTTP_BACKOFF_BASE_S", "0.001")
    monkeypatch.setenv("PAWL_ALLOW_PRIVATE_URLS", PLACEHOLDER_ALLOW_LIST)
    wiring.reload_settings()
    wiring.install_plugins()
    yield
    wiring.reload_settings()
    wiring.install_plugins()


def agent_request(**overrides: Any) -> AgentRequest:
    fields: dict[str, Any] = {
        "input": MESSAGES,
        "agent_id": "agt_1",
        "agent_version": 3,
        "run_id": "evrun_1",
        "dataset_item_id": "dsit_1",
        "tool_context": dict(CONTEXT),
    }
    fields.update(overrides)
    return AgentRequest(**fields)


def call(agent_type: str, config: dict[str, Any], request: AgentRequest) -> AgentReply:
    adapter = plugins().adapter(agent_type)
    reply: AgentReply = adapter.invoke(adapter.config_model.model_validate(config), request)
    return reply


def answers(*replies: Reply) -> Handler:
    """A handler answering ``replies`` in order, then repeating the last one."""
    lock = threading.Lock()
    served = [0]

    def handler(request: Request) -> Reply:
        with lock:
            index = min(served[0], len(replies) - 1)
            served[0] += 1
        return replies[index]

    return handler


# --- http ----------------------------------------------------------------------------------

ANSWER = {
    "output": "4",
    "object": {"answer": 4},
    "status": "requires_action",
    "usage": {"input_tokens": 12, "output_tokens": 3, "cost_usd": 0.002},
    "trace_id": "extra keys are ignored",
}


def test_http_agent_gets_payload_headers_and_context() -> None:
    with serve(lambda r: Reply(200, ANSWER)) as server:
        config = {"url": f"{server.url}/agent", "headers": {"Authorization": "Bearer agent-key"}}
        reply = call("http", config, agent_request())
    assert reply == AgentReply(
        status="requires_action",
        output="4",
        object={"answer": 4},
        usage=Usage(input_tokens=12, output_tokens=3, cost_usd=0.002),
    )
    seen = server.requests[0]
    assert (seen.method, seen.path) == ("POST", "/agent")
    assert seen.json() == {
        "input": MESSAGES,
        "agent_id": "agt_1",
        "agent_version": 3,
        "run_id": "evrun_1",
        "dataset_item_id": "dsit_1",
    }
    assert seen.headers["Authorization"] == "Bearer agent-key"
    assert seen.headers["X-Pawl-Context-tenant"] == "acme"
    assert seen.headers["X-Pawl-Context-ocaToken"] == "tok-very-secret"
    assert not any("session_id" in name.lower() for name in seen.headers)


def test_http_agent_minimal_answer_is_completed() -> None:
    with serve(lambda r: Reply(200, {"output": "hi"})) as server:
        reply = call("http", {"url": server.url}, agent_request(tool_context={}))
    assert reply == AgentReply(status="completed", output="hi")


def test_http_agent_503_is_retried_then_answers() -> None:
    with serve(answers(Reply(503, {"e": 1}), Reply(200, {"output": "ok"}))) as server:
        reply = call("http", {"url": server.url}, agent_request())
    assert reply.output == "ok" and len(server.requests) == 2


def test_http_agent_429_with_retry_after_then_answers() -> None:
    busy = Reply(429, {"error": "slow down"}, headers={"Retry-After": "0"})
    with serve(answers(busy, Reply(200, {"output": "ok"}))) as server:
        reply = call("http", {"url": server.url}, agent_request())
    assert reply.output == "ok" and len(server.requests) == 2


def test_http_agent_gives_up_after_max_attempts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAWL_HTTP_MAX_ATTEMPTS", "4")
    wiring.reload_settings()
    with serve(lambda r: Reply(503, {"error": "overloaded"})) as server:
        with pytest.raises(AdapterFailed, match=r"HTTP 503 after 4 attempt\(s\).*overloaded"):
            call("http", {"url": server.url}, agent_request())
        assert len(server.requests) == 4


def test_http_agent_error_body_is_shown_with_secrets_redacted() -> None:
    def echo_headers(request: Request) -> Reply:
        return Reply(401, {"error": "bad key", "headers_seen": request.headers})

    with serve(echo_headers) as server:
        config = {"url": server.url, "headers": {"Authorization": "Bearer agent-key"}}
        with pytest.raises(AdapterFailed, match="HTTP 401") as caught:
            call("http", config, agent_request())
    message = str(caught.value)
    assert "bad key" in message
    assert "agent-key" not in message and "tok-very-secret" not in message


def test_http_agent_timeout_fails_the_generation() -> None:
    release = threading.Event()

    def stuck(request: Request) -> Reply:
        release.wait(10)
        return Reply(200, {"output": "late"})

    with serve(stuck) as server:
        try:
            with pytest.raises(AdapterFailed, match="no answer within"):
                call("http", {"url": server.url, "timeout_s": 0.2}, agent_request())
            assert len(server.requests) == 1  # a read timeout is not retried
        finally:
            release.set()


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (Reply(200, raw=b"<html>oops</html>", headers={"Content-Type": "text/html"}), "not JSON"),
        (Reply(200, {"answer": "4"}), "output: Field required"),
        (Reply(200, {"output": 4}), "output: Input should be a valid string"),
        (Reply(200, {"output": "4", "status": "paused"}), "status"),
        (Reply(200, {"output": "4", "usage": {"input_tokens": -1}}), "usage.input_tokens"),
        (Reply(200, ["4"]), "wrong shape"),
        (Reply(302, {}, headers={"Location": "http://169.254.169.254/"}), "HTTP 302"),
    ],
)
def test_http_agent_bad_answers_fail(reply: Reply, expected: str) -> None:
    with serve(lambda r: reply) as server:
        with pytest.raises(AdapterFailed, match=expected):
            call("http", {"url": server.url}, agent_request())
        assert len(server.requests) == 1


@pytest.mark.parametrize(
    "url", ["http://169.254.169.254/latest/meta-data/", "http://metadata.google.internal/"]
)
def test_http_agent_metadata_urls_refused_at_config_and_call_time(url: str) -> None:
    adapter = plugins().adapter("http")
    config = adapter.config_model.model_validate({"url": url})
    with pytest.raises(ValidationFailed) as refused:
        adapter.check(config)
    assert refused.value.meta["field"] == "config.url"
    with pytest.raises(AdapterFailed, match="metadata"):
        adapter.invoke(config, agent_request())


def test_http_agent_loopback_refused_when_only_public_allowed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with serve(lambda r: Reply(200, {"output": "x"})) as server:
        monkeypatch.setenv("PAWL_ALLOW_PRIVATE_URLS", "")  # after serve() named its port
        wiring.reload_settings()
        adapter = plugins().adapter("http")
        config = HttpAgentConfig.model_validate({"url": server.url})
        with pytest.raises(ValidationFailed, match="loopback"):
            adapter.check(config)
        with pytest.raises(AdapterFailed, match="loopback"):
            adapter.invoke(config, agent_request())
        assert server.requests == []


def test_http_agent_refuses_context_that_cannot_be_a_header() -> None:
    with serve(lambda r: Reply(200, {"output": "x"})) as server:
        with pytest.raises(AdapterFailed, match="'bad key'"):
            call("http", {"url": server.url}, agent_request(tool_context={"bad key": "v"}))
        with pytest.raises(AdapterFailed, match="tenant") as caught:
            call("http", {"url": server.url}, agent_request(tool_context={"tenant": "a\r\nb"}))
        assert "a\r\nb" not in str(caught.value)
        assert server.requests == []


def test_http_agent_input_that_is_not_json_fails_before_sending() -> None:
    odd = agent_request(input=[{"role": "user", "content": {1, 2}}])
    with serve(lambda r: Reply(200, {"output": "x"})) as server:
        with pytest.raises(AdapterFailed, match="cannot be encoded as JSON"):
            call("http", {"url": server.url}, odd)
        assert server.requests == []


# --- model (OpenAI-compatible) -------------------------------------------------------------


def completion(content: str | None, finish_reason: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "local-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish_reason,
            }
        ],
        "usage": {"prompt_tokens": 21, "completion_tokens": 5, "total_tokens": 26},
    }


def model_config(server_url: str, **extra: Any) -> dict[str, Any]:
    return {"base_url": f"{server_url}/v1", "model": "local-model", **extra}


def test_model_agent_plain_chat(monkeypatch: pytest.MonkeyPatch, credential_env: Any) -> None:
    credential_env("TEST_MODEL_KEY")
    monkeypatch.setenv("TEST_MODEL_KEY", "sk-model-secret")
    with serve(lambda r: Reply(200, completion("2+2 is 4"))) as server:
        config = model_config(server.url, instructions="Be brief.", api_key_env="TEST_MODEL_KEY")
        reply = call("model", config, agent_request())
    assert reply == AgentReply(
        status="completed", output="2+2 is 4", usage=Usage(input_tokens=21, output_tokens=5)
    )
    seen = server.requests[0]
    assert (seen.method, seen.path) == ("POST", "/v1/chat/completions")
    assert seen.headers["Authorization"] == "Bearer sk-model-secret"
    assert seen.json() == {
        "model": "local-model",
        "messages": [{"role": "system", "content": "Be brief."}, *MESSAGES],
        "temperature": 0,
    }
    assert not any(name.lower().startswith("x-pawl-context") for name in seen.headers)


def test_model_agent_structured_output() -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "integer"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    with serve(lambda r: Reply(200, completion('{"answer": 4}'))) as server:
        reply = call("model", model_config(server.url), agent_request(output_schema=schema))
    assert reply.object == {"answer": 4} and reply.output == '{"answer": 4}'
    body = server.requests[0].json()
    assert body["messages"] == MESSAGES  # no instructions: no system message
    assert "Authorization" not in server.requests[0].headers
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": schema, "strict": True},
    }


def test_model_agent_unparseable_structured_output_fails() -> None:
    truncated = Reply(200, completion('{"answer": 4', "length"))
    with (
        serve(lambda r: truncated) as server,
        pytest.raises(AdapterFailed, match=r"does not parse as JSON.*'length'"),
    ):
        call("model", model_config(server.url), agent_request(output_schema={}))


def test_model_agent_tool_calls_require_action() -> None:
    with serve(lambda r: Reply(200, completion(None, "tool_calls"))) as server:
        reply = call("model", model_config(server.url), agent_request(output_schema={}))
    assert (reply.status, reply.output, reply.object) == ("requires_action", "", None)


def test_model_agent_missing_key_variable_names_it(
    monkeypatch: pytest.MonkeyPatch, credential_env: Any
) -> None:
    credential_env("TEST_ABSENT_KEY")  # a listed name may say it is unset: the operator's
    monkeypatch.delenv("TEST_ABSENT_KEY", raising=False)
    with serve(lambda r: Reply(200, completion("x"))) as server:
        with pytest.raises(AdapterFailed, match="TEST_ABSENT_KEY"):
            call("model", model_config(server.url, api_key_env="TEST_ABSENT_KEY"), agent_request())
        assert server.requests == []


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (Reply(200, {"choices": []}), "not a chat completion"),
        (Reply(200, raw=b"data: {}"), "not JSON"),
        (Reply(400, {"error": {"message": "unknown model"}}), "HTTP 400.*unknown model"),
    ],
)
def test_model_agent_bad_answers_fail(reply: Reply, expected: str) -> None:
    with serve(lambda r: reply) as server, pytest.raises(AdapterFailed, match=expected):
        call("model", model_config(server.url), agent_request())


def test_model_agent_error_body_never_shows_the_key(
    monkeypatch: pytest.MonkeyPatch, credential_env: Any
) -> None:
    credential_env("TEST_MODEL_KEY")
    monkeypatch.setenv("TEST_MODEL_KEY", "sk-model-secret")

    def echo_key(request: Request) -> Reply:
        return Reply(401, {"error": f"invalid key {request.headers['Authorization']}"})

    with serve(echo_key) as server, pytest.raises(AdapterFailed, match="HTTP 401") as caught:
        call("model", model_config(server.url, api_key_env="TEST_MODEL_KEY"), agent_request())
    assert "sk-model-secret" not in str(caught.value)


def test_model_agent_usage_is_none_when_not_reported() -> None:
    answer = {k: v for k, v in completion("4").items() if k != "usage"}
    with serve(lambda r: Reply(200, answer)) as server:
        reply = call("model", model_config(server.url), agent_request())
    assert (reply.status, reply.output, reply.usage) == ("completed", "4", None)


def test_model_agent_unreachable_endpoint_fails() -> None:
    with serve(lambda r: Reply(200, completion("x"))) as server:
        pass  # closed again: nothing listens on its port any more
    with pytest.raises(AdapterFailed, match="the model endpoint could not be reached"):
        call("model", model_config(server.url), agent_request())


# --- python --------------------------------------------------------------------------------

received: list[dict[str, Any]] = []


def dict_agent(payload: dict[str, Any]) -> dict[str, Any]:
    received.append(payload)
    return {"output": "4", "object": {"n": 4}, "usage": {"input_tokens": 1}}


def str_agent(payload: dict[str, Any]) -> str:
    return f"you said {payload['input'][-1]['content']}"


def raising_agent(payload: dict[str, Any]) -> Any:
    raise RuntimeError(f"tool refused token {payload['tool_context']['ocaToken']}")


def shapeless_agent(payload: dict[str, Any]) -> Any:
    return 42


NOT_CALLABLE = "just a string"
PY = "tests.integration.test_agent_adapters"


def test_python_agent_gets_payload_and_context() -> None:
    received.clear()
    reply = call("python", {"callable": f"{PY}:dict_agent"}, agent_request())
    assert reply == AgentReply(
        status="completed", output="4", object={"n": 4}, usage=Usage(input_tokens=1)
    )
    assert received == [
        {
            "input": MESSAGES,
            "agent_id": "agt_1",
            "agent_version": 3,
            "run_id": "evrun_1",
            "dataset_item_id": "dsit_1",
            "tool_context": {"tenant": "acme", "ocaToken": "tok-very-secret"},
        }
    ]


def test_python_agent_plain_string_is_the_output() -> None:
    reply = call("python", {"callable": f"{PY}:str_agent"}, agent_request())
    assert reply == AgentReply(status="completed", output="you said What is 2+2?")


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (f"{PY}:raising_agent", "raised RuntimeError: tool refused token \\*\\*\\*"),
        (f"{PY}:shapeless_agent", "wrong shape"),
        (f"{PY}:NOT_CALLABLE", "could not be loaded: TypeError"),
        (f"{PY}:absent_function", "could not be loaded: AttributeError"),
        ("tests.no_such_module:agent", "could not be loaded: ModuleNotFoundError"),
    ],
)
def test_python_agent_failures(target: str, expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Listed, so the import itself is what fails for the missing module.
    listed = os.environ["PAWL_PYTHON_AGENT_MODULES"]
    monkeypatch.setenv("PAWL_PYTHON_AGENT_MODULES", f"{listed},tests.no_such_module")
    wiring.reload_settings()
    with pytest.raises(AdapterFailed, match=expected) as caught:
        call("python", {"callable": target}, agent_request())
    assert "tok-very-secret" not in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_python_agent_refused_where_not_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAWL_PYTHON_AGENT_MODULES", "tests.support.agents")
    wiring.reload_settings()
    adapter = plugins().adapter("python")
    config = PythonAgentConfig(callable=f"{PY}:str_agent")
    with pytest.raises(ValidationFailed, match="PAWL_PYTHON_AGENT_MODULES"):
        adapter.check(config)
    with pytest.raises(AdapterFailed, match="PAWL_PYTHON_AGENT_MODULES"):
        adapter.invoke(config, agent_request())


# --- lambda --------------------------------------------------------------------------------
# moto executes Lambda code only in Docker, which this machine lacks. Its Docker-less
# backend (config lambda.use_docker=False) answers an invoke with a result queued through
# moto's API, or echoes the request payload; it never runs the function's code and never
# reports a FunctionError of its own, except the one moto's invoke layer raises for an
# answer over 6 MB. So these tests cover what pawl does around the call: the payload and
# invocation type sent, answer parsing, FunctionError and AWS-error mapping.

MOTO_RESULTS = "http://motoapi.amazonaws.com/moto-api/static/lambda-simple/response"


@pytest.fixture
def docker_less_lambda() -> Iterator[list[dict[str, Any]]]:
    """moto's Docker-less Lambda; yields the list of Invoke calls pawl made."""
    with mock_aws(config={"lambda": {"use_docker": False}}):
        wiring.drop_aws_clients()
        sent: list[dict[str, Any]] = []

        def record(params: dict[str, Any], **kwargs: Any) -> None:
            sent.append(params)

        lambda_agent.invoke_client().meta.events.register("before-call.lambda.Invoke", record)
        yield sent
    wiring.drop_aws_clients()


def queue_lambda_answer(answer: str) -> None:
    response = requests.post(MOTO_RESULTS, json={"results": [answer], "region": "us-east-1"})
    assert response.status_code == 201


def test_lambda_agent_sends_payload_and_reads_answer(
    docker_less_lambda: list[dict[str, Any]],
) -> None:
    queue_lambda_answer(json.dumps(ANSWER))
    reply = call("lambda", {"function_name": "agent-fn"}, agent_request())
    assert reply.output == "4" and reply.status == "requires_action"
    assert reply.usage == Usage(input_tokens=12, output_tokens=3, cost_usd=0.002)
    [params] = docker_less_lambda
    assert params["url_path"].startswith("/2015-03-31/functions/agent-fn/invocations")
    assert params["headers"]["X-Amz-Invocation-Type"] == "RequestResponse"
    assert json.loads(params["body"]) == {
        "input": MESSAGES,
        "agent_id": "agt_1",
        "agent_version": 3,
        "run_id": "evrun_1",
        "dataset_item_id": "dsit_1",
        "tool_context": {"tenant": "acme", "ocaToken": "tok-very-secret"},
    }


def test_lambda_agent_bad_answers_fail(docker_less_lambda: list[dict[str, Any]]) -> None:
    queue_lambda_answer("not json")
    with pytest.raises(AdapterFailed, match="not JSON"):
        call("lambda", {"function_name": "agent-fn"}, agent_request())
    # Nothing queued: moto echoes the payload, which lacks "output".
    with pytest.raises(AdapterFailed, match="output: Field required"):
        call("lambda", {"function_name": "agent-fn"}, agent_request())


def test_lambda_function_error_fails_the_generation(
    docker_less_lambda: list[dict[str, Any]],
) -> None:
    queue_lambda_answer("x" * 6_000_001)  # moto reports this as an Unhandled function error
    with pytest.raises(AdapterFailed, match=r"failed \(Unhandled\): Function.ResponseSizeTooLarge"):
        call("lambda", {"function_name": "agent-fn"}, agent_request())


def test_lambda_missing_function_fails_the_generation() -> None:
    # The Docker backend looks the function up before it would need Docker.
    with mock_aws():
        wiring.drop_aws_clients()
        try:
            # AWS's text names the account: the tenant gets a reference to pawl's log
            # (tests/security/test_lambda_errors.py).
            with pytest.raises(AdapterFailed, match=r"absent-fn could not be invoked \(reference"):
                call("lambda", {"function_name": "absent-fn"}, agent_request())
        finally:
            wiring.drop_aws_clients()


def test_lambda_invoke_client_waits_longer_than_lambda_runs() -> None:
    with mock_aws():
        wiring.drop_aws_clients()
        try:
            client = lambda_agent.invoke_client()
            assert client.meta.config.read_timeout > 900
            assert lambda_agent.invoke_client() is client
            wiring.drop_aws_clients()
            assert lambda_agent.invoke_client() is not client  # follows the shared clients
        finally:
            wiring.drop_aws_clients()


def test_configs_refuse_unknown_keys() -> None:
    with pytest.raises(ValueError, match="extra"):
        LambdaAgentConfig.model_validate({"function_name": "f", "qualifier": "1"})
    with pytest.raises(ValueError, match="base_url"):
        ModelAgentConfig.model_validate({"model": "m"})
