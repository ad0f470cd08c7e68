"""What :func:`pawl.evaluate` names on the server, made to match its arguments idempotently.

The agent, the dataset and the eval are one formation (named as the eval), deployed as
``pawl apply`` deploys a template: created the first time, updated only when the plan shows
a change, left alone otherwise. The dataset's items are not formation resources (a template
holds at most 200): they are synced by content instead. An item whose input, expected output
and metadata are already in the dataset keeps its id (so a baseline run pairs with it), a new
one is imported (``items:import``, all or none per chunk), and one no longer asked for is
deleted, after the imports succeeded.

Every HTTP call is in this module's functions taking the client, so the client can change
under them without touching :mod:`pawl.evaluation`.
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pawl.transport import ApiError, PawlClient

Json = dict[str, Any]

#: Marks the formations :func:`pawl.evaluate` made, so it never takes over one from ``pawl apply``.
MADE_BY = {"made_by": "pawl.evaluate"}
AGENT_ID = re.compile(r"^agt_[A-Za-z0-9]{16}$")
DATASET_ID = re.compile(r"^dset_[A-Za-z0-9]{16}$")
ITEMS_PAGE = 100


class EvaluationError(ValueError):
    """An argument of :func:`pawl.evaluate` cannot be used as given (nothing was written)."""


@dataclass(frozen=True)
class DesiredItem:
    #: Where the item came from, for messages: ``item 3`` or ``cases.jsonl line 3``.
    label: str
    body: Json

    @property
    def key(self) -> str:
        return content_key(self.body)


@dataclass(frozen=True)
class Applied:
    """What one call changed on the server (all zero / ``unchanged``: nothing)."""

    formation: str  # "created", "updated" or "unchanged"
    changed_resources: tuple[str, ...]
    items_added: int
    items_removed: int

    @property
    def changed_anything(self) -> bool:
        return self.formation != "unchanged" or bool(self.items_added or self.items_removed)


@dataclass(frozen=True)
class Target:
    """The eval (and the dataset whose items :func:`sync_items` keeps, if it is ours)."""

    eval_id: str
    dataset_id: str
    applied: Applied


# --- reading what the caller names (pure) -------------------------------------------------


def content_key(fields: Mapping[str, Any]) -> str:
    """The item's content as the server stores it (a string input is one user message)."""
    raw_input = fields.get("input")
    if isinstance(raw_input, str):
        messages: Any = [{"role": "user", "content": raw_input}]
    elif isinstance(raw_input, list):
        messages = [
            {"role": m.get("role"), "content": m.get("content")} if isinstance(m, dict) else m
            for m in raw_input
        ]
    else:
        messages = raw_input
    content = {
        "input": messages,
        "expected_output": fields.get("expected_output"),
        "metadata": fields.get("metadata") or {},
    }
    return json.dumps(content, sort_keys=True, ensure_ascii=False)


def items_of_list(items: Sequence[Any]) -> list[DesiredItem]:
    if not items:
        raise EvaluationError("dataset: the list of items is empty")
    desired = []
    for number, item in enumerate(items, start=1):
        if not isinstance(item, Mapping):
            raise EvaluationError(
                f"dataset: item {number} is a {type(item).__name__}, not an object with "
                "'input' (and optionally 'expected_output', 'metadata')"
            )
        desired.append(DesiredItem(f"item {number}", dict(item)))
    return desired


def items_of_file(path: Path) -> list[DesiredItem]:
    """A JSON Lines or CSV file's items, read as ``pawl datasets import`` reads them."""
    from pawl.cli.datasets import FileRefused, file_format, file_lines

    try:
        fmt = file_format(path)
        with path.open("rb") as raw:
            lines = list(file_lines(raw, fmt))
    except FileRefused as exc:
        raise EvaluationError(f"dataset: {exc}") from None
    except OSError as exc:
        raise EvaluationError(f"dataset: cannot read {path}: {exc.strerror}") from None
    desired = []
    for line in lines:
        label = f"{path.name} line {line.number}"
        if line.problem is not None:
            raise EvaluationError(f"dataset: {label}: {line.problem}")
        try:
            fields = json.loads(line.text)
        except json.JSONDecodeError as exc:
            raise EvaluationError(f"dataset: {label}: not valid JSON: {exc.msg}") from None
        if not isinstance(fields, dict):
            raise EvaluationError(f"dataset: {label}: a line must be a JSON object")
        desired.append(DesiredItem(label, fields))
    if not desired:
        raise EvaluationError(f"dataset: {path} holds no items")
    return desired


def dataset_source(dataset: Any) -> str | list[DesiredItem]:
    """An existing dataset's id, or the items the dataset should hold."""
    if isinstance(dataset, str | os.PathLike):
        path = Path(dataset)
        if path.is_file():
            return items_of_file(path)
        if isinstance(dataset, str) and DATASET_ID.match(dataset):
            return dataset
        raise EvaluationError(
            f"dataset: {str(dataset)!r} is neither a file nor a dataset id (dset_...)"
        )
    if isinstance(dataset, Sequence) and not isinstance(dataset, bytes | bytearray):
        return items_of_list(dataset)
    raise EvaluationError(
        f"dataset: expected a list of items, a .jsonl/.csv path or a dataset id, "
        f"got {type(dataset).__name__}"
    )


def agent_source(agent: Any) -> str:
    if isinstance(agent, str) and (AGENT_ID.match(agent) or re.match(r"^https?://", agent)):
        return agent
    raise EvaluationError(f"agent: expected an http(s) URL or an agent id (agt_...), got {agent!r}")


def template_for(
    name: str,
    agent: str,
    dataset: str | None,
    eval_properties: Mapping[str, Any],
    agent_headers: Mapping[str, str] | None = None,
) -> Json:
    """The formation template: an http agent unless ``agent`` is an id, a dataset unless
    ``dataset`` is an id (None: ours), and the eval binding them."""
    resources: Json = {}
    agent_ref: Any = agent
    if not AGENT_ID.match(agent):
        config: Json = {"url": agent}
        if agent_headers:
            config["headers"] = dict(agent_headers)
        properties = {"name": name, "type": "http", "config": config}
        resources["Agent"] = {"type": "agent", "properties": properties}
        agent_ref = {"ref": "Agent"}
    dataset_ref: Any = dataset
    if dataset is None:
        description = "Items kept by pawl.evaluate (synced by content on every call)"
        properties = {"name": name, "description": description}
        resources["Dataset"] = {"type": "dataset", "properties": properties}
        dataset_ref = {"ref": "Dataset"}
    properties = {"name": name, "agent_id": agent_ref, "dataset_id": dataset_ref}
    resources["Eval"] = {"type": "eval", "properties": {**properties, **eval_properties}}
    outputs = {"eval_id": {"ref": "Eval"}, "dataset_id": dataset_ref}
    return {"resources": resources, "outputs": outputs}


def item_changes(
    existing: Mapping[str, list[str]], desired: Sequence[DesiredItem]
) -> tuple[list[DesiredItem], list[str]]:
    """``(to_add, to_delete)``: ``existing`` maps a content key to the ids holding it."""
    remaining = {key: list(ids) for key, ids in existing.items()}
    to_add = []
    for item in desired:
        holders = remaining.get(item.key)
        if holders:
            holders.pop(0)
        else:
            to_add.append(item)
    to_delete = [item_id for ids in remaining.values() for item_id in ids]
    return to_add, to_delete


# --- the server ---------------------------------------------------------------------------


def apply_formation(
    client: PawlClient, name: str, template: Json, project_id: str | None
) -> tuple[Json, Applied]:
    """Create the formation, or update it when its plan changes something."""
    scope = {"project_id": project_id} if project_id else {}
    existing = client.find_formation(name, project_id)
    if existing is None:
        body = {"name": name, "template": template, "metadata": MADE_BY, **scope}
        formation = _deployed(client.create_formation(body))
        created = tuple(sorted(template["resources"]))
        return formation, Applied("created", created, 0, 0)
    if (existing.get("metadata") or {}).get("made_by") != MADE_BY["made_by"]:
        raise EvaluationError(
            f"name: formation {name!r} ({existing['id']}) was not made by pawl.evaluate "
            "(`pawl apply` owns it); give this evaluation another name"
        )
    plan = client.plan_formation({"name": name, "template": template, **scope})
    changed = tuple(c["logical_id"] for c in plan["changes"] if c["action"] != "unchanged")
    if not changed and existing.get("status") == "active":
        return existing, Applied("unchanged", (), 0, 0)
    body = {"template": template, "metadata": MADE_BY}
    return _deployed(client.update_formation(existing["id"], body)), Applied(
        "updated", changed, 0, 0
    )


def _deployed(formation: Json) -> Json:
    if formation.get("status") == "active":
        return formation
    error = formation.get("error") or {}
    where = (error.get("meta") or {}).get("logical_id", "?")
    raise EvaluationError(
        f"the formation {formation.get('name')!r} did not deploy (resource {where}): "
        f"{error.get('code')}: {error.get('message')}"
    )


def _existing_items(client: PawlClient, dataset_id: str) -> dict[str, list[str]]:
    by_key: dict[str, list[str]] = defaultdict(list)
    for item in _paged(client, f"/api/v1/datasets/{dataset_id}/items"):
        by_key[content_key(item)].append(str(item["id"]))
    return by_key


def _paged(client: PawlClient, path: str) -> Iterator[Json]:
    cursor: str | None = None
    while True:
        params: dict[str, str | int] = {
            "limit": ITEMS_PAGE,
            **({"cursor": cursor} if cursor else {}),
        }
        listing = client.send("GET", path, params=params)
        yield from listing["data"]
        cursor = listing.get("next_cursor")
        if not cursor:
            return


def _import(client: PawlClient, dataset_id: str, items: Sequence[DesiredItem]) -> list[str]:
    """Import ``items`` chunk by chunk; a refused chunk deletes what this call added."""
    from pawl.cli.datasets import Line, chunks, roll_back

    lines = [Line(n, json.dumps(item.body).encode()) for n, item in enumerate(items, start=1)]
    added: list[str] = []
    for chunk in chunks(lines):
        try:
            added += client.import_items(dataset_id, chunk.body())["item_ids"]
        except ApiError as exc:
            roll_back(client, dataset_id, added)
            raise EvaluationError(_refusal(exc, [items[n - 1] for n in chunk.numbers])) from None
    return added


def _refusal(exc: ApiError, sent: Sequence[DesiredItem]) -> str:
    problems = exc.meta.get("lines") or []
    if not problems:
        return f"dataset: the items were refused ({exc.status} {exc.code}): {exc.message}"
    named = [f"{sent[int(p['line']) - 1].label}: {p['message']}" for p in problems[:20]]
    return "dataset: nothing changed, the server refused " + "; ".join(named)


def sync_items(
    client: PawlClient, dataset_id: str, desired: Sequence[DesiredItem]
) -> tuple[int, int]:
    """Make the dataset hold exactly ``desired`` (by content); ``(added, removed)``."""
    from pawl.cli.datasets import roll_back

    to_add, to_delete = item_changes(_existing_items(client, dataset_id), desired)
    if to_add:
        _import(client, dataset_id, to_add)
    left = roll_back(client, dataset_id, to_delete)
    if left:
        raise EvaluationError(f"dataset: {len(left)} old items could not be deleted: {left[:5]}")
    return len(to_add), len(to_delete)


def ensure(
    client: PawlClient,
    name: str,
    template: Json,
    items: Sequence[DesiredItem] | None,
    project_id: str | None,
) -> Target:
    """Deploy the formation, then sync the items when the dataset is ours."""
    formation, applied = apply_formation(client, name, template, project_id)
    outputs = formation.get("outputs") or {}
    eval_id, dataset_id = str(outputs["eval_id"]), str(outputs["dataset_id"])
    added = removed = 0
    if items is not None:
        added, removed = sync_items(client, dataset_id, items)
    applied = Applied(applied.formation, applied.changed_resources, added, removed)
    return Target(eval_id, dataset_id, applied)
