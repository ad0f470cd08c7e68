"""The tenant/policy matrix: every route x every kind of caller, generated from the routes.

For each route of ``routing.ROUTES`` (the public ones aside) and each principal below, the
exact status and error code, on one project holding one of every resource (the ``victim``
of test_what_held). A route added later is in the matrix without a line here; the few
routes whose allowed call destroys something run last, in :data:`DESTRUCTIVE` order (a new
one fails the test until it is placed there).

Principals: no key; a garbage key; a key of another project (no policies, valid bodies);
keys of the victim's project whose policies are: deny everything; allow the route's action
on another resource of its type only; allow it on exactly this resource; allow everything
but deny the action on this resource; allow everything in another project only.

Every call of a denied principal carries a malformed body: a refusal must be the policy's
(403 before validation), never a 400 that tells a well-formed body from a bad one. The key
allowed on the resource sends the same malformed body and must get what the victim's own
unrestricted key gets (the 400, the read, the same list), which shows the grant suffices.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from chalicelib import ids
from chalicelib.api import routing
from chalicelib.api.routing import RouteSpec
from chalicelib.iam.document import PolicyDocument
from chalicelib.iam.srn import RESOURCE_TYPES
from chalicelib.store import policies, tenancy
from tests.security import test_what_held as held
from tests.security.test_what_held import (
    LIST_QUERIES,
    Victim,
    _created,
    _fill,
    sample_body,
    victim_state,
)

# The fixtures of test_what_held: one project with one of every resource.
victim = held.victim
decider_backend = held.decider_backend

MALFORMED = {"__not_a_field__": True}
GARBAGE_KEY = "pawl.key_0000000000000000.not-a-real-secret"
V2_CODES = {400: "validation_error", 401: "unauthenticated", 403: "forbidden", 404: "not_found"}
V1_CODES = {400: "VALIDATION_FAILED", 401: "UNAUTHORIZED", 403: "FORBIDDEN"}
V1_CODES[404] = "RESOURCE_NOT_FOUND"
SCOPE = "API_KEY_PROJECT_SCOPE"

#: Routes whose allowed call changes or destroys the resource: run once, last, in this
#: order (each still finds what it acts on), each expecting the route's own status.
DESTRUCTIVE = [
    ("POST", "/api/v1/triggers/{trigger_id}/rotate-secret"),
    ("POST", "/api/v1/webhooks/{webhook_id}/rotate-secret"),
    ("POST", "/api/v1/webhook-deliveries/{delivery_id}/redeliver"),
    ("POST", "/api/v1/evals/{eval_id}/runs/{eval_run_id}/cancel"),
    ("DELETE", "/api/v1/generations/{generation_id}/content"),
    ("DELETE", "/api/v1/datasets/{dataset_id}/items/{item_id}"),
    ("DELETE", "/api/v1/triggers/{trigger_id}"),
    ("DELETE", "/api/v1/webhooks/{webhook_id}"),
    ("DELETE", "/api/v1/formations/{formation_id}"),
    ("DELETE", "/api/v1/deciders/{decider_id}"),
    ("DELETE", "/api/v1/tools/{tool_id}"),
    ("DELETE", "/api/v1/evals/{eval_id}"),
    ("DELETE", "/api/v1/datasets/{dataset_id}"),
    ("POST", "/api/v1/agents/{agent_id}/release/promote"),
    ("POST", "/api/v1/agents/{agent_id}/release/abort"),
    ("DELETE", "/api/v1/agents/{agent_id}"),
    ("DELETE", "/api/v1/ai-providers/{provider_id}"),
    ("DELETE", "/api/v1/secrets/{secret_id}"),
    ("DELETE", "/api/v1/api-keys/{key_id}"),
]
#: What an allowed call needs besides the route's own action: deleting the victim's
#: formation deletes the dataset it declares, which its key must be allowed too.
ALSO_NEEDED = {("DELETE", "/api/v1/formations/{formation_id}"): "evaluations:DeleteDataset"}


def _released_spare(world: World) -> None:
    """The spare agent at two versions, with an (ungated) release to end."""
    api, agent = world.api, f"/api/v1/agents/{world.victim.ids[SPARE_AGENT]}"
    if api.get(f"{agent}/versions").json["total"] < 2:
        assert api.put(agent, {"name": "spare-2"}).status == 200
    release = {"stable_version": 1, "canary_version": 2, "canary_percent": 10}
    assert api.put(f"{agent}/release", release).status == 200


#: What a destructive route's allowed call needs to find first (a release to end).
PREPARE: dict[tuple[str, str], Callable[[World], None]] = {
    ("POST", "/api/v1/agents/{agent_id}/release/promote"): _released_spare,
    ("POST", "/api/v1/agents/{agent_id}/release/abort"): _released_spare,
}
#: The victim's agent stays referenced by the eval its /v2 run made: a spare one is deleted.
SPARE_AGENT = "spare_agent_id"
#: What a foreign key gets where the route acts on the caller's own project, not the
#: victim's: /v2 discovery and suite registration, the project list, and the admin-only
#: project create.
FOREIGN_OWN = {
    ("GET", "/v2/discovery"): 200,
    ("POST", "/v2/eval-suites"): 201,
    ("POST", "/v2/runs"): 400,  # names the victim's suite: no suite of this caller
    ("GET", "/api/v1/projects"): 200,
    ("POST", "/api/v1/projects"): 403,
}


@dataclass(frozen=True)
class Expect:
    status: int
    code: str | None = None
    #: For a list: the page must be empty (True) or equal the victim key's (a dict).
    data: Any = None


@dataclass
class World:
    api: Any
    victim: Victim
    other_project: str
    keys: dict[str, str]
    #: Another resource id of each SRN type (none of them exists).
    others: dict[str, str] = field(default_factory=dict)

    @property
    def project(self) -> str:
        return self.victim.ids["project_id"]


def secured_routes() -> list[RouteSpec]:
    return [r for r in routing.ROUTES if r.access.action is not None]


def is_destructive(spec: RouteSpec) -> bool:
    """An allowed call would change the resource (an admin-only route refuses every key)."""
    if is_admin_only(spec):
        return False
    no_body = spec.body is None and not spec.raw_body
    return spec.method == "DELETE" or (spec.method == "POST" and no_body)


def is_admin_only(spec: RouteSpec) -> bool:
    return spec.access.target == "admin"


def refusal(spec: RouteSpec, status: int, code: str | None = None) -> Expect:
    codes = V2_CODES if spec.surface == "v2" else V1_CODES
    return Expect(status, code or codes.get(status))


def route_srn(spec: RouteSpec, world: World) -> str:
    access, project = spec.access, world.project
    if access.target == "admin":
        return "*"  # the widest grant a policy can make still does not reach them
    if access.target == "collection":
        return f"srn:{project}:{access.resource_type}:*"
    if access.target == "project":
        return f"srn:{project}:project:{project}"
    assert access.param is not None
    resource_id = world.victim.ids[access.param]
    owner = resource_id if access.resource_type == "project" else project
    return f"srn:{owner}:{access.resource_type}:{resource_id}"


def other_srn(spec: RouteSpec, world: World) -> str:
    """Another resource of the route's type (another project, for a project)."""
    resource_type = spec.access.resource_type
    if resource_type == "project":
        return f"srn:{world.other_project}:project:{world.other_project}"
    if resource_type not in world.others:  # one per type: the same key serves every case
        world.others[resource_type] = ids.new_id(RESOURCE_TYPES[resource_type])
    return f"srn:{world.project}:{resource_type}:{world.others[resource_type]}"


def allow(action: str, resource: str) -> dict[str, Any]:
    return {"effect": "Allow", "action": [action], "resource": [resource]}


def deny(action: str, resource: str) -> dict[str, Any]:
    return {"effect": "Deny", "action": [action], "resource": [resource]}


def allowed_here(spec: RouteSpec, world: World) -> list[dict[str, Any]]:
    assert spec.access.action is not None
    statements = [allow(spec.access.action, route_srn(spec, world))]
    also = ALSO_NEEDED.get((spec.method, spec.path))
    if also:
        statements.append(allow(also, f"srn:{world.project}:*:*"))
    return statements


#: principal -> (the policy statements of its key for a route, or None: not a policy key).
Statements = Callable[[RouteSpec, World], list[dict[str, Any]]]
POLICY_PRINCIPALS: dict[str, Statements] = {
    "deny-all": lambda spec, w: [deny("*", "*")],
    "allowed on another resource": lambda spec, w: [allow(spec.access.action, other_srn(spec, w))],
    "allowed on this resource": lambda spec, w: allowed_here(spec, w),
    "deny overrides allow": lambda spec, w: [
        allow("*", "*"),
        deny(spec.access.action, route_srn(spec, w)),
    ],
    "another project only": lambda spec, w: [allow("*", f"srn:{w.other_project}:*:*")],
}
PRINCIPALS = ("no key", "garbage key", "foreign project key", *POLICY_PRINCIPALS)


def names_victim(statements: list[dict[str, Any]], project: str) -> bool:
    """Whether an Allow statement could cover a resource of ``project`` (iam.md)."""
    return any(
        pattern == "*" or pattern.split(":")[1] in ("*", project)
        for s in statements
        if s["effect"] == "Allow"
        for pattern in s["resource"]
    )


def denial(spec: RouteSpec, statements: list[dict[str, Any]], project: str) -> Expect:
    """The refusal iam.md gives the route's shape."""
    if is_admin_only(spec):
        return refusal(spec, 403)
    if spec.shape == "list":
        return Expect(200, data=True)
    if spec.shape == "read":
        return refusal(spec, 404)
    if spec.access.target == "path" and not names_victim(statements, project):
        return refusal(spec, 404)
    return refusal(spec, 403)


def foreign_expect(spec: RouteSpec, body: Any) -> Expect:
    own = FOREIGN_OWN.get((spec.method, spec.path))
    if is_admin_only(spec):
        return refusal(spec, 403)
    if own is not None:
        return refusal(spec, own)
    names_victim_project = spec.method == "GET" and spec.path in LIST_QUERIES
    if names_victim_project or (isinstance(body, dict) and "project_id" in body):
        return refusal(spec, 403, SCOPE)  # ?project_id= or a body naming the victim's
    return refusal(spec, 404)


def path_of(spec: RouteSpec, world: World) -> str:
    path = _fill(spec.path, world.victim.ids)
    if spec.method == "GET" and spec.path in LIST_QUERIES:
        path = held._listing(path, world.project)
    elif spec.method == "GET" and spec.path in held.PARENT_QUERIES:
        path += _fill(held.PARENT_QUERIES[spec.path], world.victim.ids)
    return path


def malformed(spec: RouteSpec) -> Any:
    return MALFORMED if spec.body is not None or spec.raw_body else None


def call(world: World, key: str | None, spec: RouteSpec, body: Any) -> Any:
    return world.api.as_key(key).request(spec.method, path_of(spec, world), body)


def check(response: Any, expect: Expect, reference: Any = None) -> str | None:
    """What is wrong with ``response`` (None: it is what ``expect`` says)."""
    body = response.json
    code = None
    if isinstance(body, dict) and "error" in body:
        code = body["error"]["code"] if isinstance(body["error"], dict) else body["error"]
    if response.status != expect.status or (expect.code is not None and code != expect.code):
        return f"got {response.status} {code}, expected {expect.status} {expect.code}"
    if expect.data is True and body["data"] != []:
        return f"a denied list showed {len(body['data'])} resources"
    if reference is not None and expect.status == 200 and body != reference.json:
        return "an allowed call answered otherwise than the unrestricted key"
    return None


#: Path values that differ from the victim's ids for one route (a /v2 suite's version).
PATH_VALUES = {("GET", "/v2/eval-suites/{suiteId}/{version}"): {"version": "1.0.0"}}


def key_with(world: World, statements: list[dict[str, Any]]) -> str:
    """A victim-project key carrying one policy of ``statements`` (one per distinct set)."""
    document = {"statement": statements}
    wanted = json.dumps(document, sort_keys=True)
    if wanted not in world.keys:
        name = f"matrix-{len(world.keys)}"
        policy = policies.create_policy(name, None, PolicyDocument.model_validate(document))
        world.keys[wanted] = tenancy.create_api_key(world.project, name, [policy.id]).key
    return world.keys[wanted]


def run_case(world: World, spec: RouteSpec, principal: str, foreign_key: str) -> str | None:
    """Call the route as ``principal``; what is wrong with the answer (None: as expected)."""
    bad_body = malformed(spec)
    if principal in ("no key", "garbage key"):
        key = None if principal == "no key" else GARBAGE_KEY
        return check(call(world, key, spec, bad_body), refusal(spec, 401))
    if principal == "foreign project key":
        body = sample_body(spec.method, spec.path, world.victim.ids)
        return check(call(world, foreign_key, spec, body), foreign_expect(spec, body))
    statements = POLICY_PRINCIPALS[principal](spec, world)
    key = key_with(world, statements)
    if principal != "allowed on this resource" or is_admin_only(spec):
        return check(call(world, key, spec, bad_body), denial(spec, statements, world.project))
    reference = call(world, world.victim.key, spec, bad_body)
    if reference.status in (401, 403, 404):
        return f"the unrestricted key itself got {reference.status}: fix the fixture"
    return check(call(world, key, spec, bad_body), Expect(reference.status), reference)


def run_destructive(world: World) -> list[str]:
    failures = []
    for method, template in DESTRUCTIVE:
        spec = routing.route(method, template)
        if "{agent_id}" in template:
            world.victim.ids["agent_id"] = world.victim.ids[SPARE_AGENT]
        if (method, template) in PREPARE:
            PREPARE[(method, template)](world)
        key = key_with(world, POLICY_PRINCIPALS["allowed on this resource"](spec, world))
        path = path_of(spec, world)
        response = world.api.as_key(key).request(method, path, None)
        problem = check(response, Expect(spec.status))
        if problem:
            failures.append(f"{method} {template} [allowed on this resource]: {problem}")
    return failures


def build_world(api: Any, victim: Victim) -> tuple[World, str]:
    other = _created(api.post("/api/v1/projects", {"name": "matrix-other"}))
    foreign = _created(api.post("/api/v1/api-keys", {"project_id": other["id"], "name": "f"}))
    # A queued run (no worker drains it here): the one a cancel can act on.
    queued = _created(api.post(f"/api/v1/evals/{victim.ids['eval_id']}/runs", {}))
    victim.ids["eval_run_id"] = queued["id"]
    spare = {"project_id": victim.ids["project_id"], "name": "spare", "type": "http"}
    spare["config"] = {"url": "http://example.com/agent"}
    victim.ids[SPARE_AGENT] = _created(api.post("/api/v1/agents", spare))["id"]
    return World(api, victim, other["id"], {}), foreign["key"]


def test_every_route_refuses_and_allows_each_principal_exactly(api: Any, victim: Victim) -> None:
    world, foreign_key = build_world(api, victim)
    routes = secured_routes()
    destructive = {(r.method, r.path) for r in routes if is_destructive(r)}
    assert destructive == set(DESTRUCTIVE), "place each destructive route in DESTRUCTIVE"
    for spec in routes:  # every key first: the state compared below must not see them appear
        for make in POLICY_PRINCIPALS.values():
            key_with(world, make(spec, world))
    before = victim_state(api, victim)
    failures, cases = [], 0
    for spec in routes:
        saved = dict(victim.ids)
        victim.ids.update(PATH_VALUES.get((spec.method, spec.path), {}))
        for principal in PRINCIPALS:
            if principal == "allowed on this resource" and is_destructive(spec):
                continue
            cases += 1
            problem = run_case(world, spec, principal, foreign_key)
            if problem:
                failures.append(f"{spec.method} {spec.path} [{principal}]: {problem}")
        victim.ids.clear()
        victim.ids.update(saved)
    assert victim_state(api, victim) == before, "a refused or malformed call changed state"
    failures += run_destructive(world)
    cases += len(DESTRUCTIVE)
    print(f"\npolicy matrix: {cases} cases ({len(routes)} routes x {len(PRINCIPALS)} principals)")
    assert failures == [], "\n".join(failures)
    assert cases == len(routes) * len(PRINCIPALS)


# --- references: every id a body names, generated from the routes' reference fields ---------
#
# For every route whose body has reference fields (``RouteSpec.references()``, read from the
# request models), and for the routes that re-check a stored eval's bindings
# (``evals.BINDING_CHECKS``), each reference in turn is denied to a key that may do the rest:
#
# - "reference denied": everything allowed, the reference's actions explicitly denied on
#   the resource it names;
# - "reference not allowed": the route's own action and every other reference allowed, this
#   one simply not.
#
# Each must answer exactly what a missing id there gets (the victim's own key, the same body
# with a fresh id of that kind), or 403 for a binding the key may see but not make; must
# leave no state behind; must not call the agent (a counting real HTTP agent is the one the
# bodies and the run-start eval name). Then the victim's own key sends each body unchanged
# and is not refused: the body was valid, so the refusal was the policy's.

REFERENCE_PRINCIPALS = ("reference denied", "reference not allowed")
#: Per (operationId, reference field): what the sample body needs to name the resource.
Patch = Callable[[dict[str, str]], dict[str, Any]]
EVAL_SAMPLES: dict[str, Patch] = {
    "agent_id": lambda ids: {"agent_id": ids["counted_agent_id"]},
    "dataset_id": lambda ids: {"dataset_id": ids["dataset_id"]},
    "scorers[][type=tool].tool_id": lambda ids: {
        "scorers": [{"type": "tool", "name": "judge", "tool_id": ids["tool_id"]}]
    },
    "scorers[][type=decider].decider_id": lambda ids: {
        "scorers": [
            {
                "type": "decider",
                "name": "fine",
                "decider_id": ids["decider_id"],
                "score": {"var": "answers_by_name.ok.probability"},
                "pass_threshold": 0.5,
            }
        ]
    },
    "scorers[][type=llm_judge].ai_provider_id": lambda ids: {
        "scorers": [
            {
                "type": "llm_judge",
                "prompt": "Is it right?",
                "pass_threshold": 0.5,
                "ai_provider_id": ids["provider_id"],
            }
        ]
    },
}
V2_GOLDEN = {"evalModes": ["golden"], "baselineRunId": None}


def _model_keyed(ids: dict[str, str]) -> dict[str, Any]:
    """A model agent's config keyed by the victim's project secret."""
    return {"base_url": "http://example.com/v1", "model": "m", "secret_id": ids["secret_id"]}


REFERENCE_SAMPLES: dict[tuple[str, str], Patch] = {
    **{("createEval", name): patch for name, patch in EVAL_SAMPLES.items()},
    **{("updateEval", name): patch for name, patch in EVAL_SAMPLES.items()},
    ("createDecider", "backend[type=ai_provider].ai_provider_id"): lambda ids: {
        "backend": {"type": "ai_provider", "ai_provider_id": ids["provider_id"]}
    },
    ("updateDecider", "backend[type=tool].tool_id"): lambda ids: {
        "backend": {"type": "tool", "tool_id": ids["tool_id"]}
    },
    ("updateDecider", "backend[type=ai_provider].ai_provider_id"): lambda ids: {
        "backend": {"type": "ai_provider", "ai_provider_id": ids["provider_id"]}
    },
    ("startEvalRun", "agent_version"): lambda ids: {"agent_version": 1},
    ("startEvalRun", "baseline_run_id"): lambda ids: {"baseline_run_id": ids["counted_run_id"]},
    ("updateProject", "default_ai_provider_id"): lambda ids: {
        "default_ai_provider_id": ids["provider_id"]
    },
    ("updateTrigger", "target_id"): lambda ids: {"target_id": ids["counted_eval_id"]},
    ("createTrigger", "target_id"): lambda ids: {"target_id": ids["counted_eval_id"]},
    ("createAgent", "config.secret_id"): lambda ids: {"type": "model", "config": _model_keyed(ids)},
    ("updateAgent", "config.secret_id"): lambda ids: {"type": "model", "config": _model_keyed(ids)},
    ("patchAgent", "config.secret_id"): lambda ids: {"type": "model", "config": _model_keyed(ids)},
    ("createAiProvider", "secret_id"): lambda ids: {"secret_id": ids["secret_id"]},
    # On the counted agent (COUNTED_AGENT_PATH), given a version 2 by add_counted.
    ("setAgentRelease", "promotion_gate"): lambda ids: {
        "stable_version": 1,
        "canary_version": 2,
        "canary_percent": 10,
        "promotion_gate": ids["counted_eval_id"],
    },
    ("updateAiProvider", "secret_id"): lambda ids: {"secret_id": ids["secret_id"]},
    # Golden only: no /v2 baseline can complete here, and the agent's cases need none.
    ("createRun", "agentId"): lambda ids: {"agentId": ids["counted_agent_id"], **V2_GOLDEN},
    ("createRun", "evalSuiteRef"): lambda ids: {"agentId": ids["counted_agent_id"], **V2_GOLDEN},
}
#: Routes whose path eval is the counted one (its agent is the counting server).
COUNTED_PATH = {("POST", "/api/v1/evals/{eval_id}/runs")}
#: Routes whose path agent is the counted one (the counted eval evaluates it throughout,
#: where the victim's eval is rebound by updateEval's controls).
COUNTED_AGENT_PATH = {("PUT", "/api/v1/agents/{agent_id}/release")}
#: A missing value of a reference whose value is not the resource's own id.
MISSING_VALUES = {"agent_version": 987654321, "evalSuiteRef": "no.such.suite@1.0.0"}
#: Cases whose allowed control cannot succeed on this fixture, and why.
NO_CONTROL = {
    ("createRun", "baselineRunId"): "no /v2 run completes here: queued runs need a worker",
}


@dataclass(frozen=True)
class RefCase:
    spec: RouteSpec
    field: str  # the reference's name in the table
    named: Any  # the Named value the body (or the stored eval) holds there
    resource: str  # its SRN
    actions: tuple[str, ...]
    body: Any
    path_ids: dict[str, str]
    binding: bool  # a stored eval's binding, re-checked (not a body field)
    needed: list[tuple[tuple[str, ...], str]]  # every (actions, SRN) the whole call needs


def _sample(spec: RouteSpec, field: str, ids: dict[str, str]) -> Any:
    body = sample_body(spec.method, spec.path, ids)
    patch = REFERENCE_SAMPLES.get((spec.operation_id, field))
    if patch is None:
        return body
    return {**(body or {}), **patch(ids)}


def _needs(
    spec: RouteSpec, body: Any, path_ids: dict[str, str], world: World
) -> list[tuple[tuple[str, ...], str, Any, Any, bool]]:
    """Every reference the call names: (actions, SRN, Named, table row, is a binding)."""
    from chalicelib.api import evals as eval_routes
    from chalicelib.api.access import path_context
    from chalicelib.iam.references import named_references
    from chalicelib.store import evals as eval_store

    project = world.project
    context = path_context(path_ids)
    found: list[tuple[tuple[str, ...], str, Any, Any, bool]] = []
    eval_id = None
    if (spec.method, spec.path) in eval_routes.BINDING_CHECKS:
        eval_id = path_ids.get("eval_id") if "{eval_id}" in spec.path else None
        eval_id = eval_id or (body or {}).get("target_id")
    stored = eval_store.get_eval(eval_id) if eval_id else None
    if stored is not None:
        context["eval:agent_id"] = stored.agent_id
    for ref in spec.references():
        for named in named_references([ref], body):
            rid = named.resource_id(context, project)
            srn = f"srn:{project}:{ref.reference.resource_type}:{rid}"
            found.append((ref.reference.actions, srn, named, ref, False))
    if stored is not None:
        dumped = stored.model_dump(mode="json")
        for ref in eval_routes.eval_references():
            for named in named_references([ref], dumped):
                srn = f"srn:{project}:{ref.reference.resource_type}:{named.value}"
                found.append((ref.reference.actions, srn, named, ref, True))
    return found


def reference_cases(world: World) -> list[RefCase]:
    from chalicelib.api import evals as eval_routes

    cases = []
    for spec in secured_routes():
        bindings = (spec.method, spec.path) in eval_routes.BINDING_CHECKS
        fields = [r.name for r in spec.references()]
        if bindings:
            fields += [f"(eval) {r.name}" for r in eval_routes.eval_references()]
        for field_name in fields:
            path_ids = dict(world.victim.ids)
            if (spec.method, spec.path) in COUNTED_PATH:
                path_ids["eval_id"] = path_ids["counted_eval_id"]
            if (spec.method, spec.path) in COUNTED_AGENT_PATH:
                path_ids["agent_id"] = path_ids["counted_agent_id"]
            is_binding = field_name.startswith("(eval) ")
            ref_name = field_name.removeprefix("(eval) ")
            body = _sample(spec, "target_id" if is_binding else ref_name, path_ids)
            needs = _needs(spec, body, path_ids, world)
            mine = [n for n in needs if n[3].name == ref_name and n[4] == is_binding]
            assert len(mine) == 1, (
                f"{spec.operation_id}: the sample body names nothing at {field_name}: "
                "give it one in REFERENCE_SAMPLES"
            )
            actions, srn, named, _, _ = mine[0]
            cases.append(
                RefCase(
                    spec=spec,
                    field=field_name,
                    named=named,
                    resource=srn,
                    actions=actions,
                    body=body,
                    path_ids=path_ids,
                    binding=is_binding,
                    needed=[(n[0], n[1]) for n in needs],
                )
            )
    return cases


def _case_path(case: RefCase, world: World) -> str:
    return _fill(case.spec.path, case.path_ids)


def _statements(case: RefCase, principal: str, world: World) -> list[dict[str, Any]]:
    if principal == "reference denied":
        return [
            allow("*", "*"),
            {"effect": "Deny", "action": list(case.actions), "resource": [case.resource]},
        ]
    assert case.spec.access.action is not None
    saved = dict(world.victim.ids)
    world.victim.ids.update(case.path_ids)
    statements = [allow(case.spec.access.action, route_srn(case.spec, world))]
    world.victim.ids.clear()
    world.victim.ids.update(saved)
    for actions, srn in case.needed:
        if srn == case.resource:
            actions = tuple(a for a in actions if a not in case.actions)
        if actions:
            statements.append({"effect": "Allow", "action": list(actions), "resource": [srn]})
    return statements


def _swap(value: Any, old: str, new: str) -> Any:
    return json.loads(json.dumps(value).replace(json.dumps(old)[1:-1], json.dumps(new)[1:-1]))


def _set_at(body: Any, where: str, value: Any) -> Any:
    """A copy of ``body`` with ``value`` at the dotted ``where`` (``scorers.0.tool_id``)."""
    copied = json.loads(json.dumps(body))
    *parents, last = where.split(".")
    holder = copied
    for step in parents:
        holder = holder[int(step)] if isinstance(holder, list) else holder[step]
    holder[int(last) if isinstance(holder, list) else last] = value
    return copied


def _missing_answer(case: RefCase, world: World) -> tuple[Any, str, str]:
    """What the victim's own key gets with a fresh (missing) value there, and the swap."""
    named = case.named
    scope = named.of.reference.scope
    real = str(named.value)
    if scope and named.of.name in MISSING_VALUES:
        fresh: Any = MISSING_VALUES[named.of.name]
    elif scope and named.of.reference.value_kind:
        fresh = ids.new_id(named.of.reference.value_kind)
    elif scope:
        fresh = ids.new_id("eval_run")
    else:
        fresh = ids.new_id(named.of.reference.kind)
    body = _set_at(case.body, named.field, fresh)
    response = world.api.as_key(world.victim.key).request(
        case.spec.method, _case_path(case, world), body
    )
    return response, str(fresh), real


def run_reference_case(world: World, case: RefCase, principal: str) -> str | None:
    key = key_with(world, _statements(case, principal, world))
    response = world.api.as_key(key).request(case.spec.method, _case_path(case, world), case.body)
    reference = case.named.of.reference
    if reference.answer == "forbidden":
        return check(response, refusal(case.spec, 403))
    if case.binding:
        meta = (
            response.json.get("error", {}).get("meta") if isinstance(response.json, dict) else None
        )
        expect = (400, {"field": case.named.field})
        if (response.status, meta) != expect:
            return f"got {response.status} {response.json}, expected 400 naming {case.named.field}"
        return None
    missing, fresh, real = _missing_answer(case, world)
    if missing.status not in (400, 404):
        return f"a missing value there is not refused ({missing.status}): fix the sample"
    expected = _swap(missing.json, fresh, real)
    if (response.status, response.json) != (missing.status, expected):
        return (
            f"got {response.status} {response.json}, a missing one gets {missing.status} {expected}"
        )
    return None


def allowed_control(world: World, case: RefCase, serial: int) -> str | None:
    """The victim's own key sends the same body: not refused (it was valid)."""
    body = case.body
    if isinstance(body, dict) and "name" in body:
        body = {**body, "name": f"control-{serial}"}
    response = world.api.as_key(world.victim.key).request(
        case.spec.method, _case_path(case, world), body
    )
    if response.status >= 400:
        return f"the unrestricted key was refused too ({response.status} {response.json})"
    return None


@pytest.fixture
def counting_agent(aws_env: None) -> Any:
    from tests.support.servers import Reply, serve

    with serve(lambda request: Reply(200, {"output": "counted"})) as server:
        yield server


def add_counted(world: World, agent_url: str) -> None:
    """An http agent on the counting server, and an eval of it over the victim's dataset whose
    scorers name the victim's tool, decider and AI provider (with one completed run)."""
    api, ids_ = world.api, world.victim.ids
    agent = _created(
        api.post(
            "/api/v1/agents",
            {
                "project_id": world.project,
                "name": "counted",
                "type": "http",
                "config": {"url": agent_url},
            },
        )
    )
    scorers = [{"type": "exact_match"}]
    for name, patch in EVAL_SAMPLES.items():
        if name.startswith("scorers"):
            scorers += patch(ids_)["scorers"]
    evaluation = _created(
        api.post(
            "/api/v1/evals",
            {
                "project_id": world.project,
                "name": "counted",
                "agent_id": agent["id"],
                "dataset_id": ids_["dataset_id"],
                "scorers": scorers,
            },
        )
    )
    run = _created(api.post(f"/api/v1/evals/{evaluation['id']}/runs", {"wait": True}))
    assert run["status"] in ("completed", "failed"), run
    renamed = {"name": "counted-2"}  # a version 2, for a release to name
    assert api.put(f"/api/v1/agents/{agent['id']}", renamed).status == 200
    ids_.update(
        counted_agent_id=agent["id"], counted_eval_id=evaluation["id"], counted_run_id=run["id"]
    )


def test_every_reference_field_refuses_a_key_denied_its_resource(
    api: Any, victim: Victim, counting_agent: Any
) -> None:
    world, _ = build_world(api, victim)
    add_counted(world, counting_agent.url)
    cases = reference_cases(world)
    for case in cases:  # every key first: the state compared below must not see them appear
        for principal in REFERENCE_PRINCIPALS:
            key_with(world, _statements(case, principal, world))
    before, calls_before = victim_state(api, victim), len(counting_agent.requests)
    failures, count = [], 0
    for case in cases:
        for principal in REFERENCE_PRINCIPALS:
            count += 1
            problem = run_reference_case(world, case, principal)
            if problem:
                failures.append(f"{case.spec.operation_id} {case.field} [{principal}]: {problem}")
    if victim_state(api, victim) != before:
        failures.append("a refused reference changed state")
    if len(counting_agent.requests) != calls_before:
        failures.append(f"refused references called the agent {len(counting_agent.requests)}x")
    for serial, case in enumerate(cases):
        if (case.spec.operation_id, case.field) in NO_CONTROL:
            continue
        problem = allowed_control(world, case, serial)
        if problem:
            failures.append(f"{case.spec.operation_id} {case.field} [victim's own key]: {problem}")
    routes = {c.spec.operation_id for c in cases}
    print(
        f"\nreference matrix: {count} cases ({len(cases)} references of {len(routes)} routes "
        f"x {len(REFERENCE_PRINCIPALS)} principals)"
    )
    assert failures == [], "\n".join(failures)
    assert {r for r in ("createEval", "updateEval", "startEvalRun", "createRun")} <= routes
