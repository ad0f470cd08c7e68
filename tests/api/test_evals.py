"""Evals: routes, scorer validation through the API, tenancy, cascades, run-start checks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

EVALS = "/api/v1/evals"
HTTP_CONFIG = {"url": "http://127.0.0.1:9/agent"}
SCHEMA = {"type": "object", "properties": {"category": {"type": "string"}}}


@pytest.fixture
def resources() -> Iterator[dict[str, dict[str, Any]]]:
    """Tools, deciders and AI providers the scorers may name, found through registered lookups."""
    from chalicelib.scoring.validation import register_lookup

    known: dict[str, dict[str, Any]] = {"tool": {}, "decider": {}, "ai_provider": {}}
    previous = {
        kind: register_lookup(kind, lambda _project, rid, kind=kind: known[kind].get(rid))
        for kind in known
    }
    yield known
    for kind, fn in previous.items():
        register_lookup(kind, fn)


@pytest.fixture
def world(api: Any, project: dict[str, Any], resources: dict[str, Any]) -> dict[str, Any]:
    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = api.post(path, {"project_id": project["id"], **body})
        assert response.status == 201, response
        return dict(response.json)

    agent = {"type": "http", "config": HTTP_CONFIG}
    resources["tool"]["tool_http"] = {"project_id": project["id"], "type": "http"}
    resources["tool"]["tool_client"] = {"project_id": project["id"], "type": "client"}
    resources["tool"]["tool_builtin"] = {"project_id": project["id"], "type": "builtin"}
    resources["tool"]["tool_foreign"] = {"project_id": "proj_other", "type": "http"}
    resources["decider"]["dcd_review"] = {"project_id": project["id"]}
    resources["ai_provider"]["aip_judge"] = {"project_id": project["id"]}
    return {
        "project": project,
        "agent": post("/api/v1/agents", {"name": "plain", **agent}),
        "schema_agent": post("/api/v1/agents", {"name": "typed", **agent, "output_schema": SCHEMA}),
        "dataset": post("/api/v1/datasets", {"name": "cases"}),
        "other_dataset": post("/api/v1/datasets", {"name": "more"}),
    }


def _body(world: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    return {
        "project_id": world["project"]["id"],
        "name": "suite",
        "agent_id": world["agent"]["id"],
        "dataset_id": world["dataset"]["id"],
        "scorers": [{"type": "exact_match"}],
        **overrides,
    }


def _field(response: Any) -> str:
    return str(response.json["error"]["meta"]["field"])


ALL_SCORERS = [
    {"type": "exact_match"},
    {"type": "contains", "value": "invoice"},
    {"type": "json_logic", "expression": {"==": [{"var": "object.category"}, "billing"]}},
    {"type": "output_schema"},
    {"type": "embedding_similarity", "pass_threshold": 0.8},
    {
        "type": "llm_judge",
        "prompt": "Rate {{output}}",
        "pass_threshold": 0.7,
        "ai_provider_id": "aip_judge",
    },
    {"type": "tool", "name": "tone", "tool_id": "tool_http", "pass_threshold": 0.5},
    {"type": "tool", "name": "facts", "tool_id": "tool_builtin", "action": "check"},
    {
        "type": "decider",
        "name": "review",
        "decider_id": "dcd_review",
        "score": {"var": "answers.0.probability"},
        "pass_threshold": 0.7,
    },
]


def test_eval_crud_with_every_scorer_type(api: Any, world: dict[str, Any]) -> None:
    body = _body(world, agent_id=world["schema_agent"]["id"], scorers=ALL_SCORERS)
    created = api.post(EVALS, {**body, "pass_threshold": 0.8, "group_by": "topic"})
    assert created.status == 201, created
    suite = created.json
    assert suite["id"].startswith("eval_") and suite["project_id"] == world["project"]["id"]
    assert suite["trials"] == 1 and suite["trial_reducer"] == "all"
    assert suite["max_regression"] is None and suite["group_by"] == "topic"
    assert suite["on_inconclusive"] == "pass"
    assert [s["type"] for s in suite["scorers"]] == [s["type"] for s in ALL_SCORERS]
    assert suite["scorers"][1] == {"type": "contains", "value": "invoice", "case_sensitive": False}
    assert api.get(f"{EVALS}/{suite['id']}").json == suite
    listed = api.get(f"{EVALS}?project_id={world['project']['id']}").json["data"]
    assert [e["id"] for e in listed] == [suite["id"]]

    path = f"{EVALS}/{suite['id']}"
    updated = api.put(
        path,
        {
            "name": "suite-2",
            "trials": 3,
            "trial_reducer": "majority",
            "max_regression": 0.05,
            "on_inconclusive": "fail",
        },
    )
    assert updated.status == 200, updated
    assert updated.json["name"] == "suite-2" and updated.json["trials"] == 3
    assert updated.json["trial_reducer"] == "majority" and updated.json["max_regression"] == 0.05
    assert updated.json["on_inconclusive"] == "fail"
    refused = api.put(path, {"on_inconclusive": "sometimes"})
    assert refused.status == 400 and _field(refused) == "on_inconclusive", refused
    assert updated.json["group_by"] == "topic" and updated.json["scorers"] == suite["scorers"]
    cleared = api.put(path, {"group_by": None, "pass_threshold": None})
    assert cleared.json["group_by"] is None and cleared.json["pass_threshold"] is None
    assert cleared.json["trials"] == 3
    moved = api.put(path, {"dataset_id": world["other_dataset"]["id"], "scorers": ALL_SCORERS[:2]})
    assert moved.json["dataset_id"] == world["other_dataset"]["id"]
    assert len(moved.json["scorers"]) == 2
    assert api.get(path).json == moved.json

    assert api.delete(path).status == 204
    assert api.get(path).status == 404 and api.delete(path).status == 404
    assert api.post(EVALS, _body(world, name="suite-2")).status == 201  # name released


REFUSED_EVALS: list[tuple[dict[str, Any], str]] = [
    ({"agent_id": "agt_doesnotexist0000"}, "agent_id"),
    ({"dataset_id": "dset_doesnotexist0000"}, "dataset_id"),
    ({"scorers": []}, "scorers"),
    ({"scorers": {"type": "exact_match"}}, "scorers"),
    ({"scorers": ["exact_match"]}, "scorers.0"),
    ({"scorers": [{"value": "x"}]}, "scorers.0.type"),
    ({"scorers": [{"type": "bleu"}]}, "scorers.0.type"),
    ({"scorers": [{"type": "exact_match"}, {"type": "exact_match"}]}, "scorers.1.type"),
    ({"scorers": [{"type": "exact_match", "colour": "red"}]}, "scorers.0.colour"),
    ({"scorers": [{"type": "contains"}]}, "scorers.0.value"),
    ({"scorers": [{"type": "json_logic", "expression": {"nope": [1]}}]}, "scorers.0.expression"),
    ({"scorers": [{"type": "output_schema"}]}, "scorers.0.type"),
    ({"scorers": [{"type": "output_schema", "schema": SCHEMA}]}, "scorers.0.type"),
    ({"scorers": [{"type": "embedding_similarity"}]}, "scorers.0.pass_threshold"),
    (
        {"scorers": [{"type": "llm_judge", "prompt": "p", "pass_threshold": 0.5}]},
        "scorers.0.ai_provider_id",
    ),
    (
        {
            "scorers": [
                {
                    "type": "llm_judge",
                    "prompt": "p",
                    "pass_threshold": 0.5,
                    "ai_provider_id": "aip_gone",
                }
            ]
        },
        "scorers.0.ai_provider_id",
    ),
    ({"scorers": [{"type": "tool", "name": "t", "tool_id": "tool_missing"}]}, "scorers.0.tool_id"),
    ({"scorers": [{"type": "tool", "name": "t", "tool_id": "tool_foreign"}]}, "scorers.0.tool_id"),
    ({"scorers": [{"type": "tool", "name": "t", "tool_id": "tool_client"}]}, "scorers.0.tool_id"),
    ({"scorers": [{"type": "tool", "name": "t", "tool_id": "tool_builtin"}]}, "scorers.0.action"),
    ({"scorers": [{"type": "tool", "name": "contains", "tool_id": "tool_http"}]}, "scorers.0.name"),
    (
        {
            "scorers": [
                {
                    "type": "tool",
                    "name": "t",
                    "tool_id": "tool_http",
                    "preset_parameters": {"output": 1},
                }
            ]
        },
        "scorers.0.preset_parameters",
    ),
    (
        {
            "scorers": [
                {
                    "type": "decider",
                    "name": "d",
                    "decider_id": "dcd_gone",
                    "score": 1,
                    "pass_threshold": 0.5,
                }
            ]
        },
        "scorers.0.decider_id",
    ),
    ({"pass_threshold": 1.5}, "pass_threshold"),
    ({"pass_threshold": "0.5"}, "pass_threshold"),
    ({"trials": 11}, "trials"),
    ({"trials": 0}, "trials"),
    ({"trial_reducer": "most"}, "trial_reducer"),
    ({"max_regression": -0.1}, "max_regression"),
    ({"on_inconclusive": "maybe"}, "on_inconclusive"),
    ({"on_inconclusive": None}, "on_inconclusive"),
    ({"group_by": ""}, "group_by"),
    ({"baseline": "x"}, "baseline"),
    ({"name": ""}, "name"),
]


def test_eval_refusals_name_the_field(api: Any, world: dict[str, Any]) -> None:
    for overrides, field in REFUSED_EVALS:
        response = api.post(EVALS, _body(world, **overrides))
        assert response.status == 400 and response.code == "VALIDATION_FAILED", (
            overrides,
            response,
        )
        assert _field(response) == field, (overrides, response.json)
    unknown = api.post(EVALS, _body(world, scorers=[{"type": "bleu"}])).json["error"]["message"]
    assert "exact_match" in unknown and "llm_judge" in unknown
    assert api.get(f"{EVALS}?project_id={world['project']['id']}").json["data"] == []
    # Nothing was bound either: the agent can still be deleted.
    assert api.delete(f"/api/v1/agents/{world['agent']['id']}").status == 204


def test_llm_judge_inherits_the_project_default(api: Any, world: dict[str, Any]) -> None:
    from chalicelib.store import tenancy

    judge = [{"type": "llm_judge", "prompt": "p", "pass_threshold": 0.5}]
    assert api.post(EVALS, _body(world, scorers=judge)).status == 400
    tenancy.set_default_ai_provider(world["project"]["id"], "aip_judge")
    created = api.post(EVALS, _body(world, scorers=judge))
    assert created.status == 201 and "ai_provider_id" not in created.json["scorers"][0]


def test_eval_name_conflicts(api: Any, world: dict[str, Any]) -> None:
    first = api.post(EVALS, _body(world, name="a")).json
    second = api.post(EVALS, _body(world, name="b")).json
    again = api.post(EVALS, _body(world, name="a"))
    assert again.status == 409 and again.code == "NAME_CONFLICT"
    rename = api.put(f"{EVALS}/{second['id']}", {"name": "a"})
    assert rename.status == 409 and rename.code == "NAME_CONFLICT"
    assert api.get(f"{EVALS}/{second['id']}").json == second
    assert api.get(f"{EVALS}/{first['id']}").json == first


def test_update_refusals_write_nothing(api: Any, world: dict[str, Any]) -> None:
    body = _body(world, agent_id=world["schema_agent"]["id"], scorers=[{"type": "output_schema"}])
    suite = api.post(EVALS, body).json
    path = f"{EVALS}/{suite['id']}"
    for update, field in [
        ({"agent_id": world["agent"]["id"]}, "scorers.0.type"),
        ({"scorers": [{"type": "output_schema"}, {"type": "output_schema"}]}, "scorers.1.type"),
        ({"dataset_id": "dset_doesnotexist0000"}, "dataset_id"),
        ({"agent_id": None}, "agent_id"),
        ({"scorers": None}, "scorers"),
        ({"trials": None}, "trials"),
        ({"project_id": "proj_x"}, "project_id"),
    ]:
        response = api.put(path, update)
        assert response.status == 400, (update, response)
        assert _field(response) == field, (update, response.json)
    assert api.get(path).json == suite
    # Moving to the schema-less agent works once the output_schema scorer goes too.
    moved = api.put(path, {"agent_id": world["agent"]["id"], "scorers": [{"type": "exact_match"}]})
    assert moved.status == 200 and moved.json["agent_id"] == world["agent"]["id"]
    # The old agent is no longer referenced; the new one is.
    assert api.delete(f"/api/v1/agents/{world['schema_agent']['id']}").status == 204
    assert api.delete(f"/api/v1/agents/{world['agent']['id']}").code == "AGENT_IN_USE"


def test_cross_project_references_are_refused(
    api: Any, world: dict[str, Any], project_key: str
) -> None:
    other = api.post("/api/v1/projects", {"name": "globex"}).json
    foreign_agent = api.post(
        "/api/v1/agents",
        {"project_id": other["id"], "name": "x", "type": "http", "config": HTTP_CONFIG},
    ).json
    foreign_dataset = api.post("/api/v1/datasets", {"project_id": other["id"], "name": "x"}).json
    scoped = api.as_key(project_key)
    plain = {k: v for k, v in _body(world).items() if k != "project_id"}
    for overrides, field in [
        ({"agent_id": foreign_agent["id"]}, "agent_id"),
        ({"dataset_id": foreign_dataset["id"]}, "dataset_id"),
    ]:
        for caller in (api, scoped):
            response = caller.post(
                EVALS, {**plain, "project_id": world["project"]["id"], **overrides}
            )
            assert response.status == 400 and _field(response) == field
            # A well-formed id that names nothing reads exactly like another project's id.
            absent = overrides[field].split("_")[0] + "_doesnotexist"
            missing = caller.post(
                EVALS, {**plain, "project_id": world["project"]["id"], field: absent}
            )
            assert missing.json["error"]["message"].replace(absent, "ID") == response.json["error"][
                "message"
            ].replace(overrides[field], "ID")
    named_other = scoped.post(EVALS, {**plain, "project_id": other["id"]})
    assert named_other.status == 403 and named_other.code == "API_KEY_PROJECT_SCOPE"
    own = scoped.post(EVALS, plain)
    assert own.status == 201 and own.json["project_id"] == world["project"]["id"]
    assert scoped.put(f"{EVALS}/{own.json['id']}", {"agent_id": foreign_agent["id"]}).status == 400

    foreign_eval = api.post(
        EVALS,
        {
            "project_id": other["id"],
            "name": "theirs",
            "agent_id": foreign_agent["id"],
            "dataset_id": foreign_dataset["id"],
            "scorers": [{"type": "exact_match"}],
        },
    ).json
    path = f"{EVALS}/{foreign_eval['id']}"
    assert scoped.get(path).status == 404 and scoped.get(path).code == "RESOURCE_NOT_FOUND"
    assert scoped.put(path, {"name": "stolen"}).status == 404
    assert scoped.delete(path).status == 404
    assert scoped.get(f"{EVALS}?project_id={other['id']}").status == 403
    assert [e["id"] for e in scoped.get(EVALS).json["data"]] == [own.json["id"]]
    assert api.get(path).json == foreign_eval
    assert api.as_key(None).get(path).status == 401


def test_deleting_a_dataset_deletes_its_evals(api: Any, world: dict[str, Any]) -> None:
    from chalicelib.store import evals

    doomed = api.post(EVALS, _body(world, name="doomed")).json
    kept = api.post(EVALS, _body(world, name="kept", dataset_id=world["other_dataset"]["id"])).json
    assert [e.id for e in evals.list_evals_for_agent(world["agent"]["id"])] == [
        doomed["id"],
        kept["id"],
    ]
    assert api.delete(f"/api/v1/datasets/{world['dataset']['id']}").status == 204
    assert api.get(f"{EVALS}/{doomed['id']}").status == 404
    assert api.get(f"{EVALS}/{kept['id']}").json == kept
    assert [e.id for e in evals.list_evals_for_agent(world["agent"]["id"])] == [kept["id"]]
    # The cascade released the agent reference: once the kept eval goes, the agent can too.
    assert api.delete(f"{EVALS}/{kept['id']}").status == 204
    assert api.delete(f"/api/v1/agents/{world['agent']['id']}").status == 204


def test_evals_paginate(api: Any, world: dict[str, Any]) -> None:
    created = [api.post(EVALS, _body(world, name=f"e{n}")).json["id"] for n in range(3)]
    assert api.put(f"{EVALS}/{created[0]}", {"name": "renamed"}).status == 200
    base = f"{EVALS}?project_id={world['project']['id']}&limit=2"
    first = api.get(base).json
    second = api.get(f"{base}&cursor={first['next_cursor']}").json
    assert [e["id"] for e in first["data"] + second["data"]] == created
    assert second["next_cursor"] is None


def test_run_start_check_is_authoritative(
    api: Any, world: dict[str, Any], resources: dict[str, Any]
) -> None:
    from chalicelib.errors import ValidationFailed
    from chalicelib.scoring.validation import check_eval_runnable
    from chalicelib.store import evals

    scorers = [{"type": "tool", "name": "tone", "tool_id": "tool_http", "pass_threshold": 0.5}]
    suite = evals.get_eval(api.post(EVALS, _body(world, scorers=scorers)).json["id"])
    check_eval_runnable(suite, None)
    del resources["tool"]["tool_http"]  # the tool was deleted since the eval was written
    with pytest.raises(ValidationFailed) as refused:
        check_eval_runnable(suite, None)
    assert refused.value.meta["field"] == "scorers.0.tool_id"

    typed = _body(world, name="typed", agent_id=world["schema_agent"]["id"])
    typed_eval = api.post(EVALS, {**typed, "scorers": [{"type": "output_schema"}]}).json
    check_eval_runnable(evals.get_eval(typed_eval["id"]), SCHEMA)
    with pytest.raises(ValidationFailed) as no_schema:
        check_eval_runnable(evals.get_eval(typed_eval["id"]), None)
    assert no_schema.value.meta["field"] == "scorers.0.type"
