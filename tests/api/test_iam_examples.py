"""The three worked examples of docs/iam.md hold: each policy, as the page prints it, allows
and refuses exactly what the page says."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.runs import Plugins, Suite, make_item, make_suite

DOC = Path(__file__).resolve().parents[2] / "docs" / "iam.md"


def documented_policy(name: str) -> str:
    """The JSON block under ``<!-- iam-example: name -->`` in docs/iam.md."""
    found = re.search(
        rf"<!-- iam-example: {name} -->\n```json\n(.*?)\n```", DOC.read_text(), re.DOTALL
    )
    assert found, f"docs/iam.md has no example {name!r}"
    return found.group(1)


@pytest.fixture
def world(api: Any, project: dict[str, Any], plugins: Plugins) -> dict[str, Any]:
    nightly = make_suite(api, project, [("echo:a", "a"), ("echo:b", "b")], name="nightly")
    other = make_suite(api, project, [("echo:c", "c")], name="other")
    golden = api.post("/api/v1/datasets", {"project_id": project["id"], "name": "golden"}).json
    make_item(api, golden["id"], "echo:golden", "golden")
    generation = api.post(
        f"/api/v1/agents/{nightly.agent['id']}/generate",
        {"input": [{"role": "user", "content": "echo:curate me"}]},
    ).json
    run = api.post(nightly.runs_path, {"wait": True}).json
    tool = api.post(
        "/api/v1/tools",
        {
            "name": "t",
            "project_id": project["id"],
            "type": "http",
            "config": {"url": "http://127.0.0.1:9/t"},
        },
    ).json
    elsewhere = api.post("/api/v1/projects", {"name": "elsewhere"}).json
    return {
        "project": project,
        "nightly": nightly,
        "other": other,
        "golden": golden,
        "generation": generation,
        "run": run,
        "tool": tool,
        "elsewhere": elsewhere,
    }


def key_for(api: Any, world: dict[str, Any], example: str) -> Any:
    """Create the example's policy (its ids replaced by the world's) and a key carrying it."""
    text = (
        documented_policy(example)
        .replace("proj_ACME", world["project"]["id"])
        .replace("eval_NIGHTLY", world["nightly"].eval["id"])
        .replace("dset_GOLDEN", world["golden"]["id"])
        .replace("dset_FAQ", world["nightly"].dataset["id"])
        .replace("agt_SUPPORT", world["nightly"].agent["id"])
    )
    policy = api.post("/api/v1/policies", {"name": example, "document": json.loads(text)})
    assert policy.status == 201, policy
    key = api.post(
        "/api/v1/api-keys",
        {"project_id": world["project"]["id"], "name": example, "policy_ids": [policy.json["id"]]},
    )
    assert key.status == 201 and key.json["policy_ids"] == [policy.json["id"]]
    return api.as_key(key.json["key"])


def status(response: Any, expected: int, code: str | None = None) -> None:
    assert response.status == expected, response
    if code is not None:
        assert response.code == code, response


def test_the_ci_key_may_only_run_its_eval(api: Any, world: dict[str, Any]) -> None:
    ci = key_for(api, world, "ci")
    nightly: Suite = world["nightly"]
    other: Suite = world["other"]
    project = world["project"]["id"]
    # Allowed: run it, read it, its runs and results, cancel a run of it.
    started = ci.post(nightly.runs_path, {"wait": True})
    status(started, 201)
    status(ci.get(f"/api/v1/evals/{nightly.eval['id']}"), 200)
    runs = ci.get(nightly.runs_path)
    assert runs.status == 200 and len(runs.json["data"]) == 2
    status(ci.get(f"{nightly.run_path(started.json['id'])}/results"), 200)
    queued = ci.post(nightly.runs_path, {})
    status(ci.post(f"{nightly.run_path(queued.json['id'])}/cancel", {}), 200)
    # Refused.
    status(ci.post(other.runs_path, {"wait": True}), 403, "FORBIDDEN")
    status(ci.get(f"/api/v1/evals/{other.eval['id']}"), 404, "RESOURCE_NOT_FOUND")
    status(ci.get(f"/api/v1/datasets/{nightly.dataset['id']}"), 200)
    status(ci.get(f"/api/v1/datasets/{other.dataset['id']}"), 404)
    status(ci.get(f"/api/v1/agents/{other.agent['id']}"), 404)
    status(ci.put(f"/api/v1/evals/{nightly.eval['id']}", {"name": "x"}), 403, "FORBIDDEN")
    status(ci.put(f"/api/v1/evals/{nightly.eval['id']}", {"bogus": 1}), 403, "FORBIDDEN")
    status(ci.post(f"/api/v1/datasets/{nightly.dataset['id']}/items", {}), 403, "FORBIDDEN")
    listed = ci.get(f"/api/v1/evals?project_id={project}")
    assert listed.status == 200 and listed.json["data"] == []
    elsewhere = world["elsewhere"]["id"]
    status(ci.get(f"/api/v1/evals?project_id={elsewhere}"), 403, "API_KEY_PROJECT_SCOPE")


def test_the_analyst_reads_and_changes_nothing(api: Any, world: dict[str, Any]) -> None:
    analyst = key_for(api, world, "analyst")
    nightly: Suite = world["nightly"]
    project = world["project"]["id"]
    for path in (
        f"/api/v1/projects/{project}",
        f"/api/v1/datasets/{nightly.dataset['id']}",
        f"/api/v1/datasets/{nightly.dataset['id']}/items",
        f"/api/v1/evals/{nightly.eval['id']}",
        nightly.runs_path,
        nightly.run_path(world["run"]["id"]),
        f"{nightly.run_path(world['run']['id'])}/results",
        f"/api/v1/agents/{nightly.agent['id']}",
        f"/api/v1/agents/{nightly.agent['id']}/versions",
        f"/api/v1/generations/{world['generation']['id']}",
    ):
        status(analyst.get(path), 200)
    for listing in ("datasets", "evals", "agents"):
        page = analyst.get(f"/api/v1/{listing}?project_id={project}")
        assert page.status == 200 and page.json["data"], listing
    status(analyst.post(nightly.runs_path, {"wait": True}), 403, "FORBIDDEN")
    status(analyst.post("/api/v1/datasets", {"project_id": project, "name": "x"}), 403)
    status(analyst.put(f"/api/v1/datasets/{nightly.dataset['id']}", {"name": "x"}), 403)
    status(analyst.delete(f"/api/v1/evals/{nightly.eval['id']}"), 403, "FORBIDDEN")
    status(analyst.get(f"/api/v1/tools/{world['tool']['id']}"), 404)
    for listing in ("tools", "webhooks", "api-keys"):
        page = analyst.get(f"/api/v1/{listing}?project_id={project}")
        assert page.status == 200 and page.json["data"] == [], listing


def test_the_curator_keeps_every_dataset_but_the_golden_one(
    api: Any, world: dict[str, Any]
) -> None:
    curator = key_for(api, world, "curator")
    nightly: Suite = world["nightly"]
    golden = world["golden"]["id"]
    project = world["project"]["id"]
    items = f"/api/v1/datasets/{nightly.dataset['id']}/items"
    added = curator.post(items, {"input": [{"role": "user", "content": "Can I pay by invoice?"}]})
    status(added, 201)
    status(curator.put(f"{items}/{added.json['id']}", {"expected_output": "yes"}), 200)
    curated = curator.post(f"{items}/from-generation", {"generation_id": world["generation"]["id"]})
    status(curated, 201)
    status(curator.delete(f"{items}/{added.json['id']}"), 204)
    made = curator.post("/api/v1/datasets", {"project_id": project, "name": "new-cases"})
    status(made, 201)
    status(curator.put(f"/api/v1/datasets/{made.json['id']}", {"name": "renamed"}), 200)
    page = curator.get(f"/api/v1/datasets?project_id={project}")
    assert page.status == 200 and len(page.json["data"]) == 4
    # The golden dataset: readable, never writable (the deny wins over the allow).
    status(curator.get(f"/api/v1/datasets/{golden}"), 200)
    status(curator.post(f"/api/v1/datasets/{golden}/items", {"input": []}), 403, "FORBIDDEN")
    status(curator.put(f"/api/v1/datasets/{golden}", {"name": "x"}), 403, "FORBIDDEN")
    status(curator.delete(f"/api/v1/datasets/{nightly.dataset['id']}"), 403, "FORBIDDEN")
    status(curator.post(nightly.runs_path, {"wait": True}), 403, "FORBIDDEN")
    status(curator.get(f"/api/v1/evals/{nightly.eval['id']}"), 404)
    evals = curator.get(f"/api/v1/evals?project_id={project}")
    assert evals.status == 200 and evals.json["data"] == []


def test_detaching_every_policy_gives_the_key_its_project_back(
    api: Any, world: dict[str, Any]
) -> None:
    analyst = key_for(api, world, "analyst")
    nightly: Suite = world["nightly"]
    status(analyst.post(nightly.runs_path, {"wait": True}), 403)
    keys = api.get(f"/api/v1/api-keys?project_id={world['project']['id']}").json["data"]
    (key,) = [k for k in keys if k["name"] == "analyst"]
    status(api.put(f"/api/v1/api-keys/{key['id']}", {"policy_ids": []}), 200)
    status(analyst.post(nightly.runs_path, {"wait": True}), 201)
    status(analyst.get(f"/api/v1/tools/{world['tool']['id']}"), 200)
