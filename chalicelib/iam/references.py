"""Reference fields: a request field that names another resource the caller must be allowed
to use, declared on the request model itself.

A field is a reference when its annotation carries a :class:`Reference`
(``agent_id: Annotated[AgentId, Reference("agent", (...))]``). :func:`reference_fields`
walks a request model (nested models, lists, discriminated unions such as an eval's scorer
configs) and lists every such field with its path, so the table the route check reads and
the table the policy matrix generates its cases from are the same object, derived from the
models: a new reference field is checked, and tested, the moment it is declared.

:func:`named_references` finds the ids a concrete (already valid) body names at those paths;
:func:`refusal` is what a caller without the grant gets. Pure: no I/O, no caller; the HTTP
edge (``api/references.py``) asks the policy.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Union

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from chalicelib import ids
from chalicelib.errors import Forbidden, NotFound, PawlError, ValidationFailed
from chalicelib.iam.srn import RESOURCE_TYPES

#: How a denied reference answers. ``invalid``: the 400 a missing id of that kind gets in
#: that body (``message``, ``code``); ``not_found``: the resource's own 404; ``forbidden``:
#: 403 naming the action and the SRN (a binding the caller may see but not make).
Answer = Literal["invalid", "not_found", "forbidden"]

#: Read actions, by SRN resource type: what "the caller may read it" means.
READ_ACTIONS: dict[str, str] = {
    "agent": "agents:GetAgent",
    "dataset": "evaluations:GetDataset",
    "eval": "evaluations:GetEval",
    "tool": "tools:GetTool",
    "decider": "deciders:GetDecider",
    "ai-provider": "ai-providers:GetAiProvider",
    "generation": "generations:GetGeneration",
    "formation": "formations:GetFormation",
    "webhook": "webhooks:GetWebhook",
    "trigger": "triggers:GetTrigger",
    "secret": "secrets:GetSecret",
}
#: Calling an agent (a run does, for every item).
INVOKE_AGENT = "agents:CreateAgentGeneration"


@dataclass(frozen=True)
class Reference:
    """Annotation metadata: the field names a ``resource_type`` resource (an SRN type) on
    which the caller needs every one of ``actions``.

    ``message`` (for ``invalid``) may use ``{id}`` (the resource's), ``{value}`` (the
    field's), ``{field}`` (where it sits in the body, ``scorers.0.tool_id``) and
    ``{project}``; it must be word for word what the handler answers for a missing id
    there, which the policy matrix checks.

    ``scope`` says where the resource's id is: ``""`` the field's value is it;
    ``"project"`` the caller's project (what has no SRN type of its own: a ``/v2`` run);
    ``"path:<param>"`` the resource the path parameter names (a baseline is a run of the
    path's eval); ``"eval:<field>"`` that field of the eval a run starts (an explicit
    ``agent_version`` is a version of the eval's agent), which only the run start knows.
    With a scope, ``value_kind`` is the kind of id the value must be (None: any value).
    ``names_field``: whether the missing id's 400 names the field (``meta.field``).
    """

    resource_type: str
    actions: tuple[str, ...]
    answer: Answer = "invalid"
    message: str = ""
    code: str | None = None
    scope: str = ""
    value_kind: str | None = None
    names_field: bool = True

    def __post_init__(self) -> None:
        if self.resource_type not in RESOURCE_TYPES:
            raise ValueError(f"unknown SRN resource type {self.resource_type!r}")
        if not self.actions:
            raise ValueError("a reference needs at least one action")
        if self.answer == "invalid" and not self.message:
            raise ValueError("an invalid-answer reference needs the missing id's message")

    @property
    def kind(self) -> str:
        """The kind of id (``chalicelib.ids``) of the resource."""
        return RESOURCE_TYPES[self.resource_type]

    def names_something(self, value: Any) -> bool:
        """Whether ``value`` can name a resource here (anything else the handler refuses)."""
        if not self.scope:
            return isinstance(value, str) and ids.is_id(self.kind, value)
        if self.value_kind is not None:
            return isinstance(value, str) and ids.is_id(self.value_kind, value)
        return value is not None and not isinstance(value, bool)


def reads(resource_type: str, *more: str, **answer: Any) -> Reference:
    """A reference needing read on the resource (and ``more`` actions after it)."""
    return Reference(resource_type, (READ_ACTIONS[resource_type], *more), **answer)


#: A path step into a list's elements.
EACH = "[]"


@dataclass(frozen=True)
class Condition:
    """The object ``depth`` steps down the path must have ``key`` equal to ``value``: the
    variant of a discriminated union the field belongs to (a scorer of ``type: tool``)."""

    depth: int
    key: str
    value: Any


@dataclass(frozen=True)
class ReferenceField:
    """One reference of a request model: where it sits and what it needs."""

    path: tuple[str, ...]
    reference: Reference
    conditions: tuple[Condition, ...] = ()

    @property
    def name(self) -> str:
        """``scorers[].tool_id`` (a variant's condition in brackets: ``[type=tool]``)."""
        parts: list[str] = []
        for depth, step in enumerate(self.path):
            shown = "[]" if step == EACH else ("." if parts else "") + step
            parts.append(shown)
            for c in self.conditions:
                if c.depth == depth + 1:
                    parts.append(f"[{c.key}={c.value}]")
        return "".join(parts)


# --- walking a model --------------------------------------------------------------------------


def _unwrap(annotation: Any) -> tuple[Any, list[Any]]:
    """``(bare type, metadata)`` of ``Annotated[...]`` layers."""
    metadata: list[Any] = []
    while typing.get_origin(annotation) is typing.Annotated:
        annotation, *extra = typing.get_args(annotation)
        metadata += extra
    return annotation, metadata


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _literal_of(model: type[BaseModel], key: str) -> Any:
    field = model.model_fields.get(key)
    if field is None:
        return None
    bare, _ = _unwrap(field.annotation)
    values = typing.get_args(bare) if typing.get_origin(bare) is Literal else ()
    return values[0] if len(values) == 1 else None


def _discriminator(metadata: list[Any], variants: list[type[BaseModel]]) -> str | None:
    for item in metadata:
        if isinstance(item, FieldInfo) and isinstance(item.discriminator, str):
            return item.discriminator
    if len(variants) > 1 and all(_literal_of(v, "type") is not None for v in variants):
        return "type"
    return None


def _walk(
    annotation: Any, path: tuple[str, ...], conditions: tuple[Condition, ...], seen: frozenset[Any]
) -> Iterator[ReferenceField]:
    bare, metadata = _unwrap(annotation)
    for item in metadata:
        if isinstance(item, Reference):
            yield ReferenceField(path, item, conditions)
    origin = typing.get_origin(bare)
    if origin in (Union, types.UnionType):
        members = [m for m in typing.get_args(bare) if m is not type(None)]
        models = [m for m in members if _is_model(_unwrap(m)[0])]
        key = _discriminator(metadata, [_unwrap(m)[0] for m in models])
        for member in members:
            member_type = _unwrap(member)[0]
            value = _literal_of(member_type, key) if key and _is_model(member_type) else None
            extra = (Condition(len(path), key, value),) if key and value is not None else ()
            yield from _walk(member, path, conditions + extra, seen)
    elif origin in (list, tuple, set, frozenset):
        for member in typing.get_args(bare):
            if member is not Ellipsis:
                yield from _walk(member, (*path, EACH), conditions, seen)
    elif _is_model(bare) and bare not in seen:
        for name, field in bare.model_fields.items():
            wire = field.alias or name
            yield from _walk(_annotated(field), (*path, wire), conditions, seen | {bare})


def _annotated(field: FieldInfo) -> Any:
    """A model field's annotation with its field-level metadata put back on it."""
    if not field.metadata:
        return field.annotation
    return typing.Annotated[(field.annotation, *field.metadata)]


def reference_fields(*annotations: Any) -> list[ReferenceField]:
    """Every reference field of the given request models (or unions of them), deduplicated,
    in declaration order."""
    found: dict[tuple[Any, ...], ReferenceField] = {}
    for annotation in annotations:
        if annotation is None:
            continue
        for ref in _walk(annotation, (), (), frozenset()):
            found.setdefault((ref.path, ref.conditions, ref.reference), ref)
    unconditional = {(r.path, r.reference) for r in found.values() if not r.conditions}
    # A field every variant declares alike (a trigger's target_id) is one reference.
    return [
        r for r in found.values() if not r.conditions or (r.path, r.reference) not in unconditional
    ]


# --- a concrete body --------------------------------------------------------------------------


@dataclass(frozen=True)
class Named:
    """A value a body holds at a reference field."""

    field: str  # where, as a validation error names it: ``scorers.0.tool_id``
    value: Any
    of: ReferenceField

    def resource_id(self, context: Mapping[str, str], project_id: str) -> str | None:
        """The id of the resource the value names (None: the context does not know it)."""
        scope = self.of.reference.scope
        if not scope:
            return str(self.value)
        if scope == "project":
            return project_id
        return context.get(scope)


def _holds(value: Any, conditions: tuple[Condition, ...], depth: int) -> bool:
    wanted = [c for c in conditions if c.depth == depth]
    if not wanted:
        return True
    return isinstance(value, Mapping) and all(value.get(c.key) == c.value for c in wanted)


def _joined(where: str, step: Any) -> str:
    return f"{where}.{step}" if where else str(step)


def _collect(value: Any, ref: ReferenceField, depth: int, where: str) -> Iterator[Named]:
    if not _holds(value, ref.conditions, depth):
        return
    if depth == len(ref.path):
        if ref.reference.names_something(value):
            yield Named(where, value, ref)
        return  # anything else names nothing of the kind: the handler refuses it as today
    step = ref.path[depth]
    if step == EACH:
        if isinstance(value, list):
            for index, child in enumerate(value):
                yield from _collect(child, ref, depth + 1, _joined(where, index))
    elif isinstance(value, Mapping) and step in value:
        yield from _collect(value[step], ref, depth + 1, _joined(where, step))


def named_references(table: list[ReferenceField], body: Any) -> list[Named]:
    """The ids ``body`` (plain JSON values) names at the table's fields, in table order."""
    return [named for ref in table for named in _collect(body, ref, 0, "")]


def refusal(
    named: Named, resource_id: str, action: str, resource_srn: str, project_id: str
) -> PawlError:
    """What a caller without ``action`` on the named resource gets."""
    reference = named.of.reference
    if reference.answer == "forbidden":
        return Forbidden(
            f"this API key may not {action} on {resource_srn}", action=action, resource=resource_srn
        )
    if reference.answer == "not_found":
        kind = reference.kind
        return NotFound(f"{kind} {resource_id} not found", resource_type=kind, id=resource_id)
    message = reference.message.format(
        id=resource_id, value=named.value, field=named.field, project=project_id
    )
    where = named.field if reference.names_field else None
    return ValidationFailed(message, field=where, code=reference.code)
