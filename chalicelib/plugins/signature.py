"""Reading a decorated plugin function's signature: which parameters are context and
which are config, the strict config model derived from the config ones, and calling a
function with only the keyword arguments it declares.

A decorated function's config parameters are keyword-able parameters with annotations
(``pattern: str``, ``flags: Annotated[str, Field(max_length=8)] = ""``); a default makes
the key optional. The derived model refuses unknown keys and coerces nothing
(``extra="forbid"``, ``strict=True``): ``"5"`` is not an ``int``.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, create_model

M = TypeVar("M", bound=BaseModel)

#: The strictness every decorated plugin's config has (its base classes carry it).
STRICT = ConfigDict(extra="forbid", strict=True)


class PluginDefinitionError(TypeError):
    """A decorated function pawl cannot turn into a plugin object (raised at decoration)."""


@dataclass(frozen=True)
class Signature:
    """What a decorated function asks for.

    ``context`` holds the context parameters it declares (``item``, ``env``, ...);
    ``fields`` maps each config parameter to ``(annotation, default)`` (``...``: required);
    ``model`` is an explicit config model when the function takes ``config: SomeModel``.
    """

    context: frozenset[str]
    fields: Mapping[str, tuple[Any, Any]]
    model: type[BaseModel] | None


def _hints(fn: Callable[..., object]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # NameError for an unresolvable string annotation
        raise PluginDefinitionError(
            f"{fn.__qualname__}: cannot read its annotations: {exc}"
        ) from exc


def read_signature(
    fn: Callable[..., object], context: frozenset[str], base: type[BaseModel]
) -> Signature:
    """Split ``fn``'s parameters into context and config; refuse what cannot be a config."""
    hints = _hints(fn)
    declared: set[str] = set()
    fields: dict[str, tuple[Any, Any]] = {}
    model: type[BaseModel] | None = None
    for param in inspect.signature(fn).parameters.values():
        where = f"{fn.__qualname__}: parameter {param.name!r}"
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise PluginDefinitionError(f"{where} must be an ordinary named parameter")
        if param.name in context:
            declared.add(param.name)
            continue
        if param.name not in hints:
            raise PluginDefinitionError(f"{where} needs a type annotation (it is a config key)")
        annotation = hints[param.name]
        if param.name == "config" and isinstance(annotation, type) and issubclass(annotation, base):
            model = annotation
            continue
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, default)
    if model is not None and fields:
        raise PluginDefinitionError(
            f"{fn.__qualname__} takes `config: {model.__name__}`, so its other parameters "
            f"({', '.join(fields)}) cannot be config keys too"
        )
    return Signature(frozenset(declared), fields, model)


def derive_model(
    name: str, base: type[M], fields: Mapping[str, tuple[Any, Any]], extra: Mapping[str, Any]
) -> type[M]:
    """A model subclassing ``base`` (a strict one) with ``fields`` plus ``extra`` (``type``
    and the like, which the decorator adds)."""
    definitions: dict[str, Any] = {**extra, **fields}
    model: type[M] = create_model(name, __base__=base, **definitions)
    return model


def accepted(fn: Callable[..., object]) -> frozenset[str]:
    """The keyword arguments ``fn`` accepts (pluggy's rule: it may declare fewer than offered)."""
    return frozenset(inspect.signature(fn).parameters)


def call_with(fn: Callable[..., object], offered: Mapping[str, object]) -> object:
    """Call ``fn`` with the offered keyword arguments it declares, and only those."""
    names = accepted(fn)
    return fn(**{k: v for k, v in offered.items() if k in names})


def as_model(model: type[M], config: BaseModel) -> M:
    """``config`` as ``model`` (the engine may hand over a base-typed config): the one
    downcast every decorated plugin would otherwise write itself."""
    if isinstance(config, model):
        return config
    return model.model_validate(config.model_dump(by_alias=True))


def config_values(config: BaseModel, names: frozenset[str]) -> dict[str, Any]:
    """The named fields of a parsed config, as keyword arguments."""
    return {name: getattr(config, name) for name in names}
