"""Tool routes: create/get/list/update/delete, config validation per type, tenancy."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chalicelib import wiring
from chalicelib.plugins.markers import hookimpl

TOOL_URL = "http://127.0.0.1:9/grade"


class EchoToolsPlugin:
    """A plugin registering one builtin tool action."""

    @hookimpl
    def pawl_register_builtin_tools(self) -> dict[str, Any]:
        return {"grade_length": lambda payload: {"score": 1.0}}


@pytest.fixture
def builtin_actions(aws_env: None) -> Iterator[None]:
    host = wiring.new_plugin_host(load_entry_points=False)
    host.pm.register(EchoToolsPlugin(), name="echo-tools")
    wiring.install_plugins(host)
    yield
    wiring.install_plugins()


def create(api: Any, project_id: str, /, **fields: Any) -> Any:
    body = {"project_id": project_id, "name": "grader", "type": "http", "config": {"url": TOOL_URL}}
    return api.post("/api/v1/tools", {**body, **fields})


def listed(api: Any, project_id: str) -> list[str]:
    response = api.get(f"/api/v1/tools?project_id={project_id}")
    assert response.status == 200, response
    return [t["name"] for t in response.json["data"]]


def test_http_tool_lifecycle(api: Any, project: dict[str, Any]) -> None:
    config = {
        "url": TOOL_URL,
        "headers": {"Authorization": "Bearer {{context:token}}"},
        "preset_parameters": {"rubric": "tone"},
        "context_keys": ["token", "tenant"],
    }
    created = create(api, project["id"], config=config, description="tone grader")
    assert created.status == 201, created
    tool = created.json
    assert tool["id"].startswith("tool_") and tool["type"] == "http"
    assert tool["config"]["headers"] == {"Authorization": "********"}  # write-only
    assert tool["config"]["context_keys"] == ["token", "tenant"]
    assert api.get(f"/api/v1/tools/{tool['id']}").json == tool
    assert listed(api, project["id"]) == ["grader"]

    renamed = api.put(f"/api/v1/tools/{tool['id']}", {"name": "tone", "description": None})
    assert renamed.status == 200, renamed
    assert renamed.json["name"] == "tone" and renamed.json["description"] is None
    assert renamed.json["config"] == tool["config"]  # untouched when not sent
    # The old name is free again, the new one is taken.
    assert create(api, project["id"]).status == 201
    assert create(api, project["id"], name="tone").code == "NAME_CONFLICT"
    clash = api.put(f"/api/v1/tools/{tool['id']}", {"name": "grader"})
    assert clash.status == 409 and clash.code == "NAME_CONFLICT"

    reconfigured = api.put(
        f"/api/v1/tools/{tool['id']}", {"type": "lambda", "config": {"function_name": "grade"}}
    )
    assert reconfigured.status == 200, reconfigured
    assert reconfigured.json["type"] == "lambda"
    assert reconfigured.json["config"]["function_name"] == "grade"

    assert api.delete(f"/api/v1/tools/{tool['id']}").status == 204
    assert api.get(f"/api/v1/tools/{tool['id']}").status == 404
    assert listed(api, project["id"]) == ["grader"]


def test_client_tool_is_a_valid_resource(api: Any, project: dict[str, Any]) -> None:
    created = create(api, project["id"], type="client", config={"parameters": {"type": "object"}})
    assert created.status == 201, created
    assert created.json["config"] == {"parameters": {"type": "object"}}


def test_builtin_tool_needs_actions_a_plugin_provides(
    api: Any, project: dict[str, Any], builtin_actions: None
) -> None:
    unknown = create(api, project["id"], type="builtin", config={"actions": ["nope"]})
    assert unknown.status == 400 and unknown.json["error"]["meta"]["field"] == "config.actions.0"
    assert "grade_length" in unknown.json["error"]["message"]
    known = create(api, project["id"], type="builtin", config={"actions": ["grade_length"]})
    assert known.status == 201, known


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"colour": "red"}, "colour"),
        ({"type": "mcp"}, "type"),
        ({"name": ""}, "name"),
        ({"config": {"url": TOOL_URL, "extra": 1}}, "config.extra"),
        ({"config": {}}, "config.url"),
        ({"config": {"url": "http://169.254.169.254/latest"}}, "config.url"),
        ({"config": {"url": "ftp://127.0.0.1/x"}}, "config.url"),
        ({"config": {"url": TOOL_URL, "headers": {"bad header": "x"}}}, "config.headers"),
        (
            {
                "config": {
                    "url": TOOL_URL,
                    "context_keys": ["tenant"],
                    "headers": {"Authorization": "Bearer {{context:token}}"},
                }
            },
            "config.headers",
        ),
        (
            {
                "config": {
                    "url": TOOL_URL,
                    "context_keys": [],
                    "preset_parameters": {"t": "{{context:a}}"},
                }
            },
            "config.preset_parameters",
        ),
        ({"config": {"url": TOOL_URL, "context_keys": ["a b"]}}, "config.context_keys"),
        ({"type": "lambda", "config": {"url": TOOL_URL}}, "config.function_name"),
        ({"type": "builtin", "config": {"actions": []}}, "config.actions"),
    ],
)
def test_refusals_name_the_field_and_write_nothing(
    api: Any, project: dict[str, Any], fields: dict[str, Any], field: str
) -> None:
    refused = create(api, project["id"], **fields)
    assert refused.status == 400, refused
    assert refused.code == "VALIDATION_FAILED"
    assert refused.json["error"]["meta"]["field"] == field
    assert listed(api, project["id"]) == []


def test_update_refusals(api: Any, project: dict[str, Any]) -> None:
    tool = create(api, project["id"]).json
    path = f"/api/v1/tools/{tool['id']}"
    needs_config = api.put(path, {"type": "lambda"})
    assert needs_config.status == 400 and needs_config.json["error"]["meta"]["field"] == "config"
    null_name = api.put(path, {"name": None})
    assert null_name.status == 400 and null_name.json["error"]["meta"]["field"] == "name"
    bad_config = api.put(path, {"config": {"url": "not a url"}})
    assert bad_config.status == 400 and bad_config.json["error"]["meta"]["field"] == "config.url"
    assert api.get(path).json == tool


def test_tenancy(api: Any, project: dict[str, Any], project_key: str) -> None:
    other = api.post("/api/v1/projects", {"name": "other"}).json
    foreign = create(api, other["id"]).json
    scoped = api.as_key(project_key)
    assert scoped.get(f"/api/v1/tools/{foreign['id']}").status == 404
    assert scoped.put(f"/api/v1/tools/{foreign['id']}", {"name": "x"}).status == 404
    assert scoped.delete(f"/api/v1/tools/{foreign['id']}").status == 404
    refused = create(scoped, other["id"], name="mine")
    assert refused.status == 403 and refused.code == "API_KEY_PROJECT_SCOPE"
    own = scoped.post("/api/v1/tools", {"name": "own", "type": "client"})
    assert own.status == 201 and own.json["project_id"] == project["id"]
    assert [t["name"] for t in scoped.get("/api/v1/tools").json["data"]] == ["own"]
    assert api.get(f"/api/v1/tools/{foreign['id']}").status == 200
