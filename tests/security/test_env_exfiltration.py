"""No value of pawl's own environment reaches anything a tenant configures.

pawl's process holds canaries for the admin key, the server secret, the cloud's secret key
and session token and two ordinary credentials; the operator even (wrongly) lists the
pawl and AWS names in ``PAWL_CREDENTIAL_ENV_ALLOW``, which the settings ignore. Then a
project key points every outbound sink at one real receiver on 127.0.0.1 and tries every
way to name a variable:

- ``api_key_env`` naming each variable (model agents, AI providers, their updates, a
  formation's agent): a 400 naming the setting, byte for byte the same for a set and an
  unset variable;
- ``{{secret:<variable>}}`` and ``secret_id: <variable>``: the same ``SECRET_NOT_FOUND``
  (or pattern) 400 for a set and an unset name;
- ``${VAR}``-style text in headers, URLs and parameters: stored and sent as the literal
  text it is;
- rows written before this control (the store, not the API: ``api_key_env`` naming the
  admin key and the cloud's secret): the call is refused without a request, with one
  message for a set and an unset variable.

Each sink (model and http agents, AI providers through ``llm_judge``, deciders and
``openwop_expected``, http tools through a scorer and a decider, webhooks, the
openai-compatible embedding backend, a formation's agent) is driven until it calls the
receiver, and no request it saw holds a canary. The lambda agent names only a function
(nothing to point at a receiver); python agents are operator-listed code.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from chalicelib import aws, wiring
from chalicelib.domain.ai_providers import AiProviderSpec
from chalicelib.settings import get_settings
from chalicelib.store import agents as agent_store
from chalicelib.store import ai_providers as provider_store
from tests.conftest import ADMIN_KEY, SERVER_SECRET, Api
from tests.support.drain import drain_queues
from tests.support.servers import Reply, Request, Server, serve

CANARIES = {
    "PAWL_ADMIN_KEY": ADMIN_KEY,
    "PAWL_SERVER_SECRET": SERVER_SECRET,
    "AWS_SECRET_ACCESS_KEY": "canary-aws-secret-access-key-7f3a9c",
    "AWS_SESSION_TOKEN": "canary-aws-session-token-51be02",
    "OPENAI_API_KEY": "canary-openai-api-key-c0ffee",
    "DATABASE_URL": "canary-database-url-postgres-d00d",
}
#: A set variable and an unset one of the same family: their answers must not differ.
PAIRS = [
    ("PAWL_ADMIN_KEY", "PAWL_NOT_SET_CANARY"),
    ("PAWL_SERVER_SECRET", "PAWL_ALSO_NOT_SET"),
    ("AWS_SECRET_ACCESS_KEY", "AWS_NOT_SET_CANARY"),
    ("AWS_SESSION_TOKEN", "AWS_ALSO_NOT_SET"),
    ("OPENAI_API_KEY", "NOT_SET_CANARY_KEY"),
]
#: Spellings of "expand this variable" that other systems honour: pawl sends them as text.
LITERALS = [
    "${PAWL_ADMIN_KEY}",
    "$AWS_SECRET_ACCESS_KEY",
    "%OPENAI_API_KEY%",
    "{{env:PAWL_ADMIN_KEY}}",
]


def _answer(request: Request) -> Reply:
    if request.path.endswith("/chat/completions"):
        message = {"role": "assistant", "content": '{"score": 1, "met": [true]}'}
        return Reply(200, {"choices": [{"index": 0, "finish_reason": "stop", "message": message}]})
    if request.path.endswith("/embeddings"):
        count = len(request.json()["input"])
        data = [{"index": i, "embedding": [1.0, 0.0]} for i in range(count)]
        return Reply(200, {"object": "list", "data": data, "model": "m"})
    return Reply(200, {"output": "ok", "score": 1})


@pytest.fixture
def receiver(aws_env: None) -> Iterator[Server]:
    with serve(_answer) as server:
        yield server


@pytest.fixture
def canaries(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name, value in CANARIES.items():
        monkeypatch.setenv(name, value)
    for _, unset in PAIRS:
        monkeypatch.delenv(unset, raising=False)
    # An operator's mistake: pawl's and the cloud's names can never be listed.
    listed = "PAWL_ADMIN_KEY,PAWL_SERVER_SECRET,AWS_SECRET_ACCESS_KEY,AWS_SESSION_TOKEN"
    monkeypatch.setenv("PAWL_CREDENTIAL_ENV_ALLOW", listed)
    monkeypatch.setenv("PAWL_HTTP_MAX_ATTEMPTS", "1")
    wiring.reload_settings()
    assert get_settings().credential_env_allow == ()
    yield
    monkeypatch.undo()
    wiring.reload_settings()


@pytest.fixture
def tenant(api: Api, project: dict[str, Any], project_key: str, canaries: None) -> Api:
    return api.as_key(project_key)


def _created(response: Any) -> Any:
    assert response.status in (200, 201), response
    return response.json


def _same_answer(attempt: Callable[[str], Any]) -> None:
    """``attempt(name)`` is a 400 that reads the same for a set and an unset variable."""
    for set_name, unset_name in PAIRS:
        answers = [attempt(set_name), attempt(unset_name)]
        for answer in answers:
            assert answer.status == 400, answer
        shown = [
            answers[0].raw.replace(set_name.encode(), b"<NAME>"),
            answers[1].raw.replace(unset_name.encode(), b"<NAME>"),
        ]
        assert shown[0] == shown[1], (set_name, answers)
        for value in CANARIES.values():
            assert value.encode() not in answers[0].raw


def _model_agent(url: str, **config: Any) -> dict[str, Any]:
    return {"name": "m", "type": "model", "config": {"base_url": url, "model": "x", **config}}


def test_naming_a_variable_at_write_time_is_one_400_that_reveals_nothing(
    tenant: Api, receiver: Server
) -> None:
    base = f"{receiver.url}/v1"
    provider = _created(
        tenant.post("/api/v1/ai-providers", {"name": "p", "base_url": base, "default_model": "m"})
    )
    agent = _created(tenant.post("/api/v1/agents", _model_agent(base)))
    http_agent = {"name": "h", "type": "http", "config": {"url": f"{receiver.url}/agent"}}

    def with_header(name: str) -> dict[str, Any]:
        token = f"Bearer {{{{secret:{name}}}}}"
        return {**http_agent["config"], "headers": {"Authorization": token}}  # type: ignore[dict-item]

    attempts: list[Callable[[str], Any]] = [
        lambda n: tenant.post("/api/v1/agents", _model_agent(base, api_key_env=n)),
        lambda n: tenant.put(
            f"/api/v1/agents/{agent['id']}",
            {"config": {"base_url": base, "model": "x", "api_key_env": n}},
        ),
        lambda n: tenant.post(
            "/api/v1/ai-providers",
            {"name": "q", "base_url": base, "default_model": "m", "api_key_env": n},
        ),
        lambda n: tenant.put(f"/api/v1/ai-providers/{provider['id']}", {"api_key_env": n}),
        lambda n: tenant.post("/api/v1/agents", _model_agent(base, secret_id=n)),
        lambda n: tenant.post(
            "/api/v1/ai-providers",
            {"name": "q", "base_url": base, "default_model": "m", "secret_id": n},
        ),
        lambda n: tenant.post("/api/v1/agents", {**http_agent, "config": with_header(n)}),
        lambda n: tenant.post(
            "/api/v1/tools",
            {"name": "t", "type": "http", "config": with_header(n) | {"url": f"{receiver.url}/t"}},
        ),
    ]
    for attempt in attempts:
        _same_answer(attempt)
    formation_errors = []
    for set_name, unset_name in PAIRS:
        errors = []
        for name in (set_name, unset_name):
            template = {
                "resources": {
                    "Agent": {"type": "agent", "properties": _model_agent(base, api_key_env=name)}
                }
            }
            formation = tenant.post("/api/v1/formations", {"name": name, "template": template})
            assert formation.json["status"] == "failed", formation
            errors.append(formation.json["error"])
        assert errors[0] == errors[1]
        formation_errors.append(errors[0])
    assert "PAWL_CREDENTIAL_ENV_ALLOW" in formation_errors[0]["message"]
    unlisted = tenant.post("/api/v1/agents", _model_agent(base, api_key_env="PAWL_ADMIN_KEY"))
    assert "PAWL_CREDENTIAL_ENV_ALLOW" in unlisted.json["error"]["message"]
    assert unlisted.json["error"]["meta"]["field"] == "config.api_key_env"
    # Nothing was written by any refusal, and nothing was called.
    assert [a["id"] for a in tenant.get("/api/v1/agents").json["data"]] == [agent["id"]]
    assert [p["id"] for p in tenant.get("/api/v1/ai-providers").json["data"]] == [provider["id"]]
    assert tenant.get("/api/v1/tools").json["data"] == []
    assert receiver.requests == []


def test_a_stored_row_naming_a_variable_is_refused_when_called(
    tenant: Api, project: dict[str, Any], receiver: Server
) -> None:
    """Rows from before the control (or a name the operator later unlisted)."""
    base = f"{receiver.url}/v1"
    failures = []
    for set_name, unset_name in PAIRS[:3]:
        messages = []
        for name in (set_name, unset_name):
            config = {"base_url": base, "model": "x", "api_key_env": name}
            row = agent_store.create_agent(project["id"], f"old-{name}", "model", config, None)
            made = tenant.post(
                f"/api/v1/agents/{row.id}/generate", {"input": [{"role": "user", "content": "hi"}]}
            )
            messages.append(json.dumps(made.json.get("error") or made.json, sort_keys=True))
        assert messages[0] == messages[1]
        failures.append(messages[0])
    assert "PAWL_CREDENTIAL_ENV_ALLOW" in failures[0]
    spec = AiProviderSpec(
        name="old", base_url=base, default_model="m", api_key_env="AWS_SECRET_ACCESS_KEY"
    )
    provider = provider_store.create_provider(project["id"], spec)
    decider = _created(
        tenant.post(
            "/api/v1/deciders",
            {
                "name": "d",
                "questions": [{"name": "ok", "kind": "predicate", "prompt": "ok?"}],
                "backend": {"type": "ai_provider", "ai_provider_id": provider.id},
            },
        )
    )
    decided = tenant.post(f"/api/v1/deciders/{decider['id']}/decisions", {"input": "x"})
    assert "PAWL_CREDENTIAL_ENV_ALLOW" in decided.raw.decode(), decided
    assert receiver.requests == []  # refused before any request


_RUNS = itertools.count()


def _run(tenant: Api, agent_id: str, scorers: list[dict[str, Any]]) -> dict[str, Any]:
    dataset = _created(tenant.post("/api/v1/datasets", {"name": f"d-{next(_RUNS)}"}))
    item = {"input": [{"role": "user", "content": "hello"}], "expected_output": "ok"}
    _created(tenant.post(f"/api/v1/datasets/{dataset['id']}/items", item))
    body = {
        "name": f"e-{dataset['id']}",
        "agent_id": agent_id,
        "dataset_id": dataset["id"],
        "scorers": scorers,
    }
    evaluation = _created(tenant.post("/api/v1/evals", body))
    run: dict[str, Any] = _created(
        tenant.post(f"/api/v1/evals/{evaluation['id']}/runs", {"wait": True})
    )
    return run


def _v2_rubric_run(tenant: Api, project: dict[str, Any], provider_id: str, app: Any) -> None:
    tenant.put(f"/api/v1/projects/{project['id']}", {"default_ai_provider_id": provider_id})
    suite = {
        "suiteId": "acme.tests.evals.exfil",
        "version": "1.0.0",
        "modes": ["rubric"],
        "tasks": [
            {
                "taskId": "t",
                "input": "say hi",
                "expected": {"kind": "rubric", "rubric": [{"criterion": "answers", "weight": 1}]},
            }
        ],
    }
    assert tenant.post("/v2/eval-suites", suite).status == 201
    body = {"mode": "eval", "evalSuiteRef": suite["suiteId"], "agentId": "conformance-eval-agent"}
    assert tenant.post("/v2/runs", body).status == 201
    drain_queues(app)


def test_every_sink_is_driven_and_no_canary_reaches_the_receiver(
    tenant: Api,
    project: dict[str, Any],
    receiver: Server,
    app: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = receiver.url
    headers = {f"X-Try-{i}": text for i, text in enumerate(LITERALS)}
    headers["Authorization"] = "Bearer ${PAWL_ADMIN_KEY}"
    http_agent = _created(
        tenant.post(
            "/api/v1/agents",
            {
                "name": "h",
                "type": "http",
                "config": {"url": f"{url}/agent?k=${{PAWL_ADMIN_KEY}}", "headers": headers},
            },
        )
    )
    model_agent = _created(tenant.post("/api/v1/agents", _model_agent(f"{url}/model/v1")))
    hello = {"input": [{"role": "user", "content": "$PAWL_SERVER_SECRET"}]}
    for agent in (http_agent, model_agent):
        _created(tenant.post(f"/api/v1/agents/{agent['id']}/generate", hello))

    provider = _created(
        tenant.post(
            "/api/v1/ai-providers",
            {"name": "judge", "base_url": f"{url}/judge/v1", "default_model": "m"},
        )
    )
    tool = _created(
        tenant.post(
            "/api/v1/tools",
            {
                "name": "t",
                "type": "http",
                "config": {
                    "url": f"{url}/tool",
                    "headers": headers,
                    "preset_parameters": {"key": "${AWS_SESSION_TOKEN}"},
                },
            },
        )
    )
    _created(
        tenant.post(
            "/api/v1/webhooks",
            {
                "project_id": project["id"],
                "url": f"{url}/hook?${{PAWL_ADMIN_KEY}}",
                "events": ["eval_run.*"],
            },
        )
    )
    judge = {
        "type": "llm_judge",
        "prompt": "Grade ${PAWL_ADMIN_KEY} {{output}}",
        "ai_provider_id": provider["id"],
        "pass_threshold": 0.5,
    }
    run = _run(
        tenant,
        http_agent["id"],
        [judge, {"type": "tool", "name": "tone", "tool_id": tool["id"], "pass_threshold": 0.5}],
    )
    assert run["status"] == "completed", run
    for backend in (
        {"type": "ai_provider", "ai_provider_id": provider["id"]},
        {"type": "tool", "tool_id": tool["id"]},
    ):
        decider = _created(
            tenant.post(
                "/api/v1/deciders",
                {
                    "name": f"d-{backend['type']}",
                    "questions": [{"name": "ok", "kind": "predicate", "prompt": "ok?"}],
                    "backend": backend,
                },
            )
        )
        tenant.post(f"/api/v1/deciders/{decider['id']}/decisions", {"input": "x"})

    # The embedding backend is the operator's: a scorer's config cannot point it anywhere.
    for bad in ({"api_key_env": "PAWL_ADMIN_KEY"}, {"base_url": f"{url}/evil"}):
        scorer = {"type": "embedding_similarity", "pass_threshold": 0.5, **bad}
        refused = tenant.post(
            "/api/v1/evals",
            {
                "name": "x",
                "agent_id": http_agent["id"],
                "dataset_id": "dset_0",
                "scorers": [scorer],
            },
        )
        assert refused.status in (400, 404), refused
    monkeypatch.setenv("PAWL_EMBEDDING_PROVIDER", "openai")
    monkeypatch.setenv("PAWL_EMBEDDING_BASE_URL", f"{url}/embed/v1")
    monkeypatch.delenv("PAWL_EMBEDDING_API_KEY_ENV", raising=False)
    wiring.reload_settings()
    wiring.install_plugins()
    try:
        _run(tenant, http_agent["id"], [{"type": "embedding_similarity", "pass_threshold": 0.5}])
    finally:
        monkeypatch.delenv("PAWL_EMBEDDING_PROVIDER")
        wiring.reload_settings()
        wiring.install_plugins()

    formed = _created(
        tenant.post(
            "/api/v1/formations",
            {
                "name": "formed",
                "template": {
                    "resources": {
                        "Agent": {
                            "type": "agent",
                            "properties": {
                                "name": "formed-agent",
                                "type": "http",
                                "config": {"url": f"{url}/formation-agent", "headers": headers},
                            },
                        }
                    }
                },
            },
        )
    )
    assert formed["status"] == "active", formed
    formed_agent = [
        a for a in tenant.get("/api/v1/agents").json["data"] if a["name"] == "formed-agent"
    ]
    _created(tenant.post(f"/api/v1/agents/{formed_agent[0]['id']}/generate", hello))
    _v2_rubric_run(tenant, project, provider["id"], app)
    drain_queues(app)  # webhook deliveries

    paths = [r.path for r in receiver.requests]
    for sink in (
        "/agent?",
        "/model/v1/chat/completions",
        "/judge/v1/chat/completions",
        "/tool",
        "/hook?",
        "/embed/v1/embeddings",
        "/formation-agent",
    ):
        assert any(p.startswith(sink) for p in paths), (sink, paths)
    # llm_judge, the ai_provider decider and /v2's openwop_expected all reached the judge.
    assert sum(p.startswith("/judge/") for p in paths) >= 3, paths
    assert sum(p.startswith("/tool") for p in paths) >= 2, paths
    seen = [r.path + json.dumps(r.headers) + r.body.decode() for r in receiver.requests]
    for text in seen:
        for name, value in CANARIES.items():
            assert value not in text, (name, text[:300])
    # The spellings arrived as the text they are.
    agent_call = next(r for r in receiver.requests if r.path.startswith("/agent?"))
    assert agent_call.headers["Authorization"] == "Bearer ${PAWL_ADMIN_KEY}"
    assert (
        agent_call.path == "/agent?k=$%7BPAWL_ADMIN_KEY%7D" or "PAWL_ADMIN_KEY}" in agent_call.path
    )


# --- the positive half: a project secret does reach the receiver, and rotates ---------------


def test_a_secret_reaches_each_sink_and_rotating_it_changes_the_next_call(
    tenant: Api, receiver: Server
) -> None:
    url = receiver.url
    secret = _created(tenant.post("/api/v1/secrets", {"name": "key", "value": "sk-first-1111"}))
    token = f"Bearer {{{{secret:{secret['id']}}}}}"
    model = _created(
        tenant.post("/api/v1/agents", _model_agent(f"{url}/model/v1", secret_id=secret["id"]))
    )
    http_agent = _created(
        tenant.post(
            "/api/v1/agents",
            {
                "name": "h",
                "type": "http",
                "config": {"url": f"{url}/agent", "headers": {"Authorization": token}},
            },
        )
    )
    provider = _created(
        tenant.post(
            "/api/v1/ai-providers",
            {
                "name": "j",
                "base_url": f"{url}/judge/v1",
                "default_model": "m",
                "secret_id": secret["id"],
            },
        )
    )
    tool = _created(
        tenant.post(
            "/api/v1/tools",
            {
                "name": "t",
                "type": "http",
                "config": {"url": f"{url}/tool", "headers": {"X-Api-Key": token}},
            },
        )
    )
    hello = {"input": [{"role": "user", "content": "hi"}]}

    def drive() -> dict[str, str]:
        receiver.requests.clear()
        _created(tenant.post(f"/api/v1/agents/{model['id']}/generate", hello))
        judge = {
            "type": "llm_judge",
            "prompt": "{{output}}",
            "ai_provider_id": provider["id"],
            "pass_threshold": 0.5,
        }
        _run(
            tenant,
            http_agent["id"],
            [judge, {"type": "tool", "name": "tone", "tool_id": tool["id"], "pass_threshold": 0.5}],
        )
        sent = {}
        for request in receiver.requests:
            sink = request.path.split("/")[1].split("?")[0]
            sent[sink] = request.headers.get("Authorization") or request.headers.get(
                "X-Api-Key", ""
            )
        return sent

    assert drive() == {
        "model": "Bearer sk-first-1111",
        "agent": "Bearer sk-first-1111",
        "judge": "Bearer sk-first-1111",
        "tool": "Bearer sk-first-1111",
    }
    rotated = tenant.request(
        "PATCH", f"/api/v1/secrets/{secret['id']}", {"value": "sk-second-2222"}
    )
    assert rotated.status == 200 and b"sk-second" not in rotated.raw
    assert set(drive().values()) == {"Bearer sk-second-2222"}


def test_a_secret_that_would_break_a_header_line_is_not_sent(tenant: Api, receiver: Server) -> None:
    secret = _created(
        tenant.post("/api/v1/secrets", {"name": "crlf", "value": "sk-x\r\nX-Injected: 1"})
    )
    token = f"{{{{secret:{secret['id']}}}}}"
    agent = _created(
        tenant.post(
            "/api/v1/agents",
            {
                "name": "h",
                "type": "http",
                "config": {"url": f"{receiver.url}/agent", "headers": {"X-Api-Key": token}},
            },
        )
    )
    made = tenant.post(
        f"/api/v1/agents/{agent['id']}/generate", {"input": [{"role": "user", "content": "hi"}]}
    )
    assert made.json["status"] == "failed", made
    assert "printable ASCII" in made.json["error"]["message"]
    assert b"sk-x" not in made.raw
    assert receiver.requests == []


def test_a_formation_declares_a_secret_its_agents_use_and_never_shows_it(
    tenant: Api, receiver: Server
) -> None:
    from tests.api.test_secrets import raw_table

    value = "sk-formed-7777"
    template = {
        "resources": {
            "Key": {"type": "secret", "properties": {"name": "formed-key", "value": value}},
            "Model": {
                "type": "agent",
                "properties": _model_agent(f"{receiver.url}/model/v1", secret_id={"ref": "Key"}),
            },
            "Http": {
                "type": "agent",
                "properties": {
                    "name": "formed-http",
                    "type": "http",
                    "config": {
                        "url": f"{receiver.url}/agent",
                        "headers": {"Authorization": {"sub": "Bearer {{secret:${Key}}}"}},
                    },
                },
            },
        }
    }
    formed = tenant.post("/api/v1/formations", {"name": "keys", "template": template})
    assert formed.status == 201 and formed.json["status"] == "active", formed
    shown = tenant.get(f"/api/v1/formations/{formed.json['id']}")
    for answer in (formed, shown):
        assert value.encode() not in answer.raw
    tables = aws.client("dynamodb").list_tables()["TableNames"]
    prefix = get_settings().table_name("")
    held = {t: raw_table(t.removeprefix(prefix)) for t in tables if t.startswith(prefix)}
    assert len(held) > 10 and "sealed_value" in held[get_settings().table_name("secrets")]
    assert [t for t, items in held.items() if value in items] == []
    hello = {"input": [{"role": "user", "content": "hi"}]}
    for agent in tenant.get("/api/v1/agents").json["data"]:
        _created(tenant.post(f"/api/v1/agents/{agent['id']}/generate", hello))
    sent = sorted(r.headers.get("Authorization", "") for r in receiver.requests)
    assert sent == [f"Bearer {value}", f"Bearer {value}"]

    # Rotating it in the template updates the secret in place; the agents send the new one.
    template["resources"]["Key"]["properties"]["value"] = "sk-formed-8888"
    updated = tenant.put(f"/api/v1/formations/{formed.json['id']}", {"template": template})
    assert updated.status == 200 and updated.json["status"] == "active", updated
    assert b"sk-formed-8888" not in updated.raw
    receiver.requests.clear()
    for agent in tenant.get("/api/v1/agents").json["data"]:
        _created(tenant.post(f"/api/v1/agents/{agent['id']}/generate", hello))
    sent = sorted(r.headers.get("Authorization", "") for r in receiver.requests)
    assert sent == ["Bearer sk-formed-8888", "Bearer sk-formed-8888"]


def test_secret_and_context_tokens_fill_in_one_pass(tenant: Api, receiver: Server) -> None:
    """A secret's value is not read for ``{{context:}}``, nor a run's context for secrets
    (a run starter cannot make a tool send a secret it does not reference)."""
    kept = _created(tenant.post("/api/v1/secrets", {"name": "a", "value": "v-{{context:k}}"}))
    other = _created(tenant.post("/api/v1/secrets", {"name": "b", "value": "sk-other-6666"}))
    header = f"{{{{secret:{kept['id']}}}}}|{{{{context:k}}}}"
    tool = _created(
        tenant.post(
            "/api/v1/tools",
            {
                "name": "t",
                "type": "http",
                "config": {
                    "url": f"{receiver.url}/tool",
                    "context_keys": ["k"],
                    "headers": {"X-Both": header},
                },
            },
        )
    )
    agent = _created(
        tenant.post(
            "/api/v1/agents",
            {"name": "h", "type": "http", "config": {"url": f"{receiver.url}/agent"}},
        )
    )
    dataset = _created(tenant.post("/api/v1/datasets", {"name": "one-pass"}))
    item = {"input": [{"role": "user", "content": "hi"}]}
    _created(tenant.post(f"/api/v1/datasets/{dataset['id']}/items", item))
    scorer = {"type": "tool", "name": "t", "tool_id": tool["id"], "pass_threshold": 0.5}
    body = {"name": "e", "agent_id": agent["id"], "dataset_id": dataset["id"], "scorers": [scorer]}
    evaluation = _created(tenant.post("/api/v1/evals", body))
    context = {"k": f"{{{{secret:{other['id']}}}}}"}
    run = tenant.post(
        f"/api/v1/evals/{evaluation['id']}/runs", {"wait": True, "tool_context": context}
    )
    assert run.status == 201, run
    [call] = [r for r in receiver.requests if r.path == "/tool"]
    assert call.headers["X-Both"] == f"v-{{{{context:k}}}}|{{{{secret:{other['id']}}}}}"
    assert not any("sk-other-6666" in json.dumps(r.headers) for r in receiver.requests)


def _agents_keyed_by(secret_id: str, url: str) -> list[dict[str, Any]]:
    """A model agent (``secret_id``) and an http agent (a header token) sending the secret."""
    token = f"Bearer {{{{secret:{secret_id}}}}}"
    http_agent = {
        "name": "h",
        "type": "http",
        "config": {"url": f"{url}/a", "headers": {"Authorization": token}},
    }
    return [_model_agent(f"{url}/v1", secret_id=secret_id), http_agent]


def test_an_endpoint_that_echoes_the_secret_does_not_get_it_into_an_answer(
    tenant: Api,
) -> None:
    def echo(request: Request) -> Reply:
        shown = request.headers.get("Authorization", "")
        return Reply(401, {"error": {"message": f"bad key {shown}"}})

    secret = _created(tenant.post("/api/v1/secrets", {"name": "k", "value": "sk-echoed-4242"}))
    with serve(echo) as server:
        for body in _agents_keyed_by(secret["id"], server.url):
            agent = _created(tenant.post("/api/v1/agents", body))
            made = tenant.post(
                f"/api/v1/agents/{agent['id']}/generate",
                {"input": [{"role": "user", "content": "hi"}]},
            )
            assert made.json["status"] == "failed" and "401" in made.json["error"]["message"]
            assert b"sk-echoed-4242" not in made.raw
        assert len(server.requests) == 2


def test_a_successful_answer_that_echoes_the_secret_is_stored_without_it(
    tenant: Api, project: dict[str, Any], app: Any
) -> None:
    """The audit: an http agent answering with its request's headers got the secret's value
    into the generation and the run's results, readable by a key denied the secret. Every
    spelling of the value (as sent, JSON-escaped) is scrubbed from the answer before it is
    read, whatever part of it the value sits in."""
    value = 'sk-"echo"/4242\\x'

    def echo(request: Request) -> Reply:
        shown = request.headers.get("Authorization", "")
        if request.path.endswith("/chat/completions"):
            message = {"role": "assistant", "content": f"you sent {shown}"}
            choice = {"index": 0, "finish_reason": "stop", "message": message}
            return Reply(200, {"choices": [choice]})
        return Reply(200, {"output": f"you sent {shown}"})

    secret = _created(tenant.post("/api/v1/secrets", {"name": "k", "value": value}))
    with serve(echo) as server:
        for body in _agents_keyed_by(secret["id"], server.url):
            agent = _created(tenant.post("/api/v1/agents", body))
            made = _created(
                tenant.post(
                    f"/api/v1/agents/{agent['id']}/generate",
                    {"input": [{"role": "user", "content": "hi"}]},
                )
            )
            assert made["status"] == "completed", made
            assert "you sent Bearer [secret]" in json.dumps(made["output"]), made["output"]
            stored = tenant.get(f"/api/v1/generations/{made['id']}")
            for raw in (stored.raw, json.dumps(made).encode()):
                assert value.encode() not in raw and b"4242" not in raw
        ran = _run(tenant, agent["id"], [{"type": "contains", "value": "sent"}])
        results = tenant.get(f"/api/v1/evals/{ran['eval_id']}/runs/{ran['id']}/results")
        assert results.json["data"] and b"4242" not in results.raw
        assert "[secret]" in json.dumps(results.json["data"][0]["output"])
    assert all(value in r.headers.get("Authorization", "") for r in server.requests)
