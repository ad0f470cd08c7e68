"""Formations: the example suite applied, updated with a plan, a failed update rolled back,
deleted with and without a retained agent; refusals that write nothing; tenancy."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

FORMATIONS = "/api/v1/formations"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "support-suite.yaml"


def _template() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    return loaded


def _create(api: Any, project: dict[str, Any], template: dict[str, Any], **extra: Any) -> Any:
    body = {"project_id": project["id"], "name": "support-suite", "template": template, **extra}
    return api.post(FORMATIONS, body)


def _plan(api: Any, project: dict[str, Any], template: dict[str, Any], **extra: Any) -> Any:
    body = {"project_id": project["id"], "name": "support-suite", "template": template, **extra}
    response = api.post(f"{FORMATIONS}/plan", body)
    assert response.status == 200, response
    return {c["logical_id"]: c for c in response.json["changes"]}


def _physical(formation: dict[str, Any], logical_id: str) -> str:
    found = [r for r in formation["resources"] if r["logical_id"] == logical_id]
    return str(found[0]["physical_resource_id"])


def _names(api: Any, path: str, project: dict[str, Any]) -> list[str]:
    return [r["name"] for r in api.get(f"{path}?project_id={project['id']}").json["data"]]


def _items(api: Any, dataset_id: str) -> list[str]:
    data = api.get(f"/api/v1/datasets/{dataset_id}/items").json["data"]
    return sorted(i["input"][0]["content"] for i in data)


def test_example_suite_create_update_rollback(api: Any, project: dict[str, Any]) -> None:
    template = _template()
    before = _plan(api, project, template)
    assert {c["action"] for c in before.values()} == {"create"}
    assert before["SupportCases"]["diff"]["desired"]["description"] == "Support questions, suite v1"

    created = _create(api, project, template)
    assert created.status == 201, created
    formation = created.json
    assert formation["status"] == "active" and formation["error"] is None
    eval_id, agent_id = formation["outputs"]["eval_id"], formation["outputs"]["agent_id"]
    dataset_id = _physical(formation, "SupportCases")
    assert formation["resolved_metadata"] == {"suite": "support v1", "dataset": dataset_id}
    assert formation["template"] == template  # stored verbatim, expressions kept
    evaluation = api.get(f"/api/v1/evals/{eval_id}").json
    assert evaluation["agent_id"] == agent_id and evaluation["dataset_id"] == dataset_id
    assert len(_items(api, dataset_id)) == 4
    assert {c["action"] for c in _plan(api, project, template).values()} == {"unchanged"}

    # An item curated through the API is never collateral of an apply.
    curated = {"input": [{"role": "user", "content": "curated by hand"}]}
    assert api.post(f"/api/v1/datasets/{dataset_id}/items", curated).status == 201

    update = copy.deepcopy(template)
    update["resources"]["SupportEval"]["properties"]["pass_threshold"] = 0.9
    del update["resources"]["Outage"]
    params = {"agent_callable": "pawl.demo.agent:answer_v2"}
    diff = _plan(api, project, update, parameters=params)
    assert diff["SupportEval"]["action"] == "update"
    assert diff["SupportEval"]["changed"] == ["pass_threshold"]
    assert diff["SupportEval"]["diff"]["current"]["pass_threshold"] == 0.8
    assert diff["SupportAgent"]["changed"] == ["config"]
    assert diff["Outage"]["action"] == "delete" and diff["SupportCases"]["action"] == "unchanged"

    path = f"{FORMATIONS}/{formation['id']}"
    updated = api.put(path, {"template": update, "parameters": params})
    assert updated.status == 200 and updated.json["status"] == "active", updated
    assert api.get(f"/api/v1/evals/{eval_id}").json["pass_threshold"] == 0.9
    agent = api.get(f"/api/v1/agents/{agent_id}").json
    assert agent["config"]["callable"].endswith("answer_v2") and agent["version"] == 2
    assert "Is Acme down right now?" not in _items(api, dataset_id)
    assert "curated by hand" in _items(api, dataset_id)

    # A failed update: a new item is created, then moving an item to another dataset is
    # refused; the new item is walked back and the answer is still 2xx, status failed.
    other = api.post("/api/v1/datasets", {"project_id": project["id"], "name": "other"}).json
    broken = copy.deepcopy(update)
    broken["resources"]["Extra"] = {
        "type": "dataset_item",
        "properties": {"dataset_id": {"ref": "SupportCases"}, "input": curated["input"]},
    }
    broken["resources"]["BillingInvoice"]["properties"]["dataset_id"] = other["id"]
    broken["resources"]["BillingInvoice"]["depends_on"] = ["Extra"]
    failed = api.put(path, {"template": broken, "parameters": params})
    assert failed.status == 200 and failed.json["status"] == "failed", failed
    error = failed.json["error"]
    assert error["code"] == "VALIDATION_FAILED" and "dataset_id is immutable" in error["message"]
    assert error["meta"]["logical_id"] == "BillingInvoice"
    assert _items(api, dataset_id).count("curated by hand") == 1  # Extra rolled back
    assert _items(api, other["id"]) == []
    assert api.get(path).json["status"] == "failed"
    events = api.get(f"{path}/events").json["data"]
    assert [e["operation_type"] for e in events] == ["create", "update", "update"]
    actions = [(e["logical_id"], e["action"], e["status"]) for e in events[-1]["events"]]
    assert ("Extra", "create", "succeeded") in actions
    assert actions[-2:] == [
        ("BillingInvoice", "update", "failed"),
        ("Extra", "rollback", "succeeded"),
    ]

    # The corrected template deploys again and clears the error.
    again = api.put(path, {"template": update, "parameters": params})
    assert again.json["status"] == "active" and again.json["error"] is None


def _run_suite(api: Any, eval_id: str) -> None:
    run = api.post(f"/api/v1/evals/{eval_id}/runs", {"wait": True})
    assert run.status == 201 and run.json["status"] == "completed", run


def _generations_of(api: Any, project: dict[str, Any], agent_id: str) -> list[dict[str, Any]]:
    query = f"project_id={project['id']}&agent_id={agent_id}"
    listed = api.get(f"/api/v1/generations?{query}")
    assert listed.status == 200, listed
    return list(listed.json["data"])


@pytest.mark.parametrize("retain", [True, False])
def test_delete_with_run_history(api: Any, project: dict[str, Any], retain: bool) -> None:
    """A formation whose agent has runs tears down either way: retained, the agent stays
    with its generations and runs; declared ``delete``, it goes with its generations."""
    template = _template()
    if not retain:
        del template["resources"]["SupportAgent"]["deletion_policy"]
    formation = _create(api, project, template).json
    agent_id, eval_id = formation["outputs"]["agent_id"], formation["outputs"]["eval_id"]
    _run_suite(api, eval_id)
    generations = _generations_of(api, project, agent_id)
    assert len(generations) == 4 and {g["source"] for g in generations} == {"eval"}
    path = f"{FORMATIONS}/{formation['id']}"
    assert api.delete(path).status == 204
    assert api.get(path).status == 404
    assert api.get(f"/api/v1/agents/{agent_id}").status == (200 if retain else 404)
    assert len(_generations_of(api, project, agent_id)) == (4 if retain else 0)
    assert api.get(f"/api/v1/generations/{generations[0]['id']}").status == (200 if retain else 404)
    assert _names(api, "/api/v1/datasets", project) == []
    assert _names(api, "/api/v1/evals", project) == []
    if retain:  # the agent it left standing: SOAT's 409, whose advice works
        refused = api.delete(f"/api/v1/agents/{agent_id}")
        assert refused.status == 409 and refused.code == "AGENT_HAS_DEPENDENTS", refused
        assert refused.json["error"]["meta"]["generationCount"] == 4
        assert api.delete(f"/api/v1/agents/{agent_id}?force=true").status == 204


def test_an_agent_another_eval_uses_blocks_teardown_until_the_advice_is_followed(
    api: Any, project: dict[str, Any]
) -> None:
    template = _template()
    del template["resources"]["SupportAgent"]["deletion_policy"]
    formation = _create(api, project, template).json
    agent_id, eval_id = formation["outputs"]["agent_id"], formation["outputs"]["eval_id"]
    _run_suite(api, eval_id)
    dataset_id = _physical(formation, "SupportCases")
    outside = api.post(
        "/api/v1/evals",
        {
            "project_id": project["id"],
            "name": "hand-made",
            "agent_id": agent_id,
            "dataset_id": api.post(
                "/api/v1/datasets", {"project_id": project["id"], "name": "other"}
            ).json["id"],
            "scorers": [{"type": "exact_match"}],
        },
    ).json
    path = f"{FORMATIONS}/{formation['id']}"
    refused = api.delete(path)
    assert refused.status == 409 and refused.code == "FORMATION_DELETE_FAILED", refused
    [failure] = refused.json["error"]["meta"]["failures"]
    assert (failure["logical_id"], failure["resource_type"]) == ("SupportAgent", "agent")
    assert outside["id"] in failure["error"] and eval_id not in failure["error"]
    assert "delete them or bind them to another agent" in failure["error"]
    # Pre-flight: nothing was deleted, the stack is intact.
    assert api.get(path).json["status"] == "active"
    assert api.get(f"/api/v1/evals/{eval_id}").status == 200
    assert api.get(f"/api/v1/datasets/{dataset_id}").status == 200
    # The advice: delete the eval outside the formation; then the teardown succeeds.
    assert api.delete(f"/api/v1/evals/{outside['id']}").status == 204
    assert api.delete(path).status == 204
    assert api.get(f"/api/v1/agents/{agent_id}").status == 404


def test_a_retained_eval_keeps_its_agent_when_the_agent_is_declared_retained(
    api: Any, project: dict[str, Any]
) -> None:
    template = _template()
    del template["resources"]["SupportAgent"]["deletion_policy"]
    template["resources"]["SupportEval"]["deletion_policy"] = "retain"
    template["resources"]["SupportCases"]["deletion_policy"] = "retain"  # else it takes the eval
    formation = _create(api, project, template).json
    agent_id, eval_id = formation["outputs"]["agent_id"], formation["outputs"]["eval_id"]
    path = f"{FORMATIONS}/{formation['id']}"
    refused = api.delete(path)
    assert refused.status == 409 and refused.code == "FORMATION_DELETE_FAILED", refused
    [failure] = refused.json["error"]["meta"]["failures"]
    assert eval_id in failure["error"] and "deletion_policy: retain" in failure["error"]
    # The advice: declare the agent retained too (an update), then delete again.
    template["resources"]["SupportAgent"]["deletion_policy"] = "retain"
    assert api.put(path, {"template": template}).json["status"] == "active"
    assert api.delete(path).status == 204
    assert api.get(f"/api/v1/evals/{eval_id}").status == 200
    assert api.get(f"/api/v1/agents/{agent_id}").status == 200


def test_refusals_write_nothing(api: Any, project: dict[str, Any]) -> None:
    template = _template()
    cases: list[tuple[dict[str, Any], dict[str, Any], str]] = []
    unknown = copy.deepcopy(template)
    unknown["resources"]["SupportCases"]["properties"]["colour"] = "red"
    cases.append((unknown, {}, "template.resources.SupportCases.properties.colour"))
    camel = copy.deepcopy(template)
    camel["resources"]["SupportEval"]["properties"]["passThreshold"] = 0.5
    cases.append((camel, {}, "template.resources.SupportEval.properties.passThreshold"))
    bad_ref = copy.deepcopy(template)
    bad_ref["resources"]["SupportEval"]["properties"]["agent_id"] = {"ref": "Nobody"}
    cases.append((bad_ref, {}, "template.resources.SupportEval.properties.agent_id"))
    cycle = copy.deepcopy(template)
    cycle["resources"]["SupportCases"]["depends_on"] = ["SupportEval"]
    cases.append((cycle, {}, "template.resources"))
    kind = copy.deepcopy(template)
    kind["resources"]["SupportCases"]["type"] = "memory"
    cases.append((kind, {}, "template.resources.SupportCases.type"))
    required = copy.deepcopy(template)
    del required["parameters"]["suite_version"]["default"]
    cases.append((required, {}, "parameters.suite_version"))
    cases.append((template, {"parameters": {"nope": "x"}}, "parameters.nope"))
    cases.append((template, {"metadata": {"a": {"ref": "SupportAgent"}}}, "metadata"))
    huge = copy.deepcopy(template)
    huge["resources"]["SupportCases"]["properties"]["description"] = "x" * 9_000
    huge["resources"].update(
        {f"Copy{i}": copy.deepcopy(huge["resources"]["Outage"]) for i in range(8)}
    )
    huge["metadata"]["notes"] = "y" * 60_000
    cases.append((huge, {}, "template"))
    for body, extra, field in cases:
        response = _create(api, project, body, **extra)
        assert response.status == 400, (field, response)
        assert response.json["error"]["meta"]["field"] == field, (field, response.json)
    cyclic = _create(api, project, cycle).json["error"]
    assert "cycle" in cyclic["message"] and cyclic["meta"]["cycle"] == [
        "SupportCases",
        "SupportEval",
    ]
    assert _create(api, project, template, metadata={"a": {"ref": "X"}}).code == (
        "FORMATION_INVALID_METADATA"
    )
    for path in ("/api/v1/agents", "/api/v1/datasets", "/api/v1/evals", FORMATIONS):
        assert _names(api, path, project) == [], path


def test_foreign_keys_and_projects_are_refused(api: Any, project: dict[str, Any]) -> None:
    other = api.post("/api/v1/projects", {"name": "other"}).json
    foreign = api.post("/api/v1/datasets", {"project_id": other["id"], "name": "theirs"}).json
    template = _template()
    template["resources"]["BillingInvoice"]["properties"]["dataset_id"] = foreign["id"]
    refused = _create(api, project, template)
    assert refused.status == 400, refused
    assert refused.json["error"]["meta"]["field"].endswith("BillingInvoice.properties.dataset_id")
    assert _names(api, "/api/v1/agents", project) == [] and _items(api, foreign["id"]) == []

    key = api.post("/api/v1/api-keys", {"project_id": project["id"], "name": "ci"}).json["key"]
    scoped = api.as_key(key)
    mine = _create(api, project, _template()).json
    other_key = api.post("/api/v1/api-keys", {"project_id": other["id"], "name": "x"}).json["key"]
    stranger = api.as_key(other_key)
    assert stranger.get(f"{FORMATIONS}/{mine['id']}").status == 404
    assert stranger.delete(f"{FORMATIONS}/{mine['id']}").status == 404
    assert stranger.put(f"{FORMATIONS}/{mine['id']}", {"template": _template()}).status == 404
    plan = {"formation_id": mine["id"], "template": _template()}
    assert stranger.post(f"{FORMATIONS}/plan", plan).status == 404
    into_mine = {"project_id": project["id"], "name": "x", "template": _template()}
    assert stranger.post(FORMATIONS, into_mine).code == "API_KEY_PROJECT_SCOPE"
    assert scoped.get(f"{FORMATIONS}?name=support-suite").json["data"][0]["id"] == mine["id"]
    assert stranger.get(f"{FORMATIONS}?name=support-suite").json["data"] == []
    assert api.post(FORMATIONS, {"name": "x", "template": {}, "extra": 1}).status == 400


def test_an_agent_with_runs_removed_from_the_template_goes_with_its_generations(
    api: Any, project: dict[str, Any]
) -> None:
    template = _template()
    del template["resources"]["SupportAgent"]["deletion_policy"]
    formation = _create(api, project, template).json
    agent_id, eval_id = formation["outputs"]["agent_id"], formation["outputs"]["eval_id"]
    _run_suite(api, eval_id)
    smaller = copy.deepcopy(template)
    del smaller["resources"]["SupportAgent"], smaller["resources"]["SupportEval"]
    smaller["outputs"] = {}
    updated = api.put(f"{FORMATIONS}/{formation['id']}", {"template": smaller})
    assert updated.status == 200 and updated.json["status"] == "active", updated
    assert api.get(f"/api/v1/agents/{agent_id}").status == 404
    assert _generations_of(api, project, agent_id) == []
