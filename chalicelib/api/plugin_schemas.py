"""Published request schemas built from the plugin registry.

An agent's ``config``, a tool's ``config`` and an eval's ``scorers`` are validated by the
model of the type they name, and the types come from plugins. The document therefore
publishes, for each, a discriminated ``oneOf`` with one variant per registered type and
that type's own pydantic config model, built when the document is built: a plugin's types
(e.g. ``pawl-regex-scorer``'s ``regex``) appear with no change here, and the schema is the
one the server validates with.

Deployment rules become schema where they can: python agents appear only when
``PAWL_PYTHON_AGENT_MODULES`` lists modules, with ``callable`` limited to them; ``builtin``
tools only when a plugin provides actions, with ``actions`` limited to those; a named
scorer's ``name`` may not be a scorer type. Rules that JSON Schema cannot state (a name
unique in the list, a referenced resource existing) stay in the server's checks and are
listed in docs/security.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, create_model

from chalicelib.agents.configs import CALLABLE_PATH, PythonAgentConfig


def _literal(value: str) -> Any:
    return Literal[value]


def _required(model: type[BaseModel]) -> bool:
    return any(field.is_required() for field in model.model_fields.values())


def _title(type_name: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", type_name))


def discriminated_bodies(
    base: type[BaseModel], configs: Mapping[str, type[BaseModel]], *, config_field: str = "config"
) -> Any:
    """``base`` once per type: ``type`` fixed to it and ``config`` its model; one union."""
    variants = []
    for type_name, config_model in configs.items():
        default: Any = ... if _required(config_model) else Field(default_factory=dict)
        variants.append(
            create_model(  # type: ignore[call-overload]
                f"{base.__name__}{_title(type_name)}",
                __base__=base,
                type=(_literal(type_name), ...),
                **{config_field: (config_model, default)},
            )
        )
    return one_of(variants, "type")


def one_of(variants: Sequence[type[BaseModel]], discriminator: str) -> Any:
    if len(variants) == 1:
        return variants[0]
    return Annotated[Union[tuple(variants)], Field(discriminator=discriminator)]  # noqa: UP007


def update_body(base: type[BaseModel], configs: Mapping[str, type[BaseModel]]) -> Any:
    """``base`` (a partial update) with ``type`` one of the registered types and ``config``
    any of their models (omitted, either keeps the stored value)."""
    return create_model(
        f"{base.__name__}Published",
        __base__=base,
        type=(optional_type(list(configs)), None),
        config=(any_config(configs) | None, None),
    )


def any_config(configs: Mapping[str, type[BaseModel]]) -> Any:
    """A config of any registered type (an update that keeps the stored type)."""
    models = tuple(configs.values())
    return models[0] if len(models) == 1 else Union[models]  # noqa: UP007


def python_agent_config(allowed: Sequence[str]) -> type[BaseModel] | None:
    """The python agent config this deployment accepts, or None when it accepts none."""
    if not allowed:
        return None
    modules = []
    for entry in allowed:
        if entry.endswith(".*"):
            modules.append(re.escape(entry[:-1]) + r"\w*(?:\.[A-Za-z_]\w*)*")
        else:
            modules.append(re.escape(entry))
    function = CALLABLE_PATH.pattern.rsplit(":", 1)[1]  # ``[A-Za-z]\w*$``
    pattern = rf"^(?:{'|'.join(modules)}):{function}"
    return create_model(
        "PythonAgentConfigAllowed",
        __base__=PythonAgentConfig,
        callable=(str, Field(pattern=pattern, description="module:function, module allow-listed")),
    )


def builtin_actions_config(base: type[BaseModel], actions: Sequence[str]) -> type[BaseModel] | None:
    """``base`` (the builtin tool config) with ``actions`` limited to installed ones."""
    if not actions:
        return None
    action_list: Any = list[_literal_union(sorted(actions))]  # type: ignore[misc]
    return create_model(
        f"{base.__name__}Installed",
        __base__=base,
        actions=(action_list, Field(min_length=1, max_length=50, json_schema_extra=_UNIQUE)),
    )


def _literal_union(values: Sequence[str]) -> Any:
    return Literal[tuple(values)]


def optional_type(values: Sequence[str]) -> Any:
    """``Literal[values] | None``: an update's ``type`` (omitted keeps the stored one)."""
    return _literal_union(values) | None


_UNIQUE: dict[str, Any] = {"uniqueItems": True}


def named_scorer(model: type[BaseModel], scorer_types: Sequence[str]) -> type[BaseModel]:
    """``model`` whose ``name`` may not be a scorer type (it would shadow one in results)."""

    def refuse_types(schema: dict[str, Any]) -> None:
        name = schema.get("properties", {}).get("name")
        if isinstance(name, dict):
            name["not"] = {"enum": sorted(scorer_types)}

    config = ConfigDict(**{**model.model_config, "json_schema_extra": refuse_types})
    return type(f"{model.__name__}Named", (model,), {"model_config": config})
