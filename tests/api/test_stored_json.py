"""No stored value can make a read 500: every shape the API's JSON rules refuse is refused by
every path that stores tenant JSON (the inbound trigger webhook included), nothing is stored,
and every read answers without a 5xx afterwards. A firing stored before the hook applied
the rules (a lone surrogate in its input) is answered, repaired, not with a 500.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from chalicelib import ids
from chalicelib.api.routing import ROUTES, RouteSpec
from chalicelib.engine.triggers import hook_signature
from chalicelib.jsonvalues.json_input import MAX_DEPTH
from chalicelib.store import triggers as store
from tests.conftest import Api
from tests.support.triggers import FIRINGS, TRIGGERS, TriggerSuite, create_trigger

#: Each shape the rules refuse (a JSON value as sent), and what the refusal says.
NUMBER = "numbers must be finite"
SURROGATE = "lone UTF-16 surrogate"
DEPTH = "nested deeper than"
SHAPES = {
    "NaN": ("NaN", NUMBER),
    "Infinity": ("Infinity", NUMBER),
    "-Infinity": ("-Infinity", NUMBER),
    "overflow": ("1e400", NUMBER),
    "underflow": ("1e-400", NUMBER),
    "over the published bound": ("1e39", NUMBER),
    "lone surrogate": ('"\\udfff"', SURROGATE),
    "lone surrogate in a key": ('{"\\ud800": 1}', SURROGATE),
    "50 levels": ("[" * 50 + "]" * 50, DEPTH),
}
#: Write routes whose handler reads no body: what they store does not come from it.
BODYLESS = {
    ("POST", "/api/v1/evals/{eval_id}/runs/{eval_run_id}/cancel"),
    ("POST", "/api/v1/triggers/{trigger_id}/rotate-secret"),
    ("POST", "/api/v1/webhooks/{webhook_id}/rotate-secret"),
    ("POST", "/api/v1/webhook-deliveries/{delivery_id}/redeliver"),
    ("POST", "/api/v1/agents/{agent_id}/release/promote"),
    ("POST", "/api/v1/agents/{agent_id}/release/abort"),
}


def _message(response: Any) -> str:
    error = response.json.get("error") if isinstance(response.json, dict) else None
    if isinstance(error, dict):  # /api/v1
        return str(error.get("message"))
    return str(response.json.get("message"))  # /v2 (OpenWOP)


def _hook(api: Api, trigger: dict[str, Any], raw: bytes) -> Any:
    secret = store.read_secret(trigger["id"])  # current: the route sweep rotates it
    assert secret is not None
    headers = {
        "Content-Type": "application/json",
        "X-Pawl-Signature": hook_signature.body_only(secret, raw),
    }
    response = api.client.http.post(f"/hooks/triggers/{trigger['id']}", headers=headers, body=raw)
    return type("Answer", (), {"status": response.status_code, "json": json.loads(response.body)})


@pytest.fixture
def world(api: Api, suite: TriggerSuite, project_key: str) -> dict[str, Any]:
    """One resource of each kind the write paths below touch, and their ids by path name."""
    dataset_id = suite.eval["dataset_id"]
    item = api.get(f"/api/v1/datasets/{dataset_id}/items").json["data"][0]
    trigger = create_trigger(api, suite, "webhook")
    run = api.post(suite.runs_path, {}).json
    fired = api.post(f"{TRIGGERS}/{trigger['id']}/fire", {}).json
    return {
        "trigger": trigger,
        "project_key": project_key,
        "ids": {
            "project_id": suite.project["id"],
            "dataset_id": dataset_id,
            "item_id": item["id"],
            "agent_id": suite.agent["id"],
            "eval_id": suite.eval["id"],
            "eval_run_id": run["id"],
            "trigger_id": trigger["id"],
            "firing_id": fired["id"],
        },
    }


#: Realistic writes: a valid body with the shape where tenant JSON is stored (``@@``),
#: and the reads that would show it.
WRITES = [
    ("POST", "/api/v1/datasets/{dataset_id}/items",
     '{"input": [{"role": "user", "content": "x"}], "metadata": {"k": @@}}',
     ["/api/v1/datasets/{dataset_id}/items"]),
    ("PUT", "/api/v1/datasets/{dataset_id}/items/{item_id}", '{"metadata": {"k": @@}}',
     ["/api/v1/datasets/{dataset_id}/items/{item_id}", "/api/v1/datasets/{dataset_id}/items"]),
    ("POST", "/api/v1/datasets/{dataset_id}/items:import",
     '{"input": [{"role": "user", "content": "x"}], "metadata": {"k": @@}}',
     ["/api/v1/datasets/{dataset_id}/items"]),
    ("POST", "/api/v1/evals/{eval_id}/runs", '{"metadata": {"k": @@}}',
     ["/api/v1/evals/{eval_id}/runs"]),
    ("POST", "/api/v1/triggers",
     '{"project_id": "{project_id}", "name": "n", "type": "manual", "target_type": "eval", '
     '"target_id": "{eval_id}", "input": {"k": @@}}',
     ["/api/v1/triggers?project_id={project_id}"]),
    ("PATCH", "/api/v1/triggers/{trigger_id}", '{"input": {"k": @@}}',
     ["/api/v1/triggers/{trigger_id}"]),
    ("POST", "/api/v1/triggers/{trigger_id}/fire", '{"input": {"k": @@}}',
     ["/api/v1/trigger-firings?project_id={project_id}"]),
    ("POST", "/hooks/triggers/{trigger_id}", '{"k": @@}',
     ["/api/v1/trigger-firings?project_id={project_id}", "/api/v1/trigger-firings/{firing_id}"]),
    ("POST", "/api/v1/agents",
     '{"project_id": "{project_id}", "name": "n", "type": "http", '
     '"config": {"url": "http://127.0.0.1:9/a", "body": {"k": @@}}}',
     ["/api/v1/agents?project_id={project_id}"]),
    ("PUT", "/api/v1/agents/{agent_id}", '{"output_schema": {"k": @@}}',
     ["/api/v1/agents/{agent_id}"]),
    ("POST", "/api/v1/evals",
     '{"project_id": "{project_id}", "name": "n", "agent_id": "{agent_id}", '
     '"dataset_id": "{dataset_id}", "scorers": [{"type": "contains", "value": @@}]}',
     ["/api/v1/evals?project_id={project_id}"]),
    ("POST", "/api/v1/tools",
     '{"project_id": "{project_id}", "name": "n", "type": "http", "config": {"k": @@}}',
     ["/api/v1/tools?project_id={project_id}"]),
    ("POST", "/api/v1/agents/{agent_id}/generate",
     '{"input": [{"role": "user", "content": @@}]}', []),
]  # fmt: skip


def _fill(template: str, known: dict[str, str]) -> str:
    for name, value in known.items():
        template = template.replace("{" + name + "}", value)
    return template


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_write_path_refuses_the_shape_and_every_read_answers(
    api: Api, world: dict[str, Any], shape: str
) -> None:
    value, says = SHAPES[shape]
    known = world["ids"]
    before = {read: api.get(_fill(read, known)).json for _, _, _, reads in WRITES for read in reads}
    for method, path, body, reads in WRITES:
        raw = _fill(body, known).replace("@@", value).encode()
        if path.startswith("/hooks/"):
            answer = _hook(api, world["trigger"], raw)
        else:
            answer = api.request(method, _fill(path, known), raw=raw)
        assert answer.status == 400, (method, path, answer.json)
        assert answer.json["error"]["code"] == "VALIDATION_FAILED"
        assert says in _message(answer), (method, path, answer.json)
        for read in reads:  # nothing was stored, and reading answers
            again = api.get(_fill(read, known))
            assert again.status == 200 and again.json == before[read], (method, path, read)


def test_the_hook_refuses_each_shape_as_the_api_does(api: Api, world: dict[str, Any]) -> None:
    """The same bytes, the same 400: the hook's refusal is the API's (code, message, field)."""
    items = f"/api/v1/datasets/{world['ids']['dataset_id']}/items"
    for value, _ in SHAPES.values():
        raw = ('{"k": ' + value + "}").encode()
        assert _hook(api, world["trigger"], raw).json == api.post(items, raw=raw).json
    # A non-object body is stored as {"payload": ...}: one level fewer may be sent.
    deepest = ("[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)).encode()
    assert _hook(api, world["trigger"], deepest).status == 202
    too_deep = _hook(api, world["trigger"], b"[" + deepest + b"]")
    assert too_deep.status == 400 and too_deep.json["error"]["meta"]["limit"] == MAX_DEPTH - 1


def test_every_write_route_refuses_a_body_holding_a_refused_shape(
    api: Api, world: dict[str, Any]
) -> None:
    """Generated from the route table, so a new write route is held to the rules too: each
    one that reads a body refuses every shape (400 naming it); none answers 5xx."""
    writes = [r for r in ROUTES if r.method in {"POST", "PUT", "PATCH"}]
    assert len(writes) >= 30
    for spec in writes:
        for value, says in SHAPES.values():
            raw = ('{"k": ' + value + "}").encode()
            answer = _send(api, world, spec, raw)
            assert answer.status < 500, (spec.method, spec.path, answer.json)
            if (spec.method, spec.path) not in BODYLESS:
                assert answer.status == 400, (spec.method, spec.path, answer.json)
                assert says in _message(answer), (spec.method, spec.path, answer.json)
    _every_read_answers(api, world)


def _send(api: Api, world: dict[str, Any], spec: RouteSpec, raw: bytes) -> Any:
    path = _route_path(spec, world["ids"])
    if spec.path.startswith("/hooks/"):
        return _hook(api, world["trigger"], raw)
    caller = api.as_key(world["project_key"]) if spec.surface == "v2" else api
    return caller.request(spec.method, path, raw=raw)


def _route_path(spec: RouteSpec, known: dict[str, str]) -> str:
    path = _fill(spec.path, known)
    for name, kind in ids.PATH_PARAMETER_KINDS.items():  # a well-formed id of nothing
        path = path.replace("{" + name + "}", ids.new_id(kind))
    return path


def _every_read_answers(api: Api, world: dict[str, Any]) -> None:
    for spec in (r for r in ROUTES if r.method == "GET"):
        caller = api.as_key(world["project_key"]) if spec.surface == "v2" else api
        path = _route_path(spec, world["ids"])
        query = "" if spec.surface == "v2" else f"?project_id={world['ids']['project_id']}"
        answer = caller.get(path + query)
        assert answer.status < 500, (spec.path, answer.raw[:300])


def test_a_firing_stored_with_a_lone_surrogate_is_answered_repaired(
    api: Api, suite: TriggerSuite
) -> None:
    """Before the hook applied the rules it stored such input; every read then answered 500."""
    trigger = store.get_trigger(create_trigger(api, suite, "webhook")["id"])
    firing_id = ids.new_id("trigger_firing")
    stored = {"note\udfff": ["x\ud800y", "\ud83d\ude00"]}
    assert store.create_firing(store.firing_row(firing_id, trigger, "webhook", stored, []))
    shown = api.get(f"{FIRINGS}/{firing_id}")
    assert shown.status == 200
    assert shown.json["input"] == {"note\ufffd": ["x\ufffdy", "\U0001f600"]}
    listed = api.get(f"{FIRINGS}?project_id={suite.project['id']}")
    assert listed.status == 200 and listed.json["data"][0]["input"] == shown.json["input"]
