"""Agents: routes, adapter config validation, versions, tenancy, AGENT_IN_USE."""

from __future__ import annotations

from typing import Any

import pytest

AGENTS = "/api/v1/agents"
HTTP_CONFIG = {"url": "http://127.0.0.1:9/agent"}
SCHEMA = {"type": "object", "properties": {"category": {"type": "string"}}}


def _agent(api: Any, project: dict[str, Any], name: str = "support", **extra: Any) -> Any:
    body = {"project_id": project["id"], "name": name, "type": "http", "config": HTTP_CONFIG}
    response = api.post(AGENTS, {**body, **extra})
    assert response.status == 201, response
    return response.json


def _field(response: Any) -> str:
    return str(response.json["error"]["meta"]["field"])


def _eval(api: Any, project: dict[str, Any], agent_id: str, scorers: list[Any]) -> Any:
    dataset = api.post("/api/v1/datasets", {"project_id": project["id"], "name": "ds"})
    if dataset.status == 409:
        dataset_id = api.get(f"/api/v1/datasets?project_id={project['id']}").json["data"][0]["id"]
    else:
        dataset_id = dataset.json["id"]
    n = len(api.get(f"/api/v1/evals?project_id={project['id']}").json["data"])
    response = api.post(
        "/api/v1/evals",
        {
            "project_id": project["id"],
            "name": f"suite-{n}",
            "agent_id": agent_id,
            "dataset_id": dataset_id,
            "scorers": scorers,
        },
    )
    assert response.status == 201, response
    return response.json


def test_agent_create_get_list(api: Any, project: dict[str, Any]) -> None:
    agent = _agent(api, project, output_schema=SCHEMA)
    assert agent["id"].startswith("agt_") and agent["version"] == 1
    assert agent["config"] == HTTP_CONFIG and agent["output_schema"] == SCHEMA
    assert agent["type"] == "http" and agent["project_id"] == project["id"]
    assert api.get(f"{AGENTS}/{agent['id']}").json == agent
    listed = api.get(f"{AGENTS}?project_id={project['id']}").json
    assert [a["id"] for a in listed["data"]] == [agent["id"]] and listed["next_cursor"] is None
    version = api.get(f"{AGENTS}/{agent['id']}/versions/1").json
    assert version["version"] == 1 and version["config"] == HTTP_CONFIG
    assert version["output_schema"] == SCHEMA and version["agent_id"] == agent["id"]


def test_every_builtin_type_validates_its_config(api: Any, project: dict[str, Any]) -> None:
    configs = {
        "model": {"base_url": "http://127.0.0.1:9/v1", "model": "small"},
        "lambda": {"function_name": "my-agent"},
        "python": {"callable": "tests.support.agents:echo"},
    }
    for agent_type, config in configs.items():
        body = {"project_id": project["id"], "name": agent_type, "type": agent_type}
        created = api.post(AGENTS, {**body, "config": config})
        assert created.status == 201, (agent_type, created)


REFUSED_CREATES = [
    ({"type": "carrier-pigeon", "config": {}}, "type"),
    ({"type": "http", "config": {}}, "config.url"),
    ({"type": "http", "config": {"url": "not a url"}}, "config.url"),
    ({"type": "http", "config": {**HTTP_CONFIG, "colour": "red"}}, "config.colour"),
    ({"type": "http", "config": {**HTTP_CONFIG, "timeout_s": 0}}, "config.timeout_s"),
    ({"type": "http", "config": {"url": "http://169.254.169.254/latest"}}, "config.url"),
    ({"type": "model", "config": {"base_url": "http://127.0.0.1:9"}}, "config.model"),
    ({"type": "python", "config": {"callable": "no colon"}}, "config.callable"),
    (
        {"type": "http", "config": HTTP_CONFIG, "output_schema": {"type": "nope"}},
        "output_schema.type",
    ),
    ({"type": "http", "config": HTTP_CONFIG, "output_schema": "text"}, "output_schema"),
    ({"type": "http", "config": HTTP_CONFIG, "version": 3}, "version"),
    ({"config": HTTP_CONFIG}, "type"),
]


def test_agent_refusals_name_the_field(api: Any, project: dict[str, Any]) -> None:
    for body, field in REFUSED_CREATES:
        response = api.post(AGENTS, {"project_id": project["id"], "name": "a", **body})
        assert response.status == 400 and response.code == "VALIDATION_FAILED", (body, response)
        assert _field(response) == field, body
    assert api.get(f"{AGENTS}?project_id={project['id']}").json["data"] == []


def test_unknown_type_lists_known_types(api: Any, project: dict[str, Any]) -> None:
    response = api.post(
        AGENTS, {"project_id": project["id"], "name": "a", "type": "fax", "config": {}}
    )
    assert response.status == 400 and "http" in response.json["error"]["message"]


def test_python_agents_need_an_allow_listed_module(
    api: Any, project: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from chalicelib import wiring
    from chalicelib.settings import get_settings

    monkeypatch.setenv("PAWL_PYTHON_AGENT_MODULES", "")
    wiring.reload_settings()
    # Load now: inside a request chalice.test.Client swaps in the stage's environment.
    assert get_settings().python_agent_modules == ()
    body = {"project_id": project["id"], "name": "py", "type": "python"}
    response = api.post(AGENTS, {**body, "config": {"callable": "tests.support.agents:echo"}})
    assert response.status == 400 and _field(response) == "config.callable"
    assert "PAWL_PYTHON_AGENT_MODULES" in response.json["error"]["message"]
    assert api.get(f"{AGENTS}?project_id={project['id']}").json["data"] == []


def test_agent_name_conflict(api: Any, project: dict[str, Any]) -> None:
    first = _agent(api, project, name="a")
    second = _agent(api, project, name="b")
    again = api.post(
        AGENTS, {"project_id": project["id"], "name": "a", "type": "http", "config": HTTP_CONFIG}
    )
    assert again.status == 409 and again.code == "NAME_CONFLICT"
    rename = api.put(f"{AGENTS}/{second['id']}", {"name": "a"})
    assert rename.status == 409 and rename.code == "NAME_CONFLICT"
    assert api.get(f"{AGENTS}/{second['id']}").json == second
    assert api.get(f"{AGENTS}/{second['id']}/versions").json["data"][-1]["version"] == 1
    assert api.get(f"{AGENTS}/{first['id']}").json == first


def test_updates_write_immutable_versions(api: Any, project: dict[str, Any]) -> None:
    agent = _agent(api, project)
    path = f"{AGENTS}/{agent['id']}"
    renamed = api.put(path, {"name": "support-v2"})
    assert renamed.status == 200 and renamed.json["version"] == 2
    assert renamed.json["config"] == HTTP_CONFIG and renamed.json["name"] == "support-v2"
    with_schema = api.put(
        path, {"output_schema": SCHEMA, "config": {"url": "http://127.0.0.1:9/a"}}
    )
    assert with_schema.json["version"] == 3 and with_schema.json["output_schema"] == SCHEMA
    retyped = api.put(path, {"type": "lambda", "config": {"function_name": "fn"}})
    assert retyped.json["type"] == "lambda" and retyped.json["version"] == 4
    dropped = api.put(path, {"output_schema": None})
    assert dropped.json["output_schema"] is None and dropped.json["version"] == 5
    assert api.get(path).json == dropped.json

    versions = api.get(f"{path}/versions").json["data"]
    assert [v["version"] for v in versions] == [1, 2, 3, 4, 5]
    assert versions[0]["name"] == "support" and versions[0]["config"] == HTTP_CONFIG
    assert versions[2]["output_schema"] == SCHEMA and versions[3]["type"] == "lambda"
    first_page = api.get(f"{path}/versions?limit=2").json
    rest = api.get(f"{path}/versions?limit=3&cursor={first_page['next_cursor']}").json
    assert [v["version"] for v in first_page["data"] + rest["data"]] == [1, 2, 3, 4, 5]
    assert api.get(f"{path}/versions/6").status == 404
    assert api.get(f"{path}/versions/two").status == 404
    # The old name is free again.
    _agent(api, project, name="support")


def test_update_refusals_write_nothing(api: Any, project: dict[str, Any]) -> None:
    agent = _agent(api, project)
    path = f"{AGENTS}/{agent['id']}"
    for body, field in [
        ({"type": "python"}, "config.callable"),
        ({"type": "nope"}, "type"),
        ({"config": {"url": "ftp://x"}}, "config.url"),
        ({"config": None}, "config"),
        ({"name": None}, "name"),
        ({"output_schema": {"type": 12}}, "output_schema.type"),
        ({"project_id": "proj_x"}, "project_id"),
    ]:
        response = api.put(path, body)
        assert response.status == 400, (body, response)
        assert _field(response) == field or _field(response).startswith(field), body
    assert api.get(path).json == agent
    assert len(api.get(f"{path}/versions").json["data"]) == 1


def test_dropping_output_schema_needed_by_an_eval_is_refused(
    api: Any, project: dict[str, Any]
) -> None:
    agent = _agent(api, project, output_schema=SCHEMA)
    path = f"{AGENTS}/{agent['id']}"
    suite = _eval(api, project, agent["id"], [{"type": "output_schema"}])
    refused = api.put(path, {"output_schema": None, "name": "renamed"})
    assert refused.status == 400 and _field(refused) == "output_schema"
    assert refused.json["error"]["meta"]["evals"] == [{"id": suite["id"], "name": suite["name"]}]
    assert api.get(path).json == agent
    assert [v["version"] for v in api.get(f"{path}/versions").json["data"]] == [1]
    # Replacing the schema keeps the scorer satisfied.
    other = {"type": "object", "required": ["category"]}
    assert api.put(path, {"output_schema": other}).json["version"] == 2


def test_delete_agent_in_use_is_refused(api: Any, project: dict[str, Any]) -> None:
    agent = _agent(api, project)
    suite = _eval(api, project, agent["id"], [{"type": "exact_match"}])
    refused = api.delete(f"{AGENTS}/{agent['id']}")
    assert refused.status == 409 and refused.code == "AGENT_IN_USE"
    assert refused.json["error"]["meta"]["evals"] == [{"id": suite["id"], "name": suite["name"]}]
    assert suite["name"] in refused.json["error"]["message"]
    assert api.get(f"{AGENTS}/{agent['id']}").status == 200

    assert api.delete(f"/api/v1/evals/{suite['id']}").status == 204
    assert api.delete(f"{AGENTS}/{agent['id']}").status == 204
    assert api.get(f"{AGENTS}/{agent['id']}").status == 404
    assert api.get(f"{AGENTS}/{agent['id']}/versions/1").status == 404
    assert api.delete(f"{AGENTS}/{agent['id']}").status == 404
    _agent(api, project)  # name released


def test_tenancy_of_agents(api: Any, project: dict[str, Any], project_key: str) -> None:
    scoped = api.as_key(project_key)
    other = api.post("/api/v1/projects", {"name": "globex"}).json
    foreign = _agent(api, other, name="foreign")
    own = scoped.post(AGENTS, {"name": "mine", "type": "http", "config": HTTP_CONFIG})
    assert own.status == 201 and own.json["project_id"] == project["id"]
    assert [a["id"] for a in scoped.get(AGENTS).json["data"]] == [own.json["id"]]
    named_other = scoped.post(
        AGENTS, {"project_id": other["id"], "name": "x", "type": "http", "config": HTTP_CONFIG}
    )
    assert named_other.status == 403 and named_other.code == "API_KEY_PROJECT_SCOPE"
    assert scoped.get(f"{AGENTS}?project_id={other['id']}").status == 403
    for path in [
        f"{AGENTS}/{foreign['id']}",
        f"{AGENTS}/{foreign['id']}/versions",
        f"{AGENTS}/{foreign['id']}/versions/1",
        f"{AGENTS}/agt_doesnotexist0000",
    ]:
        hidden = scoped.get(path)
        assert hidden.status == 404 and hidden.code == "RESOURCE_NOT_FOUND", path
    assert scoped.put(f"{AGENTS}/{foreign['id']}", {"name": "stolen"}).status == 404
    assert scoped.delete(f"{AGENTS}/{foreign['id']}").status == 404
    assert api.get(f"{AGENTS}/{foreign['id']}").json == foreign
    assert api.as_key(None).get(f"{AGENTS}/{foreign['id']}").status == 401


def test_repository_functions(api: Any, project: dict[str, Any]) -> None:
    from chalicelib.errors import NotFound
    from chalicelib.store import agents

    agent = _agent(api, project)
    api.put(f"{AGENTS}/{agent['id']}", {"config": {"url": "http://127.0.0.1:9/b"}})
    assert agents.get_agent(agent["id"]).version == 2
    assert agents.get_agent_version(agent["id"], 1).config == HTTP_CONFIG
    assert agents.get_agent_version(agent["id"], 2).config == {"url": "http://127.0.0.1:9/b"}
    with pytest.raises(NotFound):
        agents.get_agent_version(agent["id"], 3)
    with pytest.raises(NotFound):
        agents.get_agent("agt_doesnotexist0000")
