"""Tools: one row per tool, names unique per project through a claim row.

Reads, lists and creates go through :mod:`chalicelib.store.project_scoped`.
"""

from __future__ import annotations

from typing import Any

from chalicelib import clock, ids
from chalicelib.domain.tools import Tool
from chalicelib.store import names, project_scoped
from chalicelib.store.models import ToolModel
from chalicelib.store.pagination import Listing, Window
from chalicelib.store.transactions import TxnRefused, labelled_transaction

KIND = "tool"


def _tool(model: ToolModel) -> Tool:
    return Tool(
        id=model.id,
        project_id=model.project_id,
        name=model.name,
        description=model.description,
        type=model.type,  # type: ignore[arg-type]  # only this module writes it, validated
        config=dict(model.config),
        created_at=model.created_at,
        updated_at=model.updated_at,
    )


def create_tool(
    project_id: str, name: str, description: str | None, tool_type: str, config: dict[str, Any]
) -> Tool:
    """Create a tool (409 ``NAME_CONFLICT`` when the name is taken in the project)."""
    tool_id = ids.new_id("tool")
    now, created_key = project_scoped.creation_stamp(tool_id)
    row = ToolModel(
        id=tool_id,
        project_id=project_id,
        name=name,
        description=description,
        type=tool_type,
        config=config,
        created_at=now,
        updated_at=now,
        created_key=created_key,
    )
    project_scoped.create(KIND, row)
    return _tool(row)


def find_tool(tool_id: str) -> Tool | None:
    row = project_scoped.find(ToolModel, tool_id)
    return None if row is None else _tool(row)


def get_tool(tool_id: str) -> Tool:
    """The tool, or NotFound."""
    return _tool(project_scoped.get_or_404(ToolModel, KIND, tool_id))


def find_project_tool(project_id: str, tool_id: str) -> Tool | None:
    """The tool when it exists *in this project*: another project's tool reads as missing."""
    row = project_scoped.find_in_project(ToolModel, project_id, tool_id)
    return None if row is None else _tool(row)


def list_tools(project_id: str, window: Window) -> Listing[Tool]:
    return project_scoped.list_by_project(ToolModel, project_id, window, _tool)


def update_tool(current: Tool, changes: dict[str, Any]) -> Tool:
    """Apply ``changes`` (name, description, type, config) to ``current``.

    Conditional on the row still holding what was read (``updated_at``), so two racing
    updates cannot silently undo each other: the loser gets 409 ``CONCURRENT_UPDATE``
    (404 when the tool was deleted meanwhile). ``created_key`` is left as stored.
    """
    merged = current.model_copy(update={**changes, "updated_at": clock.now_iso()})
    actions = [
        ToolModel.name.set(merged.name),
        ToolModel.description.set(merged.description)
        if merged.description is not None
        else ToolModel.description.remove(),
        ToolModel.type.set(merged.type),
        ToolModel.config.set(merged.config),
        ToolModel.updated_at.set(merged.updated_at),
    ]
    try:
        with names.claiming_name(
            KIND, merged.project_id, merged.id, merged.name, previous=current.name
        ) as txn:
            txn.update(
                KIND,
                ToolModel(id=current.id),
                actions=actions,
                condition=ToolModel.updated_at == current.updated_at,
            )
    except TxnRefused as exc:
        raise project_scoped.lost_race(ToolModel, KIND, current.id) from exc
    return merged


def delete_tool(tool: Tool) -> None:
    """Delete the tool and release its name. Scorers naming it then fail at run start."""
    with labelled_transaction() as txn:
        txn.delete(KIND, ToolModel(id=tool.id))
        txn.release_name(tool.project_id, KIND, tool.name)
