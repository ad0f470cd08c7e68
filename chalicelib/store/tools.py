"""Tools: one row per tool, names unique per project through a claim row.

Listed oldest first through the ``by_project`` GSI (``created_key`` = ``<created_at>#<id>``).
"""

from __future__ import annotations

from typing import Any

from pynamodb.exceptions import DoesNotExist

from chalicelib import clock, ids
from chalicelib.domain.tools import Tool
from chalicelib.errors import concurrent_update, not_found
from chalicelib.store import names
from chalicelib.store.models import ToolModel
from chalicelib.store.pagination import page_of
from chalicelib.store.transactions import TxnRefused, labelled_transaction

KIND = "tool"
_PROJECT_INDEX_KEYS = {"id", "project_id", "created_key"}


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
    now = clock.now_iso()
    row = ToolModel(
        id=tool_id,
        project_id=project_id,
        name=name,
        description=description,
        type=tool_type,
        config=config,
        created_at=now,
        updated_at=now,
        created_key=f"{now}#{tool_id}",
    )
    names.write_with_claim(KIND, project_id, name, tool_id, [row])
    return _tool(row)


def find_tool(tool_id: str) -> Tool | None:
    try:
        return _tool(ToolModel.get(tool_id, consistent_read=True))
    except DoesNotExist:
        return None


def get_tool(tool_id: str) -> Tool:
    """The tool, or NotFound."""
    tool = find_tool(tool_id)
    if tool is None:
        raise not_found(KIND, tool_id)
    return tool


def find_project_tool(project_id: str, tool_id: str) -> Tool | None:
    """The tool when it exists *in this project*: another project's tool reads as missing."""
    tool = find_tool(tool_id)
    return tool if tool is not None and tool.project_id == project_id else None


def list_tools(project_id: str, limit: int, cursor: str | None) -> tuple[list[Tool], str | None]:
    return page_of(
        lambda last, n: ToolModel.by_project.query(project_id, limit=n, last_evaluated_key=last),
        cursor,
        _PROJECT_INDEX_KEYS,
        _tool,
        limit,
    )


def update_tool(current: Tool, changes: dict[str, Any]) -> Tool:
    """Apply ``changes`` (name, description, type, config) to ``current``.

    Conditional on the row still holding what was read (``updated_at``), so two racing
    updates cannot silently undo each other: the loser gets 409 ``CONCURRENT_UPDATE``.
    """
    merged = current.model_copy(update={**changes, "updated_at": clock.now_iso()})
    row = ToolModel(
        id=merged.id,
        project_id=merged.project_id,
        name=merged.name,
        description=merged.description,
        type=merged.type,
        config=merged.config,
        created_at=merged.created_at,
        updated_at=merged.updated_at,
        created_key=f"{merged.created_at}#{merged.id}",
    )
    try:
        with names.claiming_name(
            KIND, merged.project_id, merged.id, merged.name, previous=current.name
        ) as txn:
            txn.save(KIND, row, condition=ToolModel.updated_at == current.updated_at)
    except TxnRefused as exc:
        raise concurrent_update(KIND, current.id) from exc
    return merged


def delete_tool(tool: Tool) -> None:
    """Delete the tool and release its name. Scorers naming it then fail at run start."""
    with labelled_transaction() as txn:
        txn.delete(KIND, ToolModel(id=tool.id))
        txn.release_name(tool.project_id, KIND, tool.name)
