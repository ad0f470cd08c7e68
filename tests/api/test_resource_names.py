"""Names of tools, deciders, AI providers and projects: a rename onto a taken name is 409
and writes nothing; a rename or a delete frees the name for the next resource."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from chalicelib.errors import ValidationFailed
from chalicelib.store import tenancy

QUESTIONS = [{"name": "ok", "kind": "predicate", "prompt": "Is it ok?"}]
TOOL_CONFIG = {"url": "http://127.0.0.1:9/grade"}


def tool_body(api: Any, project_id: str) -> dict[str, Any]:
    return {"project_id": project_id, "type": "http", "config": TOOL_CONFIG}


def decider_body(api: Any, project_id: str) -> dict[str, Any]:
    tool = api.post("/api/v1/tools", {**tool_body(api, project_id), "name": "backend"})
    assert tool.status == 201, tool
    backend = {"type": "tool", "tool_id": tool.json["id"]}
    return {"project_id": project_id, "questions": QUESTIONS, "backend": backend}


def provider_body(api: Any, project_id: str) -> dict[str, Any]:
    return {"project_id": project_id, "base_url": "http://127.0.0.1:9/v1", "default_model": "m"}


# collection, the body of a create (less its name), another field a PUT may change
KINDS: dict[str, tuple[str, Callable[[Any, str], dict[str, Any]], dict[str, Any]]] = {
    "tool": ("/api/v1/tools", tool_body, {"description": "changed"}),
    "decider": ("/api/v1/deciders", decider_body, {"description": "changed"}),
    "ai_provider": ("/api/v1/ai-providers", provider_body, {"default_model": "changed"}),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_rename_onto_a_taken_name_writes_nothing_and_delete_frees_the_name(
    api: Any, project: dict[str, Any], kind: str
) -> None:
    collection, make_body, change = KINDS[kind]
    body = make_body(api, project["id"])
    first = api.post(collection, {**body, "name": "first"})
    second = api.post(collection, {**body, "name": "second"})
    assert first.status == 201 and second.status == 201, (first, second)
    second_path = f"{collection}/{second.json['id']}"

    clash = api.put(second_path, {"name": "first", **change})
    assert clash.status == 409 and clash.code == "NAME_CONFLICT", clash
    assert clash.json["error"]["meta"] == {"field": "name", "name": "first"}
    assert api.get(second_path).json == second.json  # no field of the refused write landed
    # The claims did not move either: both names are still taken.
    for name in ("first", "second"):
        assert api.post(collection, {**body, "name": name}).code == "NAME_CONFLICT"

    assert api.delete(f"{collection}/{first.json['id']}").status == 204
    reused = api.post(collection, {**body, "name": "first"})
    assert reused.status == 201, reused
    assert api.put(second_path, {"name": "third"}).status == 200
    assert api.post(collection, {**body, "name": "second"}).status == 201  # freed by the rename


def test_project_rename_onto_a_taken_name_writes_nothing(api: Any, project: dict[str, Any]) -> None:
    other = api.post("/api/v1/projects", {"name": "globex"})
    assert other.status == 201, other
    provider = api.post("/api/v1/ai-providers", {**provider_body(api, project["id"]), "name": "p"})
    path = f"/api/v1/projects/{project['id']}"
    clash = api.put(path, {"name": "globex", "default_ai_provider_id": provider.json["id"]})
    assert clash.status == 409 and clash.code == "NAME_CONFLICT", clash
    assert clash.json["error"]["message"] == "a project named 'globex' already exists"
    assert api.get(path).json == project  # neither the name nor the default changed
    assert api.post("/api/v1/projects", {"name": project["name"]}).code == "NAME_CONFLICT"


def test_a_project_default_that_is_not_its_provider_is_refused_by_the_write(
    api: Any, project: dict[str, Any]
) -> None:
    globex = api.post("/api/v1/projects", {"name": "globex"}).json
    theirs = api.post("/api/v1/ai-providers", {**provider_body(api, globex["id"]), "name": "p"})
    # The API refuses this before writing; the write's own condition check is the last guard.
    current = tenancy.get_project(project["id"])
    with pytest.raises(ValidationFailed) as refused:
        tenancy.update_project(current, "renamed", theirs.json["id"])
    assert refused.value.meta["field"] == "default_ai_provider_id"
    assert tenancy.get_project(project["id"]) == current
    assert api.post("/api/v1/projects", {"name": "renamed"}).status == 201  # never claimed
