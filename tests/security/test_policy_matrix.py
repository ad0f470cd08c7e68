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
    ("DELETE", "/api/v1/agents/{agent_id}"),
    ("DELETE", "/api/v1/ai-providers/{provider_id}"),
    ("DELETE", "/api/v1/secrets/{secret_id}"),
    ("DELETE", "/api/v1/api-keys/{key_id}"),
]
#: What an allowed call needs besides the route's own action: deleting the victim's
#: formation deletes the dataset it declares, which its key must be allowed too.
ALSO_NEEDED = {("DELETE", "/api/v1/formations/{formation_id}"): "evaluations:DeleteDataset"}
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
