"""A formation template: its shape, its parameters, its expressions and its order.

Expressions are one-key objects: ``{"ref": "LogicalId"}`` (the resource's public id),
``{"param": "Name"}`` (a parameter's value) and ``{"sub": "text ${Name}"}`` (either,
interpolated; a ``${body.x}`` token stays literal). Every refusal here is a 400
``VALIDATION_FAILED`` naming the field, decided before anything is written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chalicelib.errors import ValidationFailed

EXPRESSION_KEYS = frozenset({"ref", "param", "sub"})
SUB_TOKEN = re.compile(r"\$\{([^}]*)\}")
NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_\-]{0,127}$"
MASK = "***"
MAX_RESOURCES = 200


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ParameterDecl(_Strict):
    type: Literal["string"] = "string"
    default: str | None = None
    description: str | None = Field(None, max_length=1000)
    no_echo: bool = False


class ResourceDecl(_Strict):
    type: str = Field(min_length=1)
    properties: dict[str, Any] = Field(default_factory=dict)
    depends_on: list[str] = Field(default_factory=list)
    deletion_policy: Literal["delete", "retain"] = "delete"
    metadata: dict[str, Any] | None = None


class Template(_Strict):
    parameters: dict[str, ParameterDecl] = Field(default_factory=dict)
    resources: dict[str, ResourceDecl] = Field(min_length=1, max_length=MAX_RESOURCES)
    outputs: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] | None = None


def parse_template(raw: Mapping[str, Any]) -> Template:
    """The template's shape, or 400 naming the first offending field under ``template``."""
    try:
        template = Template.model_validate(raw)
    except ValidationError as exc:
        raise _refusal(exc) from None
    for kind, names in (("parameter", template.parameters), ("resource", template.resources)):
        for name in names:
            if not re.match(NAME_PATTERN, name):
                raise ValidationFailed(
                    f"{kind} name {name!r} must start with a letter and hold only letters, "
                    "digits, '_' and '-' (at most 128)",
                    field=f"template.{kind}s.{name}",
                )
    clash = set(template.parameters) & set(template.resources)
    if clash:
        name = sorted(clash)[0]
        raise ValidationFailed(
            f"{name!r} is both a parameter and a resource", field=f"template.resources.{name}"
        )
    return template


def _refusal(exc: ValidationError) -> ValidationFailed:
    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    problems = []
    for err in errors:
        field = ".".join(["template", *(str(part) for part in err["loc"])])
        message = "unknown field" if err["type"] == "extra_forbidden" else err["msg"]
        problems.append({"field": field, "message": message})
    summary = "; ".join(f"{p['field']}: {p['message']}" for p in problems[:5])
    return ValidationFailed(summary, field=problems[0]["field"], errors=problems)


def is_expression(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and next(iter(value)) in EXPRESSION_KEYS


def contains_expression(value: Any) -> bool:
    if is_expression(value):
        return True
    if isinstance(value, dict):
        return any(contains_expression(v) for v in value.values())
    if isinstance(value, list):
        return any(contains_expression(v) for v in value)
    return False


@dataclass(frozen=True)
class Scope:
    """What expressions may name, and how a resource name resolves."""

    parameters: Mapping[str, str]
    resources: frozenset[str]
    physical: Callable[[str], str]


def _sub_token(token: str, scope: Scope, field: str) -> str:
    if token in scope.parameters:
        return scope.parameters[token]
    if token in scope.resources:
        return scope.physical(token)
    raise ValidationFailed(
        f"${{{token}}} names no parameter or resource of the template", field=field
    )


def _expression(value: dict[str, Any], scope: Scope, field: str) -> Any:
    key, arg = next(iter(value.items()))
    if not isinstance(arg, str):
        raise ValidationFailed(f"{key} takes a string", field=f"{field}.{key}")
    if key == "ref":
        if arg not in scope.resources:
            raise ValidationFailed(f"ref {arg!r} names no resource of the template", field=field)
        return scope.physical(arg)
    if key == "param":
        if arg not in scope.parameters:
            raise ValidationFailed(f"param {arg!r} names no parameter of the template", field=field)
        return scope.parameters[arg]

    def replace(match: re.Match[str]) -> str:
        token = match.group(1)
        return match.group(0) if token.startswith("body.") else _sub_token(token, scope, field)

    return SUB_TOKEN.sub(replace, arg)


def resolve(value: Any, scope: Scope, field: str) -> Any:
    """``value`` with every expression replaced (a copy; the template stays verbatim)."""
    if is_expression(value):
        return _expression(value, scope, field)
    if isinstance(value, dict):
        return {k: resolve(v, scope, f"{field}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, scope, f"{field}.{i}") for i, v in enumerate(value)]
    return value


def resource_names_in(value: Any, resources: frozenset[str]) -> set[str]:
    """The logical ids ``value`` names through ``ref`` or a ``sub`` token (its dependencies)."""
    if is_expression(value):
        key, arg = next(iter(value.items()))
        if not isinstance(arg, str):
            return set()
        if key == "ref":
            return {arg}
        if key == "sub":
            return {t for t in SUB_TOKEN.findall(arg) if t in resources}
        return set()
    found: set[str] = set()
    children = value.values() if isinstance(value, dict) else value
    if isinstance(value, dict | list):
        for child in children:
            found |= resource_names_in(child, resources)
    return found


def dependencies(template: Template) -> dict[str, set[str]]:
    """Each resource's dependencies: ``depends_on`` plus every resource its properties name."""
    names = frozenset(template.resources)
    graph: dict[str, set[str]] = {}
    for logical_id, decl in template.resources.items():
        for other in decl.depends_on:
            if other not in names:
                raise ValidationFailed(
                    f"depends_on {other!r} names no resource of the template",
                    field=f"template.resources.{logical_id}.depends_on",
                )
        # A ref naming no resource is refused where it is resolved, naming its field.
        named = resource_names_in(decl.properties, names) & names
        graph[logical_id] = set(decl.depends_on) | named
    return graph


def _on_cycles(waiting: dict[str, set[str]]) -> list[str]:
    """The waiting resources on a cycle: those merely behind one (nothing waits on them) go."""
    remaining = {name: set(deps) for name, deps in waiting.items()}
    while True:
        needed = set().union(*remaining.values())
        leaves = [name for name in remaining if name not in needed]
        if not leaves:
            return sorted(remaining)
        for name in leaves:
            del remaining[name]


def creation_order(template: Template) -> list[str]:
    """Kahn's algorithm over :func:`dependencies`, ties in template order; a cycle is a 400."""
    graph = dependencies(template)
    waiting = {name: set(deps) for name, deps in graph.items()}
    order: list[str] = []
    while waiting:
        ready = [name for name, deps in waiting.items() if not deps]
        if not ready:
            cycle = _on_cycles(waiting)
            raise ValidationFailed(
                f"the template's dependencies form a cycle among: {', '.join(cycle)}",
                field="template.resources",
                cycle=cycle,
            )
        for name in ready:
            order.append(name)
            del waiting[name]
        for deps in waiting.values():
            deps.difference_update(ready)
    return order


def parameter_values(template: Template, given: Mapping[str, Any] | None) -> dict[str, str]:
    """Declared parameters with their values: given, else default; unknown or missing is 400."""
    given = dict(given or {})
    unknown = sorted(set(given) - set(template.parameters))
    if unknown:
        raise ValidationFailed(
            f"parameters not declared by the template: {', '.join(unknown)}",
            field=f"parameters.{unknown[0]}",
        )
    values: dict[str, str] = {}
    missing: list[str] = []
    for name, decl in template.parameters.items():
        value = given.get(name, decl.default)
        if value is None:
            missing.append(name)
        elif not isinstance(value, str):
            raise ValidationFailed(f"parameter {name} must be a string", field=f"parameters.{name}")
        else:
            values[name] = value
    if missing:
        raise ValidationFailed(
            f"Missing required parameters: {', '.join(missing)}",
            field=f"parameters.{missing[0]}",
            missing=missing,
        )
    return values


def masked_parameters(template: Template, values: Mapping[str, str]) -> dict[str, str] | None:
    """The values as a formation records them: ``no_echo`` ones as ``***``."""
    if not template.parameters:
        return None
    return {
        name: MASK if template.parameters[name].no_echo else value for name, value in values.items()
    }
