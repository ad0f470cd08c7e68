"""What the outside audit found holding, kept as regression tests.

- Every route x method a project key can call, tried with another project's key against a
  victim project's real resources: nothing of the victim's is returned and nothing changes.
- Every route x method with bad credentials: 401 and the envelope, nothing written.
- Secrets never reach the logs.

The route table is read from the app itself, so a route added later is covered (or fails
here until it is given a sample request).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.runs import Plugins, make_item, make_suite
from tests.support.servers import Reply, Server, serve

#: Routes every caller may read: nothing tenant-specific behind them.
#: The inbound trigger webhook takes no key: a signature over the body is its credential
#: (its refusals are tested in tests/api/test_triggers.py).
PUBLIC_ROUTES = {
    ("GET", "/health"),
    ("GET", "/api/v1/openapi.json"),
    ("GET", "/v2/openapi.json"),
    ("POST", "/hooks/triggers/{trigger_id}"),
}
#: /v2 routes that answer a foreign key about its own project: discovery, and registering
#: a suite (in the caller's own project, whatever suiteId it names).
V2_OWN = {("GET", "/v2/discovery"), ("POST", "/v2/eval-suites")}
#: The console's pages take no bearer key (a sealed session cookie instead): its tenancy and
#: policy cases, with sessions of a foreign and a restricted key, are tests/console's.
CONSOLE_PREFIX = "/console"
V2_SUITE_ID = "victim.corp.evals.secret-suite"
DECIDER_ANSWER = {"answers": [{"name": "ok", "type": "predicate", "probability": 0.9}]}
SECRET_HEADER_VALUE = "Bearer victim-tool-secret-0000"
PROJECT_SECRET_VALUE = "victim-project-secret-value-3333"
TEMPLATE = {
    "resources": {"Cases": {"type": "dataset", "properties": {"name": "victim-formation-dataset"}}}
}
DENY_ALL = {"statement": [{"effect": "Deny", "action": ["*"]}]}
ALLOW_ALL = {"effect": "Allow", "action": ["*"]}
STOLEN_TEMPLATE = {"resources": {"Cases": {"type": "dataset", "properties": {"name": "stolen"}}}}


@dataclass
class Victim:
    """One project with one of every resource, and the strings that must never leak."""

    ids: dict[str, str]
    names: list[str]
    key: str
    webhook_secret: str
    trigger_secret: str

    def markers(self) -> list[str]:
        """Strings whose presence in an answer to the attacker is a leak."""
        # "version" is the path value "1": a number, not something of the victim's.
        ids = [value for name, value in self.ids.items() if name != "version"]
        return [*ids, *self.names, self.webhook_secret, self.trigger_secret]


@pytest.fixture
def decider_backend(aws_env: None) -> Iterator[Server]:
    with serve(lambda request: Reply(200, DECIDER_ANSWER)) as server:
        yield server


def _created(response: Any) -> dict[str, Any]:
    assert response.status == 201, response
    return dict(response.json)


@pytest.fixture
def victim(api: Any, plugins: Plugins, decider_backend: Server) -> Victim:
    project = _created(api.post("/api/v1/projects", {"name": "victim-corp"}))
    key = _created(api.post("/api/v1/api-keys", {"project_id": project["id"], "name": "ci"}))
    suite = make_suite(api, project, [("echo:alpha", "alpha"), ("echo:beta", "beta")])
    run = _created(api.post(suite.runs_path, {"wait": True}))
    generated = api.post(
        f"/api/v1/agents/{suite.agent['id']}/generate",
        {"input": [{"role": "user", "content": "echo:gamma"}]},
    )
    generation = _created(generated)
    tool = _created(
        api.post(
            "/api/v1/tools",
            {
                "project_id": project["id"],
                "name": "victim-judge-tool",
                "type": "http",
                "config": {
                    "url": decider_backend.url,
                    "headers": {"Authorization": SECRET_HEADER_VALUE},
                },
            },
        )
    )
    decider = _created(
        api.post(
            "/api/v1/deciders",
            {
                "project_id": project["id"],
                "name": "victim-decider",
                "questions": [{"name": "ok", "kind": "predicate", "prompt": "Is it fine?"}],
                "backend": {"type": "tool", "tool_id": tool["id"]},
            },
        )
    )
    decision = _created(
        api.post(f"/api/v1/deciders/{decider['id']}/decisions", {"input": "is it fine?"})
    )
    provider = _created(
        api.post(
            "/api/v1/ai-providers",
            {
                "project_id": project["id"],
                "name": "victim-provider",
                "base_url": "http://127.0.0.1:9/v1",
                "default_model": "judge-1",
            },
        )
    )
    secret = _created(
        api.post(
            "/api/v1/secrets",
            {"project_id": project["id"], "name": "victim-secret", "value": PROJECT_SECRET_VALUE},
        )
    )
    webhook = _created(
        api.post(
            "/api/v1/webhooks",
            {"project_id": project["id"], "url": "http://127.0.0.1:9/h", "events": ["eval_run.*"]},
        )
    )
    delivery_id = _victim_delivery(api, project["id"], webhook["id"])
    trigger = _created(
        api.post(
            "/api/v1/triggers",
            {
                "project_id": project["id"],
                "name": "victim-nightly",
                "type": "webhook",
                "target_type": "eval",
                "target_id": suite.eval["id"],
            },
        )
    )
    firing = api.post(f"/api/v1/triggers/{trigger['id']}/fire")
    assert firing.status == 200 and firing.json["status"] == "succeeded", firing
    formation = _created(
        api.post(
            "/api/v1/formations",
            {"project_id": project["id"], "name": "victim-formation", "template": TEMPLATE},
        )
    )
    assert formation["status"] == "active", formation
    policy = _created(api.post("/api/v1/policies", {"name": "victim-policy", "document": DENY_ALL}))
    bounded = {"project_id": project["id"], "name": "bounded", "policy_ids": [policy["id"]]}
    assert api.post("/api/v1/api-keys", bounded).status == 201
    ids = {
        "policy_id": policy["id"],
        "formation_id": formation["id"],
        "project_id": project["id"],
        "key_id": key["id"],
        "agent_id": suite.agent["id"],
        "dataset_id": suite.dataset["id"],
        "item_id": suite.items[0]["id"],
        "eval_id": suite.eval["id"],
        "eval_run_id": run["id"],
        "generation_id": generation["id"],
        "tool_id": tool["id"],
        "decider_id": decider["id"],
        "decision_id": decision["id"],
        "provider_id": provider["id"],
        "secret_id": secret["id"],
        "webhook_id": webhook["id"],
        "delivery_id": delivery_id,
        "trigger_id": trigger["id"],
        "firing_id": firing.json["id"],
        "version": "1",
    }
    scoped = api.as_key(key["key"])
    assert scoped.post("/v2/eval-suites", _v2_suite()).status == 201
    v2_run = _created(
        scoped.post(
            "/v2/runs",
            {"mode": "eval", "evalSuiteRef": f"{V2_SUITE_ID}@1.0.0", "agentId": suite.agent["id"]},
        )
    )
    ids["suiteId"], ids["runId"] = V2_SUITE_ID, v2_run["runId"]
    names = ["victim-corp", "victim-judge-tool", "victim-decider", "victim-provider"]
    names += ["victim-nightly"]
    names += ["victim-formation", "victim-formation-dataset", "victim-policy"]
    names += ["echo:alpha", "echo:gamma", SECRET_HEADER_VALUE]
    names += ["victim-secret", PROJECT_SECRET_VALUE]
    return Victim(
        ids=ids,
        names=names,
        key=key["key"],
        webhook_secret=webhook["secret"],
        trigger_secret=trigger["secret"],
    )


def _victim_delivery(api: Any, project_id: str, webhook_id: str) -> str:
    """A delivery of the victim's webhook: an event handed to the sinks, as a settle does."""
    from chalicelib.domain.events import LifecycleEvent
    from chalicelib.plugins.manager import plugins

    run_id = "evrun_V1ct1mV1ct1mV1ct"
    event = LifecycleEvent(
        id="evt_V1ct1mV1ct1mV1ct",
        event="eval_run.completed",
        project_id=project_id,
        resource_type="eval_run",
        resource_id=run_id,
        data={"id": run_id, "status": "completed"},
        timestamp="2026-01-31T12:00:00.000Z",
    )
    plugins().deliver_event(event)
    listed = api.get(f"/api/v1/webhook-deliveries?webhook_id={webhook_id}").json["data"]
    assert len(listed) == 1, listed
    return str(listed[0]["id"])


def _v2_suite(suite_id: str = V2_SUITE_ID) -> dict[str, Any]:
    return {
        "suiteId": suite_id,
        "version": "1.0.0",
        "modes": ["golden", "regression"],
        "tasks": [
            {
                "taskId": "t",
                "input": "echo:victim-task",
                "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "x"}},
            }
        ],
    }


def _fill(template: str, ids: dict[str, str]) -> str:
    return template.format(**ids)


def sample_body(method: str, path: str, ids: dict[str, str]) -> dict[str, Any] | None:
    """A request body that would be valid for the victim's own key (None: no body)."""
    project = ids["project_id"]
    bodies: dict[tuple[str, str], dict[str, Any]] = {
        ("POST", "/api/v1/projects"): {"name": "stolen"},
        ("PUT", "/api/v1/projects/{project_id}"): {"name": "renamed-by-attacker"},
        ("POST", "/api/v1/api-keys"): {"project_id": project, "name": "stolen"},
        ("PUT", "/api/v1/api-keys/{key_id}"): {"name": "renamed-by-attacker", "policy_ids": []},
        ("POST", "/api/v1/policies"): {"name": "stolen", "document": DENY_ALL},
        ("PUT", "/api/v1/policies/{policy_id}"): {"document": {"statement": [ALLOW_ALL]}},
        ("POST", "/api/v1/agents"): {
            "project_id": project,
            "name": "stolen",
            "type": "http",
            "config": {"url": "http://example.com/agent"},
        },
        ("PUT", "/api/v1/agents/{agent_id}"): {"config": {"url": "http://example.com/x"}},
        ("PATCH", "/api/v1/agents/{agent_id}"): {"config": {"url": "http://example.com/x"}},
        ("POST", "/api/v1/agents/{agent_id}/versions/{version}/restore"): {"label": "stolen"},
        ("PUT", "/api/v1/agents/{agent_id}/release"): {
            "stable_version": 1,
            "canary_version": 2,
            "canary_percent": 100,
        },
        ("POST", "/api/v1/agents/{agent_id}/release/promote"): {},
        ("POST", "/api/v1/agents/{agent_id}/release/abort"): {},
        ("POST", "/api/v1/agents/{agent_id}/generate"): {
            "input": [{"role": "user", "content": "echo:stolen"}]
        },
        ("POST", "/api/v1/ai-providers"): {
            "project_id": project,
            "name": "stolen",
            "base_url": "http://example.com/v1",
            "default_model": "m",
        },
        ("PUT", "/api/v1/ai-providers/{provider_id}"): {"name": "renamed-by-attacker"},
        ("POST", "/api/v1/secrets"): {"project_id": project, "name": "stolen", "value": "x"},
        ("PATCH", "/api/v1/secrets/{secret_id}"): {"value": "replaced-by-attacker"},
        ("POST", "/api/v1/datasets"): {"project_id": project, "name": "stolen"},
        ("PUT", "/api/v1/datasets/{dataset_id}"): {"name": "renamed-by-attacker"},
        ("POST", "/api/v1/datasets/{dataset_id}/items"): {
            "input": [{"role": "user", "content": "planted"}]
        },
        # One JSON object is a one-line JSON Lines body (application/json is accepted).
        ("POST", "/api/v1/datasets/{dataset_id}/items:import"): {
            "input": [{"role": "user", "content": "planted"}]
        },
        ("POST", "/api/v1/datasets/{dataset_id}/items/from-generation"): {
            "generation_id": ids["generation_id"]
        },
        ("PUT", "/api/v1/datasets/{dataset_id}/items/{item_id}"): {"expected_output": "planted"},
        ("POST", "/api/v1/deciders"): {
            "project_id": project,
            "name": "stolen",
            "questions": [{"name": "ok", "kind": "predicate", "prompt": "?"}],
            "backend": {"type": "tool", "tool_id": ids["tool_id"]},
        },
        ("PUT", "/api/v1/deciders/{decider_id}"): {"name": "renamed-by-attacker"},
        ("POST", "/api/v1/deciders/{decider_id}/decisions"): {"input": "x"},
        ("POST", "/api/v1/evals"): {
            "project_id": project,
            "name": "stolen",
            "agent_id": ids["agent_id"],
            "dataset_id": ids["dataset_id"],
            "scorers": [{"type": "exact_match"}],
        },
        ("PUT", "/api/v1/evals/{eval_id}"): {"name": "renamed-by-attacker"},
        ("POST", "/api/v1/formations"): {
            "project_id": project,
            "name": "stolen",
            "template": STOLEN_TEMPLATE,
        },
        ("PUT", "/api/v1/formations/{formation_id}"): {"template": STOLEN_TEMPLATE},
        ("POST", "/api/v1/formations/plan"): {
            "formation_id": ids["formation_id"],
            "template": STOLEN_TEMPLATE,
        },
        ("POST", "/api/v1/evals/{eval_id}/runs"): {"wait": True},
        ("POST", "/api/v1/evals/{eval_id}/runs/{eval_run_id}/cancel"): {},
        ("POST", "/api/v1/tools"): {
            "project_id": project,
            "name": "stolen",
            "type": "http",
            "config": {"url": "http://example.com/t"},
        },
        ("PUT", "/api/v1/tools/{tool_id}"): {"name": "renamed-by-attacker"},
        ("POST", "/api/v1/triggers"): {
            "project_id": project,
            "name": "stolen",
            "type": "manual",
            "target_type": "eval",
            "target_id": ids["eval_id"],
        },
        ("PATCH", "/api/v1/triggers/{trigger_id}"): {"active": False},
        ("POST", "/api/v1/triggers/{trigger_id}/fire"): {"input": {"agent_version": 1}},
        ("POST", "/api/v1/triggers/{trigger_id}/rotate-secret"): {},
        ("POST", "/api/v1/webhooks"): {
            "project_id": project,
            "url": "http://example.com/h",
            "events": ["eval_run.*"],
        },
        ("PUT", "/api/v1/webhooks/{webhook_id}"): {"url": "http://example.com/stolen"},
        ("POST", "/api/v1/webhooks/{webhook_id}/rotate-secret"): {},
        ("POST", "/api/v1/webhook-deliveries/{delivery_id}/redeliver"): {},
        # Registered in the caller's own project (under another id, so that reading the
        # victim's suite afterwards still names something the caller does not have).
        ("POST", "/v2/eval-suites"): _v2_suite("caller.corp.evals.own-suite"),
        ("POST", "/v2/runs"): {
            "mode": "eval",
            "evalSuiteRef": f"{V2_SUITE_ID}@1.0.0",
            "agentId": ids["agent_id"],
            "evalModes": ["golden", "regression"],
            "baselineRunId": ids.get("runId", "evrun_0000000000000000"),
        },
    }
    if method in {"GET", "DELETE"}:
        return None
    return bodies[(method, path)]


#: Query strings for list routes, naming the victim's project where the route takes one.
LIST_QUERIES = {
    "/api/v1/agents",
    "/api/v1/ai-providers",
    "/api/v1/api-keys",
    "/api/v1/datasets",
    "/api/v1/deciders",
    "/api/v1/evals",
    "/api/v1/formations",
    "/api/v1/generations",
    "/api/v1/secrets",
    "/api/v1/tools",
    "/api/v1/triggers",
    "/api/v1/trigger-firings",
    "/api/v1/usage/aggregate",
    "/api/v1/usage/events",
    "/api/v1/webhooks",
}
#: Lists that name their parent in the query instead of a project (the victim's parent).
PARENT_QUERIES = {"/api/v1/webhook-deliveries": "?webhook_id={webhook_id}"}
#: What a listing needs beside ``project_id`` to be a valid request.
LIST_QUERY_EXTRAS = {"/api/v1/usage/aggregate": "&group_by=source"}


def _listing(path: str, project: str) -> str:
    return f"{path}?project_id={project}{LIST_QUERY_EXTRAS.get(path, '')}"


def route_calls(app: Any, ids: dict[str, str]) -> list[tuple[str, str, dict[str, Any] | None]]:
    """(method, concrete path, body) for every route x method of the app but the public ones."""
    calls = []
    for template, methods in sorted(app.routes.items()):
        for method in sorted(methods):
            if (method, template) in PUBLIC_ROUTES or template.startswith(CONSOLE_PREFIX):
                continue
            path = _fill(template, ids)
            if method == "GET" and template in LIST_QUERIES:
                path = _listing(path, ids["project_id"])
            elif method == "GET" and template in PARENT_QUERIES:
                path += _fill(PARENT_QUERIES[template], ids)
            calls.append((method, path, sample_body(method, template, ids)))
    return calls


def victim_state(api: Any, victim: Victim) -> str:
    """Everything the admin can read of the victim's project, as one comparable string."""
    project = victim.ids["project_id"]
    parts = [api.get(f"/api/v1/projects/{project}").json]
    for listing in sorted(LIST_QUERIES):
        parts.append(api.get(_listing(listing, project)).json)
    for path in (
        "/api/v1/datasets/{dataset_id}/items",
        "/api/v1/evals/{eval_id}/runs",
        "/api/v1/evals/{eval_id}/runs/{eval_run_id}/results",
        "/api/v1/agents/{agent_id}/versions",
        "/api/v1/deciders/{decider_id}/versions",
        "/api/v1/generations/{generation_id}",
        "/api/v1/decisions/{decision_id}",
        "/api/v1/webhook-deliveries?webhook_id={webhook_id}",
        "/api/v1/webhook-deliveries/{delivery_id}",
        "/api/v1/webhooks/{webhook_id}/secret",
        "/api/v1/triggers/{trigger_id}/secret",
        "/api/v1/trigger-firings/{firing_id}",
        "/api/v1/formations/{formation_id}/events",
        "/api/v1/policies/{policy_id}",
        "/api/v1/api-keys/{key_id}",
    ):
        parts.append(api.get(_fill(path, victim.ids)).json)
    return json.dumps(parts, sort_keys=True)


def test_a_foreign_key_reaches_nothing_on_any_route(api: Any, victim: Victim) -> None:
    from app import app

    attacker_project = _created(api.post("/api/v1/projects", {"name": "attacker"}))
    attacker_key = _created(
        api.post("/api/v1/api-keys", {"project_id": attacker_project["id"], "name": "k"})
    )
    attacker = api.as_key(attacker_key["key"])
    before = victim_state(api, victim)
    calls = route_calls(app, victim.ids)
    assert len(calls) >= 63  # the audit's 63 pairs; more once routes are added
    print(f"\nwhat held: a foreign key on {len(calls)} route x method pairs")
    leaks = []
    for method, path, body in calls:
        response = attacker.request(method, path, body)
        # A listing may answer 200 with the attacker's own (empty) page; nothing else may.
        own_listing = method == "GET" and path.split("?")[0] in LIST_QUERIES | {"/api/v1/projects"}
        own_listing = own_listing or (method, path) in V2_OWN
        text = response.raw.decode("utf-8", "replace")
        # Echoing what the attacker sent (an id in a 404's message) tells it nothing.
        sent = path + json.dumps(body)
        leaked = [m for m in victim.markers() if m in text and m not in sent]
        if leaked or (200 <= response.status < 300 and not own_listing):
            leaks.append((method, path, response.status, leaked))
        elif path.startswith("/v2/") and not own_listing:
            # /v2 reads of the victim's suite or run are 404; a run naming them is 400.
            assert (response.status, response.json["error"]) in {
                (404, "not_found"),
                (400, "validation_error"),
            }, (method, path, response)
        elif not own_listing:
            assert response.status in {403, 404}, (method, path, response)
            assert response.code in {"RESOURCE_NOT_FOUND", "API_KEY_PROJECT_SCOPE", "FORBIDDEN"}, (
                method,
                path,
                response,
            )
    assert leaks == []
    assert victim_state(api, victim) == before


def test_a_foreign_key_filtering_by_the_victim_s_run_or_eval_sees_no_usage(
    api: Any, victim: Victim
) -> None:
    own = api.get(_listing("/api/v1/usage/events", victim.ids["project_id"])).json["data"]
    assert [e["decision_id"] for e in own] == [victim.ids["decision_id"]]  # metered
    other = _created(api.post("/api/v1/projects", {"name": "other"}))
    other_key = _created(api.post("/api/v1/api-keys", {"project_id": other["id"], "name": "k"}))
    outsider = api.as_key(other_key["key"])
    run_id, eval_id = victim.ids["eval_run_id"], victim.ids["eval_id"]
    for query in (f"eval_run_id={run_id}", f"eval_id={eval_id}", ""):
        listed = outsider.get(f"/api/v1/usage/events?{query}")
        assert listed.status == 200 and listed.json["data"] == [] and listed.json["total"] == 0
        rolled = outsider.get(f"/api/v1/usage/aggregate?group_by=eval_id&{query}").json
        assert rolled["groups"] == [] and rolled["totals"]["event_count"] == 0


def test_missing_project_and_foreign_project_look_the_same(api: Any, victim: Victim) -> None:
    other = _created(api.post("/api/v1/projects", {"name": "other"}))
    other_key = _created(api.post("/api/v1/api-keys", {"project_id": other["id"], "name": "k"}))
    outsider = api.as_key(other_key["key"])
    for template, real in (
        ("/api/v1/agents/{}", victim.ids["agent_id"]),
        ("/api/v1/evals/{}", victim.ids["eval_id"]),
        ("/api/v1/generations/{}", victim.ids["generation_id"]),
    ):
        prefix = real.split("_", 1)[0]
        hidden = outsider.get(template.format(real))
        missing = outsider.get(template.format(f"{prefix}_0000000000000000"))
        assert (
            (hidden.status, hidden.code)
            == (missing.status, missing.code)
            == (
                404,
                "RESOURCE_NOT_FOUND",
            )
        )


def _unauthorized(path: str, body: Any) -> bool:
    """The 401 of the path's surface: OpenWOP's flat envelope on /v2, /api/v1's elsewhere."""
    if path.startswith("/v2/"):
        return bool(body["error"] == "unauthenticated")
    return bool(body["error"]["code"] == "UNAUTHORIZED")


def bad_credentials(victim: Victim) -> dict[str, dict[str, str]]:
    """Authorization headers (or none) that must all be refused the same way."""
    key_id = victim.key.split(".")[1]
    return {
        "missing": {},
        "empty bearer": {"Authorization": "Bearer "},
        "wrong scheme": {"Authorization": f"Basic {victim.key}"},
        "wrong secret": {"Authorization": f"Bearer pawl.{key_id}.not-the-secret"},
        "malformed key": {"Authorization": "Bearer pawl..."},
    }


def test_bad_credentials_are_401_on_every_route(api: Any, victim: Victim) -> None:
    from app import app

    before = victim_state(api, victim)
    calls = route_calls(app, victim.ids)
    refused = 0
    for label, headers in bad_credentials(victim).items():
        for method, path, body in calls:
            payload = json.dumps(body).encode() if body is not None else b""
            response = getattr(api.client.http, method.lower())(
                path, headers={"Content-Type": "application/json", **headers}, body=payload
            )
            assert response.status_code == 401, (label, method, path, response.body[:200])
            assert _unauthorized(path, json.loads(response.body)), (method, path)
            refused += 1
    assert refused == 5 * len(calls) >= 315
    print(f"\nwhat held: {refused} requests with bad credentials, each 401")
    assert victim_state(api, victim) == before


def test_a_deleted_key_is_refused_everywhere(api: Any, victim: Victim) -> None:
    from app import app

    assert api.delete(f"/api/v1/api-keys/{victim.ids['key_id']}").status == 204
    revoked = api.as_key(victim.key)
    for method, path, body in route_calls(app, victim.ids):
        response = revoked.request(method, path, body)
        assert response.status == 401 and _unauthorized(path, response.json), (method, path)


def test_secrets_never_reach_the_logs(
    api: Any, victim: Victim, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    scoped = api.as_key(victim.key)
    suite_eval = victim.ids["eval_id"]
    context = {"session_token": "tool-context-secret-1111"}
    run = scoped.post(f"/api/v1/evals/{suite_eval}/runs", {"wait": True, "tool_context": context})
    assert run.status == 201, run
    decided = scoped.post(f"/api/v1/deciders/{victim.ids['decider_id']}/decisions", {"input": "y"})
    assert decided.status == 201, decided
    api.as_key("pawl.key_0000000000000000.wrong-secret-2222").get("/api/v1/agents")
    made = scoped.post("/api/v1/secrets", {"name": "logged?", "value": "project-secret-4444"})
    assert made.status == 201, made
    rotated = {"value": "project-secret-5555"}
    assert scoped.request("PATCH", f"/api/v1/secrets/{made.json['id']}", rotated).status == 200
    # pawl's own logs, at every level. (botocore's DEBUG logs print whole request bodies;
    # docs/security.md says never to enable them where secrets flow.)
    ours = [r for r in caplog.records if r.name.startswith(("pawl", "chalicelib", "app"))]
    assert ours, "the scenario logged nothing of pawl's: the check would be empty"
    logged = "\n".join(f"{r.getMessage()} {r.exc_text or ''}" for r in ours)
    for secret in (
        victim.key,
        victim.key.split(".")[-1],
        victim.webhook_secret,
        victim.trigger_secret,
        "tool-context-secret-1111",
        SECRET_HEADER_VALUE,
        "wrong-secret-2222",
        "project-secret-4444",
        "project-secret-5555",
    ):
        assert secret not in logged


def test_items_of_a_foreign_dataset_are_not_reachable_by_id(api: Any, victim: Victim) -> None:
    # An item id is only meaningful under its own dataset: the attacker's own dataset path
    # with the victim's item id is the same 404 as a made-up one.
    attacker_project = _created(api.post("/api/v1/projects", {"name": "attacker2"}))
    key = _created(
        api.post("/api/v1/api-keys", {"project_id": attacker_project["id"], "name": "k"})
    )
    attacker = api.as_key(key["key"])
    own = _created(
        attacker.post("/api/v1/datasets", {"project_id": attacker_project["id"], "name": "own"})
    )
    make_item(attacker, own["id"], "mine")
    path = f"/api/v1/datasets/{own['id']}/items/{victim.ids['item_id']}"
    for method in ("GET", "DELETE"):
        response = attacker.request(method, path)
        assert response.status == 404 and response.code == "RESOURCE_NOT_FOUND", response
    assert attacker.put(path, {"expected_output": "x"}).status == 404
