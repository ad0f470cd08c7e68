"""SOAT's evaluations OpenAPI document, run against pawl as a contract.

Every operation of ``soat-evaluations.openapi.yaml`` is called, in an order that gives
each the resources it needs, with a body made of the document's own examples (ids
swapped for the real ones); the answer must have the document's success status and
validate against the document's response schema for it. pawl's additions (more fields,
``next_cursor``) pass: the document's schemas do not close their objects.

Where pawl deliberately answers otherwise, :data:`DIFFERENCES` names the operation, the
field and the schema keyword it breaks, with the reason (each recorded in
``docs/decisions.md``, "SOAT wire compatibility"). A difference listed here but no longer
seen fails the test too, so the list cannot outlive what it excuses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.support import soat_spec
from tests.support.servers import Reply, Request, serve

SPEC = soat_spec.load()
pytestmark = pytest.mark.skipif(
    SPEC is None, reason=f"SOAT's document is not at {soat_spec.SPEC_FILE} (PAWL_SOAT_SPEC)"
)

ANSWER = "Your invoice is issued on the first of each month."

#: (operationId, JSON path in the answer, schema keyword) -> why pawl answers otherwise.
#: Empty: what this test found (the run status ``cancelled``, SOAT's ``canceled``; the
#: list envelope; the path parameter's name) was fixed in pawl, not excused here.
DIFFERENCES: dict[tuple[str, str, str], str] = {}
#: Differences no schema can see (the schema allows both answers), checked one by one in
#: :func:`test_what_pawl_answers_otherwise_on_purpose`.
BEHAVIOUR_DIFFERENCES = {
    ("startEvalRun", "metadata"): (
        "a run started without metadata reads {} where the module page says null: a run's "
        "metadata is a dict on the plugin surface (pawl_validate_baseline hands runs to "
        "plugins, which read it with .get), and {} says what null would"
    ),
}


@dataclass
class World:
    """The ids the operations so far created, by the body field / path parameter naming them."""

    ids: dict[str, Any] = field(default_factory=dict)
    seen: dict[str, tuple[int, Any]] = field(default_factory=dict)
    differences: set[tuple[str, str, str]] = field(default_factory=set)


@dataclass(frozen=True)
class Step:
    operation_id: str
    #: Body fields whose example is replaced by a world id (field -> world key).
    swap: dict[str, str] = field(default_factory=dict)
    #: What to remember of the answer (world key -> answer field).
    keep: dict[str, str] = field(default_factory=dict)
    #: Work the step needs first that is not a SOAT operation (a generation, a run).
    before: Callable[[Any, World], None] | None = None


def _ok(response: Any, status: int = 201) -> Any:
    assert response.status == status, response
    return response.json


def _generation(api: Any, world: World) -> None:
    body = {"input": [{"role": "user", "content": "When is my invoice issued?"}]}
    generated = _ok(api.post(f"/api/v1/agents/{world.ids['agent_id']}/generate", body))
    world.ids["generation_id"] = generated["id"]


def _baseline(api: Any, world: World) -> None:
    runs = f"/api/v1/evals/{world.ids['eval_id']}/runs"
    world.ids["baseline_run_id"] = _ok(api.post(runs, {"wait": True}))["id"]


def _queued_run(api: Any, world: World) -> None:
    world.ids["eval_run_id"] = _ok(api.post(f"/api/v1/evals/{world.ids['eval_id']}/runs", {}))["id"]


IDS = {"project_id": "project_id", "agent_id": "agent_id", "dataset_id": "dataset_id"}
STEPS = [
    Step("createDataset", swap={"project_id": "project_id"}, keep={"dataset_id": "id"}),
    Step("getDataset"),
    Step("updateDataset"),
    Step("listDatasets"),
    Step("createDatasetItem", keep={"item_id": "id"}),
    Step("updateDatasetItem"),
    Step("listDatasetItems"),
    Step(
        "createDatasetItemFromGeneration",
        swap={"generation_id": "generation_id"},
        before=_generation,
    ),
    Step("createEval", swap=IDS, keep={"eval_id": "id"}),
    Step("getEval"),
    Step("updateEval", swap=IDS),
    Step("listEvals"),
    Step(
        "startEvalRun",
        swap={"baseline_run_id": "baseline_run_id", "agent_version": "agent_version"},
        keep={"eval_run_id": "id"},
        before=_baseline,
    ),
    Step("getEvalRun"),
    Step("listEvalRuns"),
    Step("listEvalResults"),
    Step("cancelEvalRun", before=_queued_run),
    Step("deleteDatasetItem"),
    Step("deleteEval"),
    Step("deleteDataset"),
]


@pytest.fixture
def agent_url() -> Iterator[str]:
    """The agent under test: a real HTTP server that answers every item correctly."""

    def answer(request: Request) -> Reply:
        return Reply(200, {"output": ANSWER})

    with serve(answer) as server:
        yield f"{server.url}/agent"


def _request(op: soat_spec.Operation, step: Step, world: World) -> tuple[str, Any]:
    assert SPEC is not None
    path = op.path
    query = []
    for param in op.parameters:
        if param["in"] == "path":
            path = path.replace("{" + param["name"] + "}", world.ids[param["name"]])
        elif param["name"] == "project_id":
            query.append(f"project_id={world.ids['project_id']}")
        else:  # limit, offset: the document's defaults, given explicitly
            query.append(f"{param['name']}={param['schema']['default']}")
    url = path + ("?" + "&".join(query) if query else "")
    if op.request_schema is None:
        return url, None
    body = SPEC.example(op.request_schema)
    for name, key in step.swap.items():
        if name in body:
            body[name] = world.ids[key]
    return url, body


def _call(api: Any, step: Step, world: World) -> None:
    assert SPEC is not None
    [op] = [o for o in SPEC.operations() if o.operation_id == step.operation_id]
    if step.before is not None:
        step.before(api, world)
    url, body = _request(op, step, world)
    response = api.request(op.method, url, body)
    assert response.status == op.status, (op.operation_id, body, response)
    world.seen[op.operation_id] = (response.status, response.json)
    if op.response_pointer is None:
        assert response.raw == b"", (op.operation_id, response)
    else:
        for where, keyword, message in SPEC.response_errors(op, response.json):
            key = (op.operation_id, where, keyword)
            assert key in DIFFERENCES, (key, message, response.json)
            world.differences.add(key)
    for key, answer_field in step.keep.items():
        world.ids[key] = response.json[answer_field]


def test_every_soat_operation_answers_as_the_document_says(api: Any, agent_url: str) -> None:
    assert SPEC is not None
    world = World()
    world.ids["project_id"] = _ok(api.post("/api/v1/projects", {"name": "acme"}))["id"]
    agent = {"project_id": world.ids["project_id"], "name": "billing", "type": "http"}
    created = _ok(api.post("/api/v1/agents", {**agent, "config": {"url": agent_url}}))
    world.ids["agent_id"], world.ids["agent_version"] = created["id"], created["version"]

    for step in STEPS:
        _call(api, step, world)

    documented = {op.operation_id for op in SPEC.operations()}
    assert set(world.seen) == documented and len(STEPS) == len(documented)
    print(f"SOAT contract: {len(documented)} operations called, answers validated")
    assert world.differences == set(DIFFERENCES), "a listed difference no longer occurs"
    # The examples went through: a scored, compared run, the spec's metadata round-tripped.
    run = world.seen["startEvalRun"][1]
    assert run["status"] == "completed" and run["passed"] is True
    assert run["baseline_run_id"] == world.ids["baseline_run_id"]
    assert run["metadata"] == {"commit_sha": "9f2c1ab", "ci_job": "nightly-evals"}
    listed = world.seen["listEvalResults"][1]
    assert (listed["total"], listed["limit"], listed["offset"]) == (2, 50, 0)


def test_every_soat_path_and_parameter_has_soats_name_in_pawls_document() -> None:
    assert SPEC is not None
    from chalicelib.wiring import openapi_document

    pawl = openapi_document()["paths"]
    for op in SPEC.operations():
        assert op.path in pawl, op.path  # the path parameters are named as SOAT names them
        mine = {p["name"] for p in pawl[op.path][op.method.lower()].get("parameters", ())}
        assert {p["name"] for p in op.parameters} <= mine, op.operation_id


#: Refusals the document declares, provoked on purpose: (operationId, how, the status).
def _refusals(world: World) -> list[tuple[str, str, str, Any, int]]:
    run_path = f"/api/v1/evals/{world.ids['eval_id']}/runs"
    finished = world.ids["baseline_run_id"]
    project = world.ids["project_id"]
    return [
        ("createDataset", "POST", "/api/v1/datasets", {"project_id": project, "name": "d"}, 409),
        ("getDataset", "GET", "/api/v1/datasets/dset_V1StGXR8Z5jdHi6B", None, 404),
        ("createDatasetItem", "POST", f"/api/v1/datasets/{world.ids['dataset_id']}/items",
         {"input": "not messages"}, 400),
        ("getEvalRun", "GET", f"{run_path}/evrun_V1StGXR8Z5jdHi6B", None, 404),
        ("startEvalRun", "POST", run_path, {"wait": "yes"}, 400),
        ("cancelEvalRun", "POST", f"{run_path}/{finished}/cancel", None, 400),
    ]  # fmt: skip


def _refusal_world(api: Any, agent_url: str) -> World:
    """A project, an agent, a dataset of one item, an eval and one completed run of it."""
    world = World()
    world.ids["project_id"] = _ok(api.post("/api/v1/projects", {"name": "acme"}))["id"]
    agent = {"project_id": world.ids["project_id"], "name": "billing", "type": "http"}
    world.ids["agent_id"] = _ok(
        api.post("/api/v1/agents", {**agent, "config": {"url": agent_url}})
    )["id"]
    dataset = {"project_id": world.ids["project_id"], "name": "d"}
    world.ids["dataset_id"] = _ok(api.post("/api/v1/datasets", dataset))["id"]
    item = {"input": [{"role": "user", "content": "When is my invoice issued?"}]}
    _ok(api.post(f"/api/v1/datasets/{world.ids['dataset_id']}/items", item))
    body = {
        **dataset,
        "name": "e",
        "agent_id": world.ids["agent_id"],
        "scorers": [{"type": "exact_match"}],
    }
    body["dataset_id"] = world.ids["dataset_id"]
    world.ids["eval_id"] = _ok(api.post("/api/v1/evals", body))["id"]
    _baseline(api, world)
    return world


def test_soats_refusals_answer_the_documented_status(api: Any, agent_url: str) -> None:
    assert SPEC is not None
    world = _refusal_world(api, agent_url)
    declared = {op.operation_id: op for op in SPEC.operations()}
    for operation_id, method, path, request_body, status in _refusals(world):
        op = declared[operation_id]
        documented = SPEC.document["paths"][op.path][op.method.lower()]["responses"]
        assert str(status) in documented, (operation_id, status)
        response = api.request(method, path, request_body)
        assert response.status == status, (operation_id, response)
        assert response.code is not None, response  # the error envelope, saying what


def test_what_pawl_answers_otherwise_on_purpose(api: Any, agent_url: str) -> None:
    """Each entry of :data:`BEHAVIOUR_DIFFERENCES`, as pawl answers it today."""
    world = _refusal_world(api, agent_url)
    run = api.get(f"/api/v1/evals/{world.ids['eval_id']}/runs/{world.ids['baseline_run_id']}")
    assert ("startEvalRun", "metadata") in BEHAVIOUR_DIFFERENCES
    assert run.json["metadata"] == {}  # SOAT: null
    assert len(BEHAVIOUR_DIFFERENCES) == 1  # a new entry gets its own check here


#: SOAT's generations and agents documents: pawl serves ``listGenerations`` of the one and
#: ``deleteAgent`` of the other (its 204, and its 409 ``AGENT_HAS_DEPENDENTS``).
GENERATIONS_SPEC = soat_spec.load_document("soat/generations.openapi.yaml")
AGENTS_SPEC = soat_spec.load_document("soat/agents.openapi.yaml")


def _operation(spec: soat_spec.Spec, operation_id: str) -> soat_spec.Operation:
    [op] = [o for o in spec.operations() if o.operation_id == operation_id]
    return op


@pytest.mark.skipif(
    GENERATIONS_SPEC is None or AGENTS_SPEC is None, reason="SOAT's module documents are absent"
)
def test_list_generations_and_delete_agent_answer_as_their_documents_say(
    api: Any, agent_url: str
) -> None:
    assert GENERATIONS_SPEC is not None and AGENTS_SPEC is not None
    world = _refusal_world(api, agent_url)  # a completed run: one eval generation
    _generation(api, world)  # and one outside any eval
    listing = _operation(GENERATIONS_SPEC, "listGenerations")
    query = "&".join(
        f"{p['name']}={p['schema']['default']}"
        for p in listing.parameters
        if "default" in p["schema"]
    )
    query += f"&project_id={world.ids['project_id']}"  # the admin key names the project
    for extra in ("", f"&agent_id={world.ids['agent_id']}", "&status=completed"):
        answer = api.get(f"{listing.path}?{query}{extra}")
        assert answer.status == listing.status, answer
        assert GENERATIONS_SPEC.response_errors(listing, answer.json) == [], answer.json
        assert answer.json["total"] == 2 and len(answer.json["data"]) == 2

    delete = _operation(AGENTS_SPEC, "deleteAgent")
    agent_path = delete.path.replace("{agent_id}", world.ids["agent_id"])
    api.delete(f"/api/v1/evals/{world.ids['eval_id']}")  # no eval binds it any more
    refused = api.delete(agent_path)
    assert refused.status == 409 and refused.code == "AGENT_HAS_DEPENDENTS", refused
    error_schema = "#/components/schemas/ErrorResponse"
    assert AGENTS_SPEC.schema_errors(error_schema, refused.json) == []
    meta = refused.json["error"]["meta"]
    assert (meta["generationCount"], meta["traceCount"]) == (2, 0)
    deleted = api.delete(f"{agent_path}?force=true")
    assert deleted.status == delete.status and deleted.raw == b"", deleted
    gone = api.get(f"{listing.path}?{query}&agent_id={world.ids['agent_id']}")
    assert gone.json["data"] == [] and gone.json["total"] == 0


def test_soats_generation_and_agent_parameters_have_soats_names_in_pawls_document() -> None:
    from chalicelib.wiring import openapi_document

    pawl = openapi_document()["paths"]
    for spec, operation_id in ((GENERATIONS_SPEC, "listGenerations"), (AGENTS_SPEC, "deleteAgent")):
        if spec is None:
            continue
        op = _operation(spec, operation_id)
        mine = pawl[op.path][op.method.lower()]
        assert mine["operationId"] == operation_id
        names = {p["name"] for p in mine.get("parameters", ())}
        assert {p["name"] for p in op.parameters} <= names, operation_id


#: The agents operations pawl serves, validated below (the rest of the agents document —
#: generations with tool outputs, sessions — is not pawl's: docs/not-built.md).
AGENT_OPERATIONS = (
    "getAgent",
    "updateAgent",
    "patchAgent",
    "listAgentVersions",
    "getAgentVersion",
    "restoreAgentVersion",
    "setAgentRelease",
    "promoteAgentRelease",
    "abortAgentRelease",
)
#: (JSON path, schema keyword) -> why pawl's answer breaks the agents document there.
AGENT_DIFFERENCES = {
    ("active_release", "type"): (
        "null with no rollout, as the module page says; the document puts `nullable` beside "
        "an `allOf` with no `type` of its own, which OAS 3.0.3 reads as not admitting null"
    ),
}


@pytest.mark.skipif(AGENTS_SPEC is None, reason=f"no {soat_spec.AGENTS_SPEC_FILE}")
def test_the_agents_operations_pawl_serves_answer_as_the_agents_document_says(
    api: Any, agent_url: str
) -> None:
    """Versions, restore and the staged rollout, with the document's release example (its
    versions and gate swapped for real ones); every answer validates against its schema."""
    assert AGENTS_SPEC is not None
    world = _refusal_world(api, agent_url)
    agent = f"/api/v1/agents/{world.ids['agent_id']}"
    ops = {op.operation_id: op for op in AGENTS_SPEC.operations()}
    [release_schema] = [ops["setAgentRelease"].request_schema]
    example = AGENTS_SPEC.example(release_schema or {})
    example.update(stable_version=1, canary_version=2, promotion_gate=world.ids["eval_id"])
    canary_config = {"config": {"url": agent_url + "?v=2"}, "version_label": "pre-tone-change"}
    calls = [
        ("getAgent", "GET", agent, None),
        ("updateAgent", "PUT", agent, canary_config),
        ("patchAgent", "PATCH", agent, {"name": "billing-2"}),
        ("listAgentVersions", "GET", f"{agent}/versions?limit=50&offset=0", None),
        ("getAgentVersion", "GET", f"{agent}/versions/2", None),
        ("restoreAgentVersion", "POST", f"{agent}/versions/2/restore", {"label": "rollback"}),
        ("setAgentRelease", "PUT", f"{agent}/release", example),
        ("abortAgentRelease", "POST", f"{agent}/release/abort", None),
        ("setAgentRelease", "PUT", f"{agent}/release", {**example, "promotion_gate": None}),
        ("promoteAgentRelease", "POST", f"{agent}/release/promote", None),
    ]
    answers: dict[str, Any] = {}
    seen: set[tuple[str, str]] = set()
    for operation_id, method, path, body in calls:
        op = ops[operation_id]
        response = api.request(method, path, body)
        assert response.status == op.status, (operation_id, response)
        for where, keyword, message in AGENTS_SPEC.response_errors(op, response.json):
            assert (where, keyword) in AGENT_DIFFERENCES, (operation_id, where, message)
            assert response.json["active_release"] is None
            seen.add((where, keyword))
        answers[operation_id] = response.json
    assert seen == set(AGENT_DIFFERENCES), "a listed difference no longer occurs"
    assert set(answers) == set(AGENT_OPERATIONS)
    assert answers["getAgentVersion"]["label"] == "pre-tone-change"
    assert answers["promoteAgentRelease"]["active_release"] is None
    # The document's refusals: no active release, a gate without evidence.
    assert api.post(f"{agent}/release/abort").code == "NO_ACTIVE_RELEASE"
    assert api.put(f"{agent}/release", example).status == 200
    assert api.post(f"{agent}/release/promote").code == "PROMOTION_GATE_UNMET"
