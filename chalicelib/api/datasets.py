"""Datasets and dataset items (``/api/v1/datasets``)."""

from __future__ import annotations

from typing import Any, Literal

from chalice import Blueprint
from pydantic import Field

from chalicelib.api.access import on, on_collection
from chalicelib.api.auth import Caller
from chalicelib.api.common import refuse_nulls, target_project
from chalicelib.api.routing import Call, ListQuery, NamedListQuery, endpoint, page
from chalicelib.domain.base import Page, RequestBody
from chalicelib.domain.catalog import Dataset, DatasetItem
from chalicelib.ids import ProjectId
from chalicelib.store import datasets

bp = Blueprint(__name__)

TAG = "datasets"
NAME = Field(min_length=1, max_length=200)
DESCRIPTION = Field(None, max_length=10_000)


class MessageBody(RequestBody):
    """One input message, replayed verbatim to the agent."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str


class CreateDataset(RequestBody):
    project_id: ProjectId | None = Field(None, description="Required with the admin key")
    name: str = NAME
    description: str | None = DESCRIPTION


class UpdateDataset(RequestBody):
    name: str | None = Field(None, min_length=1, max_length=200)
    description: str | None = DESCRIPTION


class CreateItem(RequestBody):
    input: list[MessageBody] = Field(min_length=1)
    expected_output: str | None = None
    metadata: dict[str, Any] | None = Field(None, description="Free-form tags; null means {}")


class UpdateItem(RequestBody):
    input: list[MessageBody] | None = Field(None, min_length=1)
    expected_output: str | None = None
    metadata: dict[str, Any] | None = Field(None, description="null resets to {}")


class ItemsQuery(ListQuery):
    """pawl adds ``q`` to SOAT's list: only the items whose input or expected output
    contains that text, in any case (a pawl addition; ``store.datasets.search_text``)."""

    q: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="only items whose input or expected output contains this text, in "
        "any case (a pawl addition; an item written before search was case-insensitive, "
        "until it is next updated, or whose text passes 32 KiB is matched case-sensitively)",
    )


def visible_dataset(caller: Caller, dataset_id: str) -> Dataset:
    dataset = datasets.get_dataset(dataset_id)
    caller.check_visible(dataset.project_id, "dataset", dataset.id)
    return dataset


# --- datasets -------------------------------------------------------------------------------


@endpoint(
    bp,
    "/api/v1/datasets",
    "POST",
    access=on_collection("evaluations:CreateDataset", "dataset"),
    body=CreateDataset,
    response=Dataset,
    status=201,
    tag=TAG,
    operation_id="createDataset",
)
def create_dataset(call: Call[CreateDataset, Any]) -> Dataset:
    """Create a dataset (name unique in the project)."""
    project_id = target_project(call.caller, call.body.project_id)
    return datasets.create_dataset(project_id, call.body.name, call.body.description)


@endpoint(
    bp,
    "/api/v1/datasets",
    "GET",
    access=on_collection("evaluations:ListDatasets", "dataset"),
    query=NamedListQuery,
    response=Page[Dataset],
    tag=TAG,
    operation_id="listDatasets",
)
def list_datasets(call: Call[Any, NamedListQuery]) -> dict[str, Any]:
    """List a project's datasets, oldest first (``?name=``: the one of that name)."""
    project_id = call.caller.listing_project(call.query.project_id)
    return page(datasets.list_datasets(project_id, call.query.window(), call.query.name))


@endpoint(
    bp,
    "/api/v1/datasets/{dataset_id}",
    "GET",
    access=on("evaluations:GetDataset", "dataset_id"),
    response=Dataset,
    tag=TAG,
    operation_id="getDataset",
)
def get_dataset(call: Call[Any, Any]) -> Dataset:
    """Get a dataset."""
    return visible_dataset(call.caller, call.path["dataset_id"])


@endpoint(
    bp,
    "/api/v1/datasets/{dataset_id}",
    "PUT",
    access=on("evaluations:CreateDataset", "dataset_id"),
    body=UpdateDataset,
    response=Dataset,
    tag=TAG,
    operation_id="updateDataset",
)
def update_dataset(call: Call[UpdateDataset, Any]) -> Dataset:
    """Rename a dataset and/or change its description (null clears the description)."""
    refuse_nulls(call.body, "name")
    dataset = visible_dataset(call.caller, call.path["dataset_id"])
    changes: dict[str, Any] = {"name": call.body.name}
    if "description" in call.body.model_fields_set:
        changes["description"] = call.body.description
    return datasets.update_dataset(dataset, **changes)


@endpoint(
    bp,
    "/api/v1/datasets/{dataset_id}",
    "DELETE",
    access=on("evaluations:DeleteDataset", "dataset_id"),
    status=204,
    tag=TAG,
    operation_id="deleteDataset",
)
def delete_dataset(call: Call[Any, Any]) -> None:
    """Delete a dataset, its items and the evals bound to it."""
    datasets.delete_dataset(visible_dataset(call.caller, call.path["dataset_id"]))


# --- items ----------------------------------------------------------------------------------

ITEMS = "/api/v1/datasets/{dataset_id}/items"
ITEM = "/api/v1/datasets/{dataset_id}/items/{item_id}"


@endpoint(
    bp,
    ITEMS,
    "POST",
    access=on("evaluations:CreateDataset", "dataset_id"),
    body=CreateItem,
    response=DatasetItem,
    status=201,
    tag=TAG,
    operation_id="createDatasetItem",
)
def create_item(call: Call[CreateItem, Any]) -> DatasetItem:
    """Add a test case to a dataset."""
    dataset = visible_dataset(call.caller, call.path["dataset_id"])
    body = call.body
    return datasets.create_item(
        dataset.id,
        dataset.project_id,
        [m.model_dump() for m in body.input],
        body.expected_output,
        body.metadata or {},
    )


@endpoint(
    bp,
    ITEMS,
    "GET",
    access=on("evaluations:ListDatasets", "dataset_id"),
    query=ItemsQuery,
    response=Page[DatasetItem],
    tag=TAG,
    operation_id="listDatasetItems",
)
def list_items(call: Call[Any, ItemsQuery]) -> dict[str, Any]:
    """List a dataset's items, oldest first (``?q=``: those containing the text)."""
    dataset = visible_dataset(call.caller, call.path["dataset_id"])
    return page(datasets.list_items(dataset.id, call.query.window(), call.query.q))


@endpoint(
    bp,
    ITEM,
    "GET",
    access=on("evaluations:GetDataset", "dataset_id"),
    response=DatasetItem,
    tag=TAG,
    operation_id="getDatasetItem",
)
def get_item(call: Call[Any, Any]) -> DatasetItem:
    """Get a dataset item."""
    dataset = visible_dataset(call.caller, call.path["dataset_id"])
    return datasets.get_item(dataset.id, call.path["item_id"])


@endpoint(
    bp,
    ITEM,
    "PUT",
    access=on("evaluations:CreateDataset", "dataset_id"),
    body=UpdateItem,
    response=DatasetItem,
    tag=TAG,
    operation_id="updateDatasetItem",
)
def update_item(call: Call[UpdateItem, Any]) -> DatasetItem:
    """Update a dataset item (past results keep their frozen copies)."""
    refuse_nulls(call.body, "input")
    dataset = visible_dataset(call.caller, call.path["dataset_id"])
    item = datasets.get_item(dataset.id, call.path["item_id"])
    body, given = call.body, call.body.model_fields_set
    changes: dict[str, Any] = {}
    if body.input is not None:
        changes["input"] = [m.model_dump() for m in body.input]
    if "expected_output" in given:
        changes["expected_output"] = body.expected_output
    if "metadata" in given:
        changes["metadata"] = body.metadata or {}
    return datasets.update_item(item, **changes)


@endpoint(
    bp,
    ITEM,
    "DELETE",
    access=on("evaluations:CreateDataset", "dataset_id"),
    status=204,
    tag=TAG,
    operation_id="deleteDatasetItem",
)
def delete_item(call: Call[Any, Any]) -> None:
    """Delete a dataset item (past results keep their frozen copies)."""
    dataset = visible_dataset(call.caller, call.path["dataset_id"])
    datasets.delete_item(dataset.id, call.path["item_id"])
