"""schemathesis against the published ``/api/v1/openapi.json`` on a real HTTP front.

The app runs behind the local API Gateway stand-in over moto; every operation of the
document gets a bounded, derandomized set of generated requests (positive and negative),
authenticated with a real project key (the admin key for admin-only operations). Any 5xx,
any response that breaks the documented schema, status code or content type fails, and
so does a schema-valid request refused with 400 (``positive_data_acceptance``).

A reference to another resource (``agent_id``, ``backend.tool_id``, ...) can only be valid
when it names a real one, and the document cannot list ids. So the fixture creates one
resource of each kind in the test's project, and :func:`real_references` points every
generated reference at it before the request is sent (the id patterns the document states
match the real ids, so the request stays schema-valid). It also drops the list entries
that repeat a name or a one-per-eval scorer type: uniqueness by a member, the one rule
here JSON Schema cannot state. Path ids are left as generated (404, an expected answer).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from chalicelib import wiring
from chalicelib.plugins.manager import plugins
from tests.conftest import ADMIN_KEY
from tests.support.fuzz import FUZZ_SETTINGS, MAX_EXAMPLES
from tests.support.http_front import app_over_http, project_over_http

ADMIN_ONLY = {
    ("POST", "/api/v1/projects"),
    ("POST", "/api/v1/api-keys"),
    ("PUT", "/api/v1/api-keys/{key_id}"),
    ("GET", "/api/v1/policies"),
    ("POST", "/api/v1/policies"),
    ("GET", "/api/v1/policies/{policy_id}"),
    ("PUT", "/api/v1/policies/{policy_id}"),
    ("DELETE", "/api/v1/policies/{policy_id}"),
}
#: A formation template is valid only when its refs name its own resources, its graph has
#: no cycle and each resource's properties fit that type's create route: rules between
#: members that JSON Schema cannot state. These operations get every check but positive
#: data acceptance (their 400s are covered by tests/api/test_formations.py).
TEMPLATE_BODIES = {
    ("POST", "/api/v1/formations"),
    ("PUT", "/api/v1/formations/{formation_id}"),
    ("POST", "/api/v1/formations/plan"),
}


@schemathesis.check
def positive_data_acceptance_but_templates(ctx: Any, response: Any, case: Any) -> bool | None:
    if (case.method.upper(), case.path) in TEMPLATE_BODIES:
        return None
    return positive_data_acceptance(ctx, response, case)


@schemathesis.check
def negative_data_rejection_or_too_large(ctx: Any, response: Any, case: Any) -> bool | None:
    """A refusal for size (413, before the body is parsed) is a rejection too."""
    if response.status_code == 413:
        return None
    return negative_data_rejection(ctx, response, case)


CHECKS = [
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
    content_type_conformance,
    negative_data_rejection_or_too_large,
    positive_data_acceptance_but_templates,
]
#: Requests sent per operation (reported at the end of the module; see docs/security.md).
SENT: dict[str, int] = {}

schema = schemathesis.openapi.from_dict(wiring.openapi_document())
schema.config.generation.update(max_examples=MAX_EXAMPLES, deterministic=True)


#: Field name -> the kind of resource it references (the fixture creates one of each).
REFERENCES = {
    "project_id": "project",
    "agent_id": "agent",
    "dataset_id": "dataset",
    "tool_id": "tool",
    "decider_id": "decider",
    "ai_provider_id": "ai_provider",
    "target_id": "eval",  # a trigger's target (pawl's triggers target evals only)
    "secret_id": "secret",
}


def _create(url: str, path: str, body: dict[str, Any], token: str) -> dict[str, Any]:
    answer = httpx.post(f"{url}{path}", json=body, headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 201, answer.text
    created: dict[str, Any] = answer.json()
    return created


def seed(url: str, key: str, project_id: str) -> dict[str, str]:
    """One real resource per referenced kind in the project, and the project's defaults."""
    provider = _create(
        url,
        "/api/v1/ai-providers",
        {"name": "p", "base_url": "http://127.0.0.1:9/v1", "default_model": "m"},
        key,
    )
    auth = {"Authorization": f"Bearer {key}"}
    default = {"default_ai_provider_id": provider["id"]}  # llm_judge without a provider
    assert httpx.put(f"{url}/api/v1/projects/{project_id}", json=default, headers=auth).is_success
    tool = {"type": "http", "config": {"url": "http://127.0.0.1:9/tool"}}
    # An output_schema lets an eval over this agent carry an output_schema scorer.
    agent = {**tool, "output_schema": {"type": "object"}, "config": {"url": "http://127.0.0.1:9"}}
    tool_id = _create(url, "/api/v1/tools", {"name": "t", **tool}, key)["id"]
    question = {"name": "ok", "kind": "predicate", "prompt": "fine?"}
    decider = {"questions": [question], "backend": {"type": "tool", "tool_id": tool_id}}
    agent_id = _create(url, "/api/v1/agents", {"name": "a", **agent}, key)["id"]
    dataset_id = _create(url, "/api/v1/datasets", {"name": "d"}, key)["id"]
    evaluation = {
        "agent_id": agent_id,
        "dataset_id": dataset_id,
        "scorers": [{"type": "contains", "value": "x"}],
    }
    policy = {"name": "fuzz", "document": {"statement": [{"effect": "Allow", "action": ["*"]}]}}
    secret = {"name": "s", "value": "fuzz-secret-value"}
    return {
        "secret": _create(url, "/api/v1/secrets", secret, key)["id"],
        "policy": _create(url, "/api/v1/policies", policy, ADMIN_KEY)["id"],
        "project": project_id,
        "ai_provider": provider["id"],
        "tool": tool_id,
        "agent": agent_id,
        "dataset": dataset_id,
        "decider": _create(url, "/api/v1/deciders", {"name": "q", **decider}, key)["id"],
        "eval": _create(url, "/api/v1/evals", {"name": "e", **evaluation}, key)["id"],
    }


#: Where every outbound URL points: the outbound policy checks the address a host resolves
#: to (DNS, not the document), and loopback port 9 is what the suite allows (conftest).
ALLOWED_ORIGIN = "http://127.0.0.1:9"
_ORIGIN = re.compile(r"^https?://[^/?#]*", re.IGNORECASE)


def real_references(value: Any, seeded: dict[str, str]) -> Any:
    """``value`` with every resource reference naming the seeded resource of its kind."""
    if isinstance(value, list):
        return _distinct([real_references(entry, seeded) for entry in value])
    if not isinstance(value, dict):
        return value
    real = {}
    for key, entry in value.items():
        if key in REFERENCES and isinstance(entry, str):
            real[key] = seeded[REFERENCES[key]]
        elif key == "policy_ids" and isinstance(entry, list):
            real[key] = [seeded["policy"]] if entry else []
        elif key in {"url", "base_url"} and isinstance(entry, str):
            real[key] = _ORIGIN.sub(ALLOWED_ORIGIN, entry, count=1)
        elif key == "api_key_env":
            # The names a deployment lists (PAWL_CREDENTIAL_ENV_ALLOW) are its operator's,
            # like the addresses it allows: the document states the shape, the server the list.
            real[key] = None
        else:
            real[key] = real_references(entry, seeded)
    if value.get("type") == "tool" and "tool_id" in value:
        real.pop("action", None)  # the seeded tool is an http tool: it has no actions
    return real


def _distinct(entries: list[Any]) -> list[Any]:
    """Entries that repeat an earlier one's ``name`` (or unnamed scorer ``type``) dropped."""
    named_types = {t for t in plugins().scorer_types() if plugins().scorer(t).named}
    seen: set[tuple[str, Any]] = set()
    kept = []
    for entry in entries:
        if isinstance(entry, dict) and ("name" in entry or "type" in entry):
            by_type = "name" not in entry and entry.get("type") not in named_types
            identity = ("type", entry.get("type")) if by_type else ("name", entry.get("name"))
            if identity in seen and isinstance(identity[1], str | type(None)):
                continue
            seen.add(identity)
        kept.append(entry)
    return kept


@pytest.fixture(scope="module")
def live() -> Iterator[dict[str, Any]]:
    """The app over HTTP, and a project key for it."""
    with app_over_http() as server:
        project_id, token = project_over_http(server.url, "fuzz")
        seeded = seed(server.url, token, project_id)
        yield {"url": server.url, "key": token, "seeded": seeded}
        print(f"\nschemathesis: {len(SENT)} operations, {sum(SENT.values())} requests")


@schema.parametrize()
@FUZZ_SETTINGS
def test_api_conforms_to_its_schema(case: Any, live: dict[str, Any]) -> None:
    admin = (case.method.upper(), case.path) in ADMIN_ONLY
    token = ADMIN_KEY if admin else live["key"]
    if case.meta.generation.mode.is_positive and isinstance(case.body, dict):
        case.body = real_references(case.body, live["seeded"])
    if case.meta.generation.mode.is_positive and isinstance(case.query, dict):
        # A cursor is a token the server made; a generated one can only be refused.
        case.query.pop("cursor", None)
    SENT[case.operation.label] = SENT.get(case.operation.label, 0) + 1
    case.call_and_validate(
        base_url=live["url"], headers={"Authorization": f"Bearer {token}"}, checks=CHECKS
    )
