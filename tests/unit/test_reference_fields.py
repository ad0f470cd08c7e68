"""Reference fields: the walk that finds them in a request model, and a guard that every
field of every body that names an id is one (or is exempt, with the reason).

The guard walks exactly what the route check walks (each route's body and published
models, every scorer config a plugin registers included), so a ``*_id`` field added to a
body, a nested model or a plugin's config without a :class:`Reference` fails here.
"""

from __future__ import annotations

import typing
from collections.abc import Iterator
from typing import Annotated, Any, Literal, Union

import pytest
from pydantic import BaseModel, Field

from chalicelib import wiring
from chalicelib.api import routing
from chalicelib.errors import Forbidden, NotFound, ValidationFailed
from chalicelib.iam.references import (
    INVOKE_AGENT,
    Reference,
    named_references,
    reads,
    reference_fields,
    refusal,
)
from chalicelib.ids import AgentId, DatasetId, ToolId

#: Fields that name an id and are deliberately not reference fields: (operationId, field).
EXEMPT = {
    # Typed null: policy gating of webhook deliveries is not built, any id is refused (400).
    ("createWebhook", "policy_id"): "only null is accepted: names no resource",
    ("updateWebhook", "policy_id"): "only null is accepted: names no resource",
    ("createApiKey", "policy_ids[]"): "admin-only route: the admin key is never evaluated",
    ("updateApiKey", "policy_ids"): "admin-only route: the admin key is never evaluated",
    ("updateApiKey", "policy_ids[]"): "admin-only route: the admin key is never evaluated",
    # A run of the trigger's own eval, resolved when it fires: a trigger fires as it was
    # authorized when bound, and a manual fire asks triggers:FireTrigger only (iam.md).
    ("createTrigger", "input.baseline_run_id"): "fires as the binding was authorized",
    ("fireTrigger", "input.baseline_run_id"): "fires as the binding was authorized",
    ("createTrigger", "policy_id"): "refused unless null (pawl has no tool-target policies)",
    ("updateTrigger", "policy_id"): "refused unless null (pawl has no tool-target policies)",
    # Opaque caller-side names of an end user (pawl has no actors or sessions): only hashed
    # to keep one caller on one side of a staged rollout, never looked up or stored.
    ("generateAgentResponse", "actor_id"): "an opaque caller-side name, never looked up",
    ("generateAgentResponse", "session_id"): "an opaque caller-side name, never looked up",
}
NAMES_AN_ID = ("_id", "_ids", "Id", "Ref")


def _unwrap(annotation: Any) -> tuple[Any, list[Any]]:
    metadata: list[Any] = []
    while typing.get_origin(annotation) is typing.Annotated:
        annotation, *extra = typing.get_args(annotation)
        metadata += extra
    return annotation, metadata


def leaves(
    annotation: Any, path: str = "", seen: frozenset[Any] = frozenset()
) -> Iterator[tuple[str, bool]]:
    """``(field path, is a reference)`` for every field of a model, unions and lists included."""
    bare, metadata = _unwrap(annotation)
    origin = typing.get_origin(bare)
    if origin in (Union, typing.get_origin(int | None)):
        for member in typing.get_args(bare):
            if member is type(None):
                continue
            yield from leaves(
                typing.Annotated[(member, *metadata)] if metadata else member, path, seen
            )
        return
    if origin in (list, tuple, set):
        for member in typing.get_args(bare):
            yield from leaves(member, f"{path}[]", seen)
        return
    if isinstance(bare, type) and issubclass(bare, BaseModel) and bare not in seen:
        for name, field in bare.model_fields.items():
            wire = field.alias or name
            carried = (
                typing.Annotated[(field.annotation, *field.metadata)]
                if field.metadata
                else field.annotation
            )
            yield from leaves(carried, f"{path}.{wire}" if path else wire, seen | {bare})
        return
    yield path, any(isinstance(m, Reference) for m in metadata)


def routes() -> list[routing.RouteSpec]:
    wiring.blueprints()
    return [r for r in routing.ROUTES if r.body is not None]


def test_every_field_naming_an_id_in_every_body_is_a_reference_or_exempt() -> None:
    unchecked = []
    for spec in routes():
        published = spec.published_body() if spec.published_body else None
        for model in (spec.body, published):
            if model is None:
                continue
            for path, is_reference in leaves(model):
                last = path.rsplit(".", 1)[-1].removesuffix("[]")
                if not last.endswith(NAMES_AN_ID) or is_reference:
                    continue
                if last == "project_id" and "." not in path:
                    continue  # the project a create lands in: the key's scope (403) decides
                if (spec.operation_id, path) not in EXEMPT:
                    unchecked.append(f"{spec.operation_id}: {path}")
    assert sorted(set(unchecked)) == [], (
        "these body fields name an id but are no reference field: annotate them with "
        "chalicelib.iam.references.Reference (docs/iam.md) or exempt them here with a reason"
    )


def test_the_eval_routes_reference_their_agent_dataset_and_every_scorer_resource() -> None:
    by_route = {
        (r.method, r.path): {ref.name: ref.reference.actions for ref in r.references()}
        for r in routes()
    }
    create = by_route[("POST", "/api/v1/evals")]
    assert create["agent_id"] == ("agents:GetAgent", INVOKE_AGENT)
    assert create["dataset_id"] == ("evaluations:GetDataset",)
    assert create["scorers[][type=tool].tool_id"] == ("tools:GetTool",)
    assert create["scorers[][type=decider].decider_id"] == ("deciders:GetDecider",)
    assert create["scorers[][type=llm_judge].ai_provider_id"] == ("ai-providers:GetAiProvider",)
    assert by_route[("PUT", "/api/v1/evals/{eval_id}")] == create
    assert set(by_route[("POST", "/v2/runs")]) == {"agentId", "evalSuiteRef", "baselineRunId"}


# --- the walk, on small models -----------------------------------------------------------------


class _Tool(BaseModel):
    type: Literal["tool"]
    tool_id: Annotated[ToolId, reads("tool", message="{field}: tool {id} not found")]


class _Plain(BaseModel):
    type: Literal["plain"]
    tool_id: str | None = None  # a same-named field of another variant is not a reference


class _Body(BaseModel):
    agent_id: Annotated[AgentId, reads("agent", INVOKE_AGENT, message="agent {id} gone")]
    dataset_id: Annotated[DatasetId, reads("dataset", message="dataset {id} gone")] | None = None
    scorers: list[Annotated[_Tool | _Plain, Field(discriminator="type")]] = []


def test_the_walk_finds_nested_and_discriminated_references_in_declaration_order() -> None:
    table = reference_fields(_Body)
    assert [r.name for r in table] == ["agent_id", "dataset_id", "scorers[][type=tool].tool_id"]


def test_a_body_names_only_well_formed_ids_and_only_in_the_matching_variant() -> None:
    body = {
        "agent_id": "agt_A",
        "dataset_id": None,
        "scorers": [
            {"type": "plain", "tool_id": "tool_NOT_A_REFERENCE"},
            {"type": "tool", "tool_id": "tool_T"},
            {"type": "tool", "tool_id": "not an id"},
        ],
    }
    named = named_references(reference_fields(_Body), body)
    assert [(n.field, n.value) for n in named] == [
        ("agent_id", "agt_A"),
        ("scorers.1.tool_id", "tool_T"),
    ]


def test_a_field_every_variant_declares_alike_is_one_reference() -> None:
    target = Reference("eval", ("evaluations:RunEval",), answer="forbidden")

    class _A(BaseModel):
        type: Literal["a"]
        target_id: Annotated[str, target]

    class _B(BaseModel):
        type: Literal["b"]
        target_id: Annotated[str, target]

    class _Any(BaseModel):
        target_id: Annotated[str, target]

    union = Annotated[_A | _B, Field(discriminator="type")]
    assert [r.name for r in reference_fields(_Any, union)] == ["target_id"]


def test_each_answer_is_the_shape_its_reference_declares() -> None:
    table = reference_fields(_Body)
    agent, scorer_tool = named_references(
        table, {"agent_id": "agt_A", "scorers": [{"type": "tool", "tool_id": "tool_T"}]}
    )
    invalid = refusal(scorer_tool, "tool_T", "tools:GetTool", "srn:proj_P:tool:tool_T", "proj_P")
    assert isinstance(invalid, ValidationFailed)
    assert (invalid.message, invalid.meta) == (
        "scorers.0.tool_id: tool tool_T not found",
        {"field": "scorers.0.tool_id"},
    )
    hidden = Reference("generation", ("generations:GetGeneration",), answer="not_found")
    named = named_references(reference_fields(Annotated[str, hidden]), "gen_G")
    assert isinstance(refusal(named[0], "gen_G", "x:Y", "srn", "proj_P"), NotFound)
    open_ = Reference("eval", ("evaluations:RunEval",), answer="forbidden")
    named = named_references(reference_fields(Annotated[str, open_]), "eval_E")
    assert isinstance(
        refusal(named[0], "eval_E", "evaluations:RunEval", "srn", "proj_P"), Forbidden
    )
    assert agent.resource_id({}, "proj_P") == "agt_A"


def test_a_reference_is_declared_with_what_it_needs() -> None:
    with pytest.raises(ValueError, match="unknown SRN resource type"):
        Reference("dataset_item", ("x:Y",), message="m")
    with pytest.raises(ValueError, match="missing id's message"):
        Reference("dataset", ("evaluations:GetDataset",))
