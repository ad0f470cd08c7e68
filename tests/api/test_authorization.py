"""Policies at work on the routes: the three keys docs/iam.md describes, and the edges.

(Every route x every kind of caller is tests/security/test_policy_matrix.py; these are the
scenarios a team would set up: a CI key on one eval, a dataset curator, a deny carved out
of a broad allow.)
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from chalicelib.iam.document import PolicyDocument
from chalicelib.store import policies, tenancy
from tests.support.runs import Plugins, Suite, make_suite

DATASET_ACTIONS = ["evaluations:GetDataset", "evaluations:ListDatasets"]


#: Policy names are unique; ``id()`` of a freed document can come back, a counter cannot.
_policy_numbers = itertools.count(1)


def key_with(api: Any, project_id: str, *statements: dict[str, Any]) -> Any:
    """An API client holding a project key whose one policy is ``statements``."""
    document = PolicyDocument.model_validate({"statement": list(statements)})
    policy = policies.create_policy(f"policy-{next(_policy_numbers)}", None, document)
    return api.as_key(tenancy.create_api_key(project_id, "k", [policy.id]).key)


def allow(actions: list[str], *resources: str) -> dict[str, Any]:
    return {"effect": "Allow", "action": actions, "resource": list(resources)}


@pytest.fixture
def two_suites(api: Any, project: dict[str, Any], plugins: Plugins) -> tuple[Suite, Suite]:
    first = make_suite(api, project, [("echo:a", "a")], name="first")
    second = make_suite(api, project, [("echo:b", "b")], name="second")
    return first, second


def srn_of(suite: Suite, kind: str) -> str:
    resource = {"eval": suite.eval, "dataset": suite.dataset, "agent": suite.agent}[kind]
    return f"srn:{suite.project['id']}:{kind}:{resource['id']}"


def run_uses(suite: Suite) -> list[dict[str, Any]]:
    """What starting a run of the suite's eval needs beyond RunEval: its dataset and agent."""
    return [
        allow(["evaluations:GetDataset"], srn_of(suite, "dataset")),
        allow(["agents:GetAgent", "agents:CreateAgentGeneration"], srn_of(suite, "agent")),
    ]


def test_a_ci_key_may_run_one_eval_and_nothing_else(
    api: Any, two_suites: tuple[Suite, Suite]
) -> None:
    mine, other = two_suites
    ci = key_with(
        api,
        mine.project["id"],
        allow(["evaluations:GetEval", "evaluations:RunEval"], srn_of(mine, "eval")),
        *run_uses(mine),
    )
    run = ci.post(mine.runs_path, {"wait": True})
    assert run.status == 201 and run.json["status"] == "completed", run
    assert ci.get(f"{mine.runs_path}/{run.json['id']}").status == 200  # runs: the eval's SRN
    assert ci.get(f"/api/v1/evals/{mine.eval['id']}").status == 200
    # Not the other eval: a read is 404 (as if missing), a run 403; no listing at all.
    assert ci.get(f"/api/v1/evals/{other.eval['id']}").code == "RESOURCE_NOT_FOUND"
    assert ci.post(other.runs_path, {"wait": True}).code == "FORBIDDEN"
    assert ci.get("/api/v1/evals").json["data"] == []
    assert ci.get(mine.runs_path).code == "RESOURCE_NOT_FOUND"  # listing runs: ListEvals
    assert ci.put(f"/api/v1/evals/{mine.eval['id']}", {"name": "x"}).code == "FORBIDDEN"
    assert ci.get(f"/api/v1/datasets/{other.dataset['id']}").status == 404


def test_a_read_only_analyst_lists_and_reads_but_writes_nothing(
    api: Any, two_suites: tuple[Suite, Suite]
) -> None:
    mine, _ = two_suites
    project = mine.project["id"]
    analyst = key_with(
        api,
        project,
        allow(["evaluations:GetEval", "evaluations:ListEvals"], "*"),
        allow(["evaluations:GetDataset", "evaluations:ListDatasets"], f"srn:{project}:*:*"),
    )
    assert len(analyst.get("/api/v1/evals").json["data"]) == 2
    assert len(analyst.get("/api/v1/datasets").json["data"]) == 2
    assert analyst.get(f"/api/v1/datasets/{mine.dataset['id']}/items").status == 200
    assert analyst.get(mine.runs_path).status == 200
    assert analyst.post(mine.runs_path, {}).code == "FORBIDDEN"
    assert analyst.delete(f"/api/v1/datasets/{mine.dataset['id']}").code == "FORBIDDEN"


def test_a_curator_of_one_dataset_needs_the_generation_too(
    api: Any, two_suites: tuple[Suite, Suite]
) -> None:
    mine, other = two_suites
    project = mine.project["id"]
    generation = api.post(
        f"/api/v1/agents/{mine.agent['id']}/generate",
        {"input": [{"role": "user", "content": "echo:curated"}]},
    ).json
    curate = f"/api/v1/datasets/{mine.dataset['id']}/items/from-generation"
    dataset_only = key_with(
        api,
        project,
        allow(["evaluations:CreateDataset", *DATASET_ACTIONS], srn_of(mine, "dataset")),
    )
    refused = dataset_only.post(curate, {"generation_id": generation["id"]})
    assert (refused.status, refused.code) == (404, "RESOURCE_NOT_FOUND"), refused
    assert refused.json["error"]["meta"] == {"resource_type": "generation", "id": generation["id"]}
    curator = key_with(
        api,
        project,
        allow(["evaluations:CreateDataset", *DATASET_ACTIONS], srn_of(mine, "dataset")),
        allow(["generations:GetGeneration"], f"srn:{project}:generation:{generation['id']}"),
    )
    assert curator.post(curate, {"generation_id": generation["id"]}).status == 201
    items = curator.get(f"/api/v1/datasets/{mine.dataset['id']}/items").json["data"]
    assert len(items) == 2
    other_items = f"/api/v1/datasets/{other.dataset['id']}/items"
    assert curator.post(other_items, {"input": [{"role": "user", "content": "x"}]}).status == 403
    assert curator.get("/api/v1/datasets").json["data"] == []  # one dataset grants no listing


def test_a_deny_overrides_a_broader_allow(api: Any, two_suites: tuple[Suite, Suite]) -> None:
    mine, other = two_suites
    project = mine.project["id"]
    key = key_with(
        api,
        project,
        allow(["evaluations:*"], f"srn:{project}:*:*"),
        {
            "effect": "Deny",
            "action": ["evaluations:DeleteEval"],
            "resource": [srn_of(mine, "eval")],
        },
    )
    assert key.delete(f"/api/v1/evals/{mine.eval['id']}").code == "FORBIDDEN"
    assert key.delete(f"/api/v1/evals/{other.eval['id']}").status == 204
    assert key.get(f"/api/v1/evals/{mine.eval['id']}").status == 200


def test_a_refusal_comes_before_the_body_is_read(
    api: Any, project: dict[str, Any], project_key: str
) -> None:
    reader = key_with(api, project["id"], allow(["evaluations:ListEvals"], "*"))
    for raw in (b"not json", b"[]", b'{"name": 5, "unknown": true}'):
        refused = reader.request("POST", "/api/v1/evals", raw=raw)
        assert (refused.status, refused.code) == (403, "FORBIDDEN"), refused
    # The same malformed bodies from a key that may create: the validation's 400.
    creator = api.as_key(project_key)
    assert creator.request("POST", "/api/v1/evals", raw=b"not json").status == 400


def test_a_key_naming_another_project_is_told_both(
    api: Any, project: dict[str, Any], project_key: str
) -> None:
    other = api.post("/api/v1/projects", {"name": "elsewhere"}).json["id"]
    scoped = api.as_key(project_key)
    for response in (
        scoped.post("/api/v1/datasets", {"project_id": other, "name": 5}),
        scoped.get(f"/api/v1/datasets?project_id={other}"),
    ):
        assert (response.status, response.code) == (403, "API_KEY_PROJECT_SCOPE"), response
        assert response.json["error"]["meta"] == {
            "project_id": other,
            "key_project_id": project["id"],
        }
        assert project["id"] in response.json["error"]["message"]


def test_binding_a_trigger_to_an_eval_needs_the_right_to_run_it(
    api: Any, two_suites: tuple[Suite, Suite]
) -> None:
    mine, _ = two_suites
    project = mine.project["id"]
    body = {
        "name": "nightly",
        "type": "manual",
        "target_type": "eval",
        "target_id": mine.eval["id"],
    }
    triggers_only = key_with(api, project, allow(["triggers:*"], f"srn:{project}:*:*"))
    assert triggers_only.post("/api/v1/triggers", body).code == "FORBIDDEN"
    runner = key_with(
        api,
        project,
        allow(["triggers:*"], f"srn:{project}:*:*"),
        allow(["evaluations:RunEval"], srn_of(mine, "eval")),
    )
    # It starts runs of the eval: what a run start needs, its binding needs (as if missing).
    refused = runner.post("/api/v1/triggers", body)
    assert refused.status == 400 and refused.json["error"]["meta"] == {"field": "agent_id"}
    runner = key_with(
        api,
        project,
        allow(["triggers:*"], f"srn:{project}:*:*"),
        allow(["evaluations:RunEval"], srn_of(mine, "eval")),
        *run_uses(mine),
    )
    assert runner.post("/api/v1/triggers", body).status == 201


def test_a_key_without_policies_keeps_its_whole_project(
    api: Any, two_suites: tuple[Suite, Suite]
) -> None:
    mine, _ = two_suites
    plain = api.as_key(tenancy.create_api_key(mine.project["id"], "plain").key)
    assert len(plain.get("/api/v1/evals").json["data"]) == 2
    assert plain.post(mine.runs_path, {"wait": True}).status == 201


def test_a_formation_deploys_only_what_its_key_may_create(
    api: Any, project: dict[str, Any]
) -> None:
    project_id = project["id"]
    template = {"resources": {"Cases": {"type": "dataset", "properties": {"name": "cases"}}}}
    body = {"project_id": project_id, "name": "stack", "template": template}
    formations_only = key_with(api, project_id, allow(["formations:*"], f"srn:{project_id}:*:*"))
    refused = formations_only.post("/api/v1/formations", body)
    assert (refused.status, refused.code) == (403, "FORBIDDEN"), refused
    assert "evaluations:CreateDataset" in refused.json["error"]["message"]
    assert api.get(f"/api/v1/formations?project_id={project_id}").json["data"] == []
    assert api.get(f"/api/v1/datasets?project_id={project_id}").json["data"] == []
    builder = key_with(
        api,
        project_id,
        allow(["formations:*", "evaluations:CreateDataset"], f"srn:{project_id}:*:*"),
    )
    created = builder.post("/api/v1/formations", body)
    assert created.status == 201 and created.json["status"] == "active", created
    # Deleting it deletes the dataset: that needs evaluations:DeleteDataset too.
    refused_delete = builder.delete(f"/api/v1/formations/{created.json['id']}")
    assert refused_delete.code == "FORMATION_DELETE_FAILED", refused_delete
    assert "evaluations:DeleteDataset" in json.dumps(refused_delete.json)
