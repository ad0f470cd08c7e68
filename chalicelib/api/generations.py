"""Generations: list and read them, call an agent outside an eval, curate one into a
dataset, purge one."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from chalice import Blueprint
from pydantic import Field

from chalicelib.api.access import on, on_collection
from chalicelib.api.routing import Call, ProjectListQuery, endpoint, page
from chalicelib.domain.base import Page, RequestBody
from chalicelib.domain.catalog import DatasetItem, Message
from chalicelib.domain.runs import Generation
from chalicelib.engine import generations as service
from chalicelib.errors import not_found
from chalicelib.iam.references import reads
from chalicelib.ids import AgentId, GenerationId
from chalicelib.store import agents, datasets, generations, pagination

bp = Blueprint(__name__)

TAG = "generations"


class Generate(RequestBody):
    input: list[Message] = Field(min_length=1)
    tool_context: dict[str, str] | None = None
    #: pawl additions: who the call is for. During a staged rollout the same actor (else the
    #: same session) is always served the same version; a call naming neither is split
    #: randomly. Neither is stored.
    actor_id: str | None = Field(None, min_length=1, max_length=200)
    session_id: str | None = Field(None, min_length=1, max_length=200)


class ItemFromGeneration(RequestBody):
    #: Curating copies a generation: the caller must be able to read it, or it reads as
    #: missing (404).
    generation_id: Annotated[GenerationId, reads("generation", answer="not_found")]
    expected_output: str | None = None
    metadata: dict[str, Any] | None = None


class GenerationListQuery(ProjectListQuery):
    """SOAT's filters of ``list-generations``, with pawl's cursor beside its offset."""

    agent_id: AgentId | None = Field(None, description="Only this agent's generations")
    trace_id: str | None = Field(
        None, min_length=1, max_length=200, description="pawl records no traces: matches none"
    )
    initiator_generation_id: GenerationId | None = Field(
        None, description="pawl's generations are all top-level: matches none"
    )
    status: Literal["in_progress", "requires_action", "completed", "failed"] | None = None


def _visible_generation(call: Call[Any, Any], generation_id: str) -> Generation:
    generation = generations.get(generation_id)
    call.caller.check_visible(generation.project_id, "generation", generation.id)
    return generation


@endpoint(
    bp,
    "/api/v1/generations",
    "GET",
    access=on_collection(
        "generations:ListGenerations", "generation", narrowed_by=("agent_id", "agent")
    ),
    query=GenerationListQuery,
    response=Page[Generation],
    tag=TAG,
    operation_id="listGenerations",
)
def list_generations(call: Call[Any, GenerationListQuery]) -> dict[str, Any]:
    """List a project's generations, newest first, by agent and status.

    A key may list every generation (``srn:<project>:generation:*``) or, with
    ``?agent_id=``, one agent's (``srn:<project>:agent:<agent_id>``).
    """
    query = call.query
    project_id = call.caller.listing_project(query.project_id)
    if query.trace_id is not None or query.initiator_generation_id is not None:
        # No generation pawl records has a trace or an initiator: nothing to read.
        scope = f"generations-none|{project_id}"
        return page(pagination.listing_of([], query.window(), scope))
    listing = generations.list_generations(
        project_id, query.window(), agent_id=query.agent_id, status=query.status
    )
    return page(listing)


@endpoint(
    bp,
    "/api/v1/generations/{generation_id}",
    "GET",
    access=on("generations:GetGeneration", "generation_id"),
    response=Generation,
    tag=TAG,
    operation_id="getGeneration",
)
def get_generation(call: Call[Any, Any]) -> Generation:
    """Get a generation, its output read back whole."""
    return _visible_generation(call, call.path["generation_id"])


@endpoint(
    bp,
    "/api/v1/agents/{agent_id}/generate",
    "POST",
    access=on("agents:CreateAgentGeneration", "agent_id"),
    body=Generate,
    response=Generation,
    status=201,
    tag=TAG,
    operation_id="generateAgentResponse",
)
def generate(call: Call[Generate, Any]) -> Generation:
    """Run the agent once, outside any eval, and record the generation and the version that
    served it (during a staged rollout: the canary for ``canary_percent`` of callers)."""
    agent = agents.get_agent(call.path["agent_id"])
    call.caller.check_visible(agent.project_id, "agent", agent.id)
    body = call.body
    messages = [m.model_dump() for m in body.input]
    assignment = body.actor_id or body.session_id
    return service.generate(agent, messages, body.tool_context or {}, assignment)


@endpoint(
    bp,
    "/api/v1/datasets/{dataset_id}/items/from-generation",
    "POST",
    access=on("evaluations:CreateDataset", "dataset_id"),
    body=ItemFromGeneration,
    response=DatasetItem,
    status=201,
    tag=TAG,
    operation_id="createDatasetItemFromGeneration",
)
def create_item_from_generation(call: Call[ItemFromGeneration, Any]) -> DatasetItem:
    """Copy a completed generation of the same project into the dataset as a new item."""
    dataset = datasets.get_dataset(call.path["dataset_id"])
    call.caller.check_visible(dataset.project_id, "dataset", dataset.id)
    body = call.body
    generation = _visible_generation(call, body.generation_id)
    if generation.project_id != dataset.project_id:
        raise not_found("generation", generation.id)  # reads as missing across projects
    expected = (
        body.expected_output if "expected_output" in body.model_fields_set else service.OMITTED
    )
    return service.curate(dataset, generation, expected, body.metadata)


@endpoint(
    bp,
    "/api/v1/generations/{generation_id}/content",
    "DELETE",
    access=on("generations:DeleteGenerationContent", "generation_id"),
    status=204,
    tag=TAG,
    operation_id="deleteGenerationContent",
)
def purge_generation_content(call: Call[Any, Any]) -> None:
    """Erase a generation's input, output and object, and the output copies on results."""
    service.purge_content(_visible_generation(call, call.path["generation_id"]))
