"""Finding 2 (remote code execution): no tenant chooses code that runs inside pawl.

``python`` agents name ``module:function``; only modules the operator lists in
``PAWL_PYTHON_AGENT_MODULES`` may be named, by anyone (scoped or admin key), checked when the
agent is written and again at every call. The refusals are 400 with the envelope, naming the
variable, and write nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from chalicelib import wiring
from chalicelib.agents.python_agent import module_allowed
from chalicelib.settings import get_settings
from tests.conftest import Api

AGENTS = "/api/v1/agents"
ALLOWED = "tests.support.agents:scripted"
THIS_MODULE = __name__

#: Defined elsewhere, reachable as an attribute of this (allow-listed) module.
reexported_getcwd = os.getcwd


def listed_here(payload: dict[str, Any]) -> dict[str, Any]:
    """A callable defined in this module (allow-listed by :func:`allow_this_module`)."""
    return {"output": "ran in-process"}


def _allow(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("PAWL_PYTHON_AGENT_MODULES", value)
    wiring.reload_settings()
    # Load now: inside a request chalice.test.Client swaps in the stage's environment.
    assert get_settings().python_agent_modules == tuple(v for v in value.split(",") if v)


@pytest.fixture
def allow_this_module(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    _allow(monkeypatch, f"tests.support.agents,{THIS_MODULE}")
    yield
    wiring.reload_settings()


def _create(api: Api, project_id: str, target: str) -> Any:
    body = {"project_id": project_id, "name": "py", "type": "python"}
    return api.post(AGENTS, {**body, "config": {"callable": target}})


def _generate(api: Api, agent_id: str, text: str = "echo:hi") -> Any:
    body = {"input": [{"role": "user", "content": text}]}
    response = api.post(f"{AGENTS}/{agent_id}/generate", body)
    assert response.status == 201, response
    return response.json


def _agents(api: Api, project_id: str) -> list[Any]:
    return list(api.get(f"{AGENTS}?project_id={project_id}").json["data"])


REFUSED = [
    "sys:exit",
    "os:system",
    "builtins:eval",
    "subprocess:run",
    "os:__dict__",
    "tests.support.agents:_lock",  # allow-listed module, private attribute
    "tests.support.agents:__builtins__",
    "tests.support.agents:scripted.__globals__",
    "tests.support:agents",  # a package above an allow-listed module is not listed
]


@pytest.mark.parametrize("target", REFUSED)
def test_scoped_key_cannot_name_unlisted_or_private_callables(
    api: Api, project: dict[str, Any], project_key: str, target: str
) -> None:
    response = _create(api.as_key(project_key), project["id"], target)
    assert response.status == 400 and response.code == "VALIDATION_FAILED", response
    assert response.json["error"]["meta"]["field"] == "config.callable"
    assert _agents(api, project["id"]) == []


@pytest.mark.parametrize("target", ["os:system", "builtins:eval", "sys:exit"])
def test_admin_key_is_refused_too_unless_listed(
    api: Api, project: dict[str, Any], target: str
) -> None:
    response = _create(api, project["id"], target)
    assert response.status == 400 and response.code == "VALIDATION_FAILED", response
    assert "PAWL_PYTHON_AGENT_MODULES" in response.json["error"]["message"]
    assert response.json["error"]["meta"]["variable"] == "PAWL_PYTHON_AGENT_MODULES"
    assert _agents(api, project["id"]) == []


def test_update_to_an_unlisted_callable_is_refused_and_keeps_the_version(
    api: Api, project: dict[str, Any], project_key: str
) -> None:
    scoped = api.as_key(project_key)
    agent = _create(scoped, project["id"], ALLOWED).json
    refused = scoped.put(f"{AGENTS}/{agent['id']}", {"config": {"callable": "os:system"}})
    assert refused.status == 400 and refused.code == "VALIDATION_FAILED", refused
    assert scoped.get(f"{AGENTS}/{agent['id']}").json == agent
    versions = scoped.get(f"{AGENTS}/{agent['id']}/versions").json["data"]
    assert [v["version"] for v in versions] == [1]
    http = {"url": "http://127.0.0.1:9/agent"}
    switched = scoped.put(f"{AGENTS}/{agent['id']}", {"type": "http", "config": http})
    assert switched.status == 200, switched
    # Switching back without a config validates the stored http config as python: refused.
    back = scoped.put(f"{AGENTS}/{agent['id']}", {"type": "python"})
    assert back.status == 400, back


def test_an_allow_listed_callable_runs(
    api: Api, project: dict[str, Any], project_key: str, plugins: Any
) -> None:
    scoped = api.as_key(project_key)
    agent = _create(scoped, project["id"], ALLOWED)
    assert agent.status == 201, agent
    generation = _generate(scoped, agent.json["id"], "echo:hello")
    assert generation["status"] == "completed" and generation["output"] == "hello"


def test_a_shrunk_allow_list_fails_the_call(
    api: Api, project: dict[str, Any], project_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    scoped = api.as_key(project_key)
    agent = _create(scoped, project["id"], ALLOWED).json
    _allow(monkeypatch, "pawl.demo.agent")
    generation = _generate(scoped, agent["id"])
    assert generation["status"] == "failed" and generation["output"] is None
    assert generation["error"]["code"] == "GENERATION_FAILED"
    assert "PAWL_PYTHON_AGENT_MODULES" in generation["error"]["message"]
    wiring.reload_settings()


def test_a_callable_must_be_defined_in_the_listed_module(
    api: Api, project: dict[str, Any], project_key: str, allow_this_module: None
) -> None:
    scoped = api.as_key(project_key)
    own = _create(scoped, project["id"], f"{THIS_MODULE}:listed_here").json
    assert _generate(scoped, own["id"])["output"] == "ran in-process"
    # os.getcwd reachable through the listed module: the name passes, the call is refused.
    reexport = scoped.post(
        AGENTS,
        {
            "project_id": project["id"],
            "name": "reexport",
            "type": "python",
            "config": {"callable": f"{THIS_MODULE}:reexported_getcwd"},
        },
    ).json
    failed = _generate(scoped, reexport["id"])
    assert failed["status"] == "failed" and "re-exports are refused" in failed["error"]["message"]


def test_builtin_tools_resolve_only_registered_actions(
    api: Api, project: dict[str, Any], project_key: str
) -> None:
    # A builtin tool names actions that installed plugins register: nothing is imported by
    # name from tenant input, so a module path is just an unknown action.
    body = {"project_id": project["id"], "name": "t", "type": "builtin"}
    response = api.as_key(project_key).post(
        "/api/v1/tools", {**body, "config": {"actions": ["os:system"]}}
    )
    assert response.status == 400 and response.json["error"]["meta"]["field"] == "config.actions.0"
    assert api.get(f"/api/v1/tools?project_id={project['id']}").json["data"] == []


@pytest.mark.parametrize(
    ("module", "listed", "allowed"),
    [
        ("mypkg.agents", ("mypkg.agents",), True),
        ("mypkg.agents.v2", ("mypkg.agents",), False),  # exact names are exact
        ("mypkg.agents.v2", ("mypkg.*",), True),
        ("mypkg", ("mypkg.*",), False),  # the package's own __init__ needs its own entry
        ("mypkgx.agents", ("mypkg.*",), False),
        ("os", (), False),
    ],
)
def test_allow_list_entries(module: str, listed: tuple[str, ...], allowed: bool) -> None:
    assert module_allowed(module, listed) is allowed
