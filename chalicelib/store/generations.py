"""Generations: one row per agent call, with large outputs and objects in S3."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from pynamodb.exceptions import DoesNotExist

from chalicelib.domain.runs import Generation, RecordedError
from chalicelib.errors import not_found
from chalicelib.store import blobs, usage
from chalicelib.store.base import serialized_writes, transaction
from chalicelib.store.models import GenerationModel
from chalicelib.store.pagination import Listing, Partition, Window, page_of


@dataclass(frozen=True)
class GenerationRow:
    """A generation ready to write: the row, and the blobs already put for it."""

    model: GenerationModel
    blob_keys: list[str]


def _json_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode("utf-8"))


def to_row(generation: Generation) -> GenerationRow:
    """Build the row, first moving an output or object that is too large to S3."""
    blob_keys: list[str] = []
    output, output_s3_key = generation.output, None
    object_value, object_s3_key = generation.object, None
    if object_value is not None and _json_size(object_value) > blobs.ROW_BUDGET_BYTES // 2:
        object_s3_key = blobs.object_key(generation.id)
        blobs.put_text(object_s3_key, json.dumps(object_value), "application/json")
        blob_keys.append(object_s3_key)
        object_value = None
    others = _json_size(generation.input) + (_json_size(object_value) if object_value else 0)
    if blobs.should_offload(output, others):
        assert output is not None
        output_s3_key = blobs.output_key(generation.id)
        blobs.put_text(output_s3_key, output)
        blob_keys.append(output_s3_key)
        output = None
    model = GenerationModel(
        id=generation.id,
        project_id=generation.project_id,
        agent_id=generation.agent_id,
        agent_version=generation.agent_version,
        run_id=generation.run_id,
        dataset_item_id=generation.dataset_item_id,
        input=generation.input,
        output=output,
        output_s3_key=output_s3_key,
        object=object_value,
        object_s3_key=object_s3_key,
        status=generation.status,
        error=generation.error.model_dump() if generation.error else None,
        usage=generation.usage,
        latency_ms=generation.latency_ms,
        source=generation.source,
        content_purged=False,
        created_at=generation.created_at,
    )
    return GenerationRow(model=model, blob_keys=blob_keys)


def to_eval_row(generation: Generation, result_partition: str, result_key: str) -> GenerationRow:
    """An eval generation's row without the content its result row holds (input, output):
    the metadata, the structured ``object`` (which the result does not keep) and where the
    result is. One copy of the content, not two; :func:`with_result_content` reads it back."""
    row = to_row(generation.model_copy(update={"input": None, "output": None}))
    row.model.result_partition = result_partition
    row.model.result_key = result_key
    return row


def with_result_content(models: list[GenerationModel]) -> list[GenerationModel]:
    """Fill the input and output of eval generations kept on their result rows (one
    BatchGetItem per 100 of them); purged ones stay empty."""
    lean = [m for m in models if m.result_key and m.result_partition and not m.content_purged]
    if not lean:
        return models
    from chalicelib.store.models import ResultModel  # results imports this module

    wanted = list(dict.fromkeys((m.result_partition, m.result_key) for m in lean))
    found: dict[tuple[str, str], Any] = {}
    attributes = ["run_id", "result_key", "input", "output", "output_s3_key"]
    for start in range(0, len(wanted), _BATCH_GET):
        for result in ResultModel.batch_get(
            wanted[start : start + _BATCH_GET], consistent_read=True, attributes_to_get=attributes
        ):
            found[(result.run_id, result.result_key)] = result
    for model in lean:
        held = found.get((model.result_partition, model.result_key))
        if held is not None:
            model.input = held.input
            model.output = held.output
            model.output_s3_key = held.output_s3_key
    return models


def from_model(model: GenerationModel, with_blobs: bool = True) -> Generation:
    output = model.output
    if output is None and model.output_s3_key and with_blobs:
        output = blobs.get_text(model.output_s3_key)
    object_value = model.object
    if object_value is None and model.object_s3_key and with_blobs:
        raw = blobs.get_text(model.object_s3_key)
        object_value = json.loads(raw) if raw is not None else None
    return Generation(
        id=model.id,
        project_id=model.project_id,
        agent_id=model.agent_id,
        agent_version=int(model.agent_version),
        run_id=model.run_id,
        dataset_item_id=model.dataset_item_id,
        input=model.input,
        output=output,
        object=object_value,
        status=model.status,
        error=RecordedError.model_validate(model.error) if model.error else None,
        usage=model.usage,
        latency_ms=int(model.latency_ms or 0),
        source=model.source,
        content_purged=bool(model.content_purged),
        created_at=model.created_at,
    )


def create(generation: Generation) -> Generation:
    """Write one generation on its own (an agent called outside an eval), with its usage
    event when it reported usage (one call either way)."""
    row = to_row(generation)
    usage_row = usage.generation_row(generation)
    if usage_row is None:
        with serialized_writes():
            row.model.save(condition=GenerationModel.id.does_not_exist())
        return generation
    with transaction() as txn:
        txn.save(row.model, condition=GenerationModel.id.does_not_exist())
        txn.save(usage_row)
    return generation


def get(generation_id: str) -> Generation:
    try:
        model = GenerationModel.get(generation_id, consistent_read=True)
    except DoesNotExist:
        raise not_found("generation", generation_id) from None
    return from_model(with_result_content([model])[0])


def purge_content(generation_id: str) -> list[str]:
    """Clear input, output and object; the row and its metadata stay.

    Returns the S3 keys that held its content: the caller deletes them once every row
    that pointed at them (the linked results too) no longer does.
    """
    try:
        model = GenerationModel.get(generation_id, consistent_read=True)
    except DoesNotExist:
        raise not_found("generation", generation_id) from None
    keys = [k for k in (model.output_s3_key, model.object_s3_key) if k]
    if model.result_key and not model.content_purged:
        # The output is its result's (cleared there by the caller): its blob goes too.
        held = with_result_content([model])[0].output_s3_key
        keys += [held] if held and held not in keys else []
    with serialized_writes():
        model.update(
            actions=[
                GenerationModel.input.remove(),
                GenerationModel.output.remove(),
                GenerationModel.output_s3_key.remove(),
                GenerationModel.object.remove(),
                GenerationModel.object_s3_key.remove(),
                GenerationModel.content_purged.set(True),
            ],
            condition=GenerationModel.id.exists(),
        )
    return keys


_BATCH_GET = 100


def latencies(generation_ids: list[str]) -> dict[str, int]:
    """``latency_ms`` of each generation found, by id (BatchGetItem, 100 keys a call)."""
    found: dict[str, int] = {}
    unique = list(dict.fromkeys(generation_ids))
    for start in range(0, len(unique), _BATCH_GET):
        keys = unique[start : start + _BATCH_GET]
        for row in GenerationModel.batch_get(keys, attributes_to_get=["id", "latency_ms"]):
            found[row.id] = int(row.latency_ms or 0)
    return found


# --- listing, counting and deleting an agent's generations -------------------------------------

_PROJECT_KEYS = frozenset({"id", "project_id", "created_at"})
_AGENT_KEYS = frozenset({"id", "agent_id", "created_at"})
_DELETE_OBJECTS = 1000


def list_generations(
    project_id: str, window: Window, agent_id: str | None = None, status: str | None = None
) -> Listing[Generation]:
    """One page of a project's generations, newest first, optionally of one agent and in
    one status: a query of the ``by_project`` (or ``by_agent``) index, whose projected
    ``status`` (and ``project_id``) the filter reads, then one BatchGetItem for the page's rows.
    """
    only: Any = None if status is None else GenerationModel.status == status
    if agent_id is None:
        source = Partition(GenerationModel.by_project, project_id, _PROJECT_KEYS, forward=False)
    else:
        in_project = GenerationModel.project_id == project_id  # ids are global; belt and braces
        only = in_project if only is None else only & in_project
        source = Partition(GenerationModel.by_agent, agent_id, _AGENT_KEYS, forward=False)
    keys = page_of(replace(source, only=only), window, lambda row: str(row.id))
    rows = {row.id: row for row in with_result_content(_batch_get(keys.items))}
    return keys.with_items([from_model(rows[i]) for i in keys.items if i in rows])


def _batch_get(generation_ids: list[str]) -> list[GenerationModel]:
    found: list[GenerationModel] = []
    for start in range(0, len(generation_ids), _BATCH_GET):
        found.extend(GenerationModel.batch_get(generation_ids[start : start + _BATCH_GET]))
    return found


def count_for_agent(agent_id: str) -> int:
    """How many generations the agent has (``Select=COUNT`` over its ``by_agent`` entries)."""
    return int(GenerationModel.by_agent.count(agent_id))


def delete_for_agent(agent_id: str) -> int:
    """Delete every generation of the agent (BatchWriteItem, 25 a call); returns how many.

    The blobs go too, except an eval generation's output: its result points at the same
    key (``store/results.py``), and a run keeps its results whole.
    """
    deleted = 0
    blob_keys: list[str] = []
    with GenerationModel.batch_write() as batch:
        for entry in GenerationModel.by_agent.query(agent_id):
            batch.delete(GenerationModel(id=entry.id))
            if entry.object_s3_key:
                blob_keys.append(entry.object_s3_key)
            if entry.output_s3_key and entry.run_id is None:
                blob_keys.append(entry.output_s3_key)
            deleted += 1
    for start in range(0, len(blob_keys), _DELETE_OBJECTS):  # S3 takes 1,000 keys a call
        blobs.delete(blob_keys[start : start + _DELETE_OBJECTS])
    return deleted
