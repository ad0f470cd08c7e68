"""The shared shapes of project-scoped repositories (``store/project_scoped.py``).

One ``created_key`` format (microseconds) that still lists and pages correctly next to rows
written with the older millisecond keys; updates that never rewrite a stored
``created_key``; and one answer to a stale update: 409 ``CONCURRENT_UPDATE``, or 404 once
the resource is gone.
"""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.domain.ai_providers import AiProviderSpec
from chalicelib.domain.catalog import EvalSpec
from chalicelib.errors import ConcurrentUpdate, NotFound
from chalicelib.store import agents, ai_providers, datasets, evals, models, tools
from chalicelib.store.models import AiProviderModel, ProjectScoped, ToolModel
from chalicelib.store.pagination import Window
from chalicelib.store.project_scoped import creation_stamp
from tests.api.test_deciders import QUESTIONS, make_decider, make_tool

PROJECT = "proj_scoped0000000000001"


def legacy_tool(tool_id: str, created_at: str) -> None:
    """A tool row as written before keys carried microseconds: ``<created_at>#<id>``."""
    ToolModel(
        id=tool_id,
        project_id=PROJECT,
        name=tool_id,
        description=None,
        type="http",
        config={"url": "http://127.0.0.1:9/"},
        created_at=created_at,
        updated_at=created_at,
        created_key=f"{created_at}#{tool_id}",
    ).save()


def test_every_model_listed_by_project_is_project_scoped() -> None:
    with_index = [
        model
        for model in vars(models).values()
        if isinstance(model, type) and "by_project" in getattr(model, "_indexes", {})
    ]
    # The repositories that existed when the helper landed must be found, so the check
    # below can never pass on an empty list; newer ones join it without editing this test.
    assert {
        "AgentModel",
        "AiProviderModel",
        "ApiKeyModel",
        "DatasetModel",
        "DeciderModel",
        "EvalModel",
        "ToolModel",
        "WebhookModel",
    } <= {model.__name__ for model in with_index}
    # Generations list newest first by ``created_at`` through their own index shape
    # (``store/generations.py``, docs/dynamodb.md): the one model listed by project that
    # is not a project-scoped catalog resource. Any other must be.
    own_shape = {models.GenerationModel}
    assert own_shape <= set(with_index)
    unscoped = [m.__name__ for m in with_index if not issubclass(m, ProjectScoped)]
    assert unscoped == [m.__name__ for m in own_shape], unscoped


def test_created_key_carries_microseconds_and_sorts_with_created_at() -> None:
    created_at, created_key = creation_stamp("tool_x")
    stamp, _, resource_id = created_key.partition("#")
    assert resource_id == "tool_x"
    assert len(stamp) == len("2026-01-01T00:00:00.000000Z")
    assert stamp[: len(created_at) - 1] == created_at[:-1]  # same moment, finer


def test_old_millisecond_keys_list_and_page_before_new_ones(aws_env: None) -> None:
    legacy_tool("tool_legacy_a", "2020-01-01T00:00:00.001Z")
    legacy_tool("tool_legacy_b", "2020-01-01T00:00:00.002Z")
    new = tools.create_tool(PROJECT, "fresh", None, "http", {"url": "http://127.0.0.1:9/"})

    seen: list[str] = []
    cursor: str | None = None
    cursors = []
    while True:
        page = tools.list_tools(PROJECT, Window(limit=1, cursor=cursor))
        seen += [tool.id for tool in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
        cursors.append(cursor)
    assert seen == ["tool_legacy_a", "tool_legacy_b", new.id]
    # A cursor made at an old row (before the key format changed) resumes after it.
    resumed = tools.list_tools(PROJECT, Window(limit=10, cursor=cursors[0]))
    assert [tool.id for tool in resumed.items] == ["tool_legacy_b", new.id]


def test_updates_keep_the_stored_created_key(aws_env: None) -> None:
    legacy_tool("tool_legacy_a", "2020-01-01T00:00:00.001Z")
    tools.update_tool(tools.get_tool("tool_legacy_a"), {"name": "renamed"})
    row = ToolModel.get("tool_legacy_a")
    assert (row.name, row.created_key) == ("renamed", "2020-01-01T00:00:00.001Z#tool_legacy_a")

    spec = AiProviderSpec(name="judge", base_url="http://127.0.0.1:9/v1", default_model="m")
    provider = ai_providers.create_provider(PROJECT, spec)
    key = AiProviderModel.get(provider.id).created_key
    ai_providers.update_provider(provider, spec.model_copy(update={"default_model": "m2"}))
    row_p = AiProviderModel.get(provider.id)
    assert (row_p.default_model, row_p.created_key) == ("m2", key)


def stale(resource: Any) -> Any:
    """``resource`` as read before another request changed it."""
    return resource.model_copy(update={"updated_at": "2000-01-01T00:00:00.000Z"})


def test_a_stale_tool_or_provider_update_is_409_and_a_deleted_one_404(aws_env: None) -> None:
    tool = tools.create_tool(PROJECT, "t", None, "http", {"url": "http://127.0.0.1:9/"})
    spec = AiProviderSpec(name="judge", base_url="http://127.0.0.1:9/v1", default_model="m")
    provider = ai_providers.create_provider(PROJECT, spec)
    renamed = spec.model_copy(update={"name": "judge-2"})

    with pytest.raises(ConcurrentUpdate):
        tools.update_tool(stale(tool), {"name": "t2"})
    with pytest.raises(ConcurrentUpdate):
        ai_providers.update_provider(stale(provider), renamed)
    # Nothing was written: the names were not moved either.
    assert tools.get_tool(tool.id).name == "t"
    assert ai_providers.get_provider(provider.id).name == "judge"

    tools.delete_tool(tool)
    ai_providers.delete_provider(provider)
    with pytest.raises(NotFound):
        tools.update_tool(tool, {"name": "t2"})
    with pytest.raises(NotFound):
        ai_providers.update_provider(provider, renamed)


def test_a_stale_dataset_or_eval_update_is_409_and_a_deleted_one_404(aws_env: None) -> None:
    agent = agents.create_agent(PROJECT, "a", "http", {"url": "http://127.0.0.1:9/"}, None)
    dataset = datasets.create_dataset(PROJECT, "d", None)
    spec = EvalSpec(name="e", agent_id=agent.id, dataset_id=dataset.id, scorers=[])
    ev = evals.create_eval(PROJECT, spec, agent.version)
    renamed = spec.model_copy(update={"name": "e2"})

    with pytest.raises(ConcurrentUpdate):
        datasets.update_dataset(stale(dataset), name="d2")
    with pytest.raises(ConcurrentUpdate):
        evals.update_eval(stale(ev), renamed, agent.version)

    evals.delete_eval(ev)
    with pytest.raises(NotFound):
        evals.update_eval(ev, renamed, agent.version)
    datasets.delete_dataset(dataset)
    with pytest.raises(NotFound):
        datasets.update_dataset(dataset, name="d2")


def test_an_ai_provider_put_with_a_lost_race_answers_409_over_http(
    api: Any, project: dict[str, Any]
) -> None:
    body = {"name": "judge", "base_url": "http://127.0.0.1:9/v1", "default_model": "m"}
    created = api.post("/api/v1/ai-providers", {"project_id": project["id"], **body})
    assert created.status == 201, created
    current = ai_providers.get_provider(created.json["id"])
    changed = api.put(f"/api/v1/ai-providers/{current.id}", {**body, "default_model": "m2"})
    assert changed.status == 200, changed
    with pytest.raises(ConcurrentUpdate):
        ai_providers.update_provider(current, AiProviderSpec(**body))  # read before the PUT


def test_a_decider_update_keeps_its_created_key(api: Any, project: dict[str, Any]) -> None:
    tool_id = make_tool(api, project["id"], "http://127.0.0.1:9/")
    created = make_decider(api, project["id"], {"type": "tool", "tool_id": tool_id})
    assert created.status == 201, created
    decider_id = created.json["id"]
    key = models.DeciderModel.get(decider_id).created_key
    changed = api.put(f"/api/v1/deciders/{decider_id}", {"questions": QUESTIONS[:1]})
    assert changed.status == 200, changed
    row = models.DeciderModel.get(decider_id)
    assert (int(row.version), row.created_key) == (2, key)
