"""Turning a module's decorated objects into one pluggy plugin.

When the host loads a module (a built-in, an entry point, a file of ``PAWL_PLUGINS_DIR``)
it looks through the module's namespace for decorated objects (``@scorer`` and friends,
defined there or imported into it) and registers, in the module's place, a plugin whose
hook implementations return them, beside any ``@hookimpl`` the module wrote itself. A
module with no decorated object is registered unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, TypeVar

from chalicelib.domain.catalog import Eval
from chalicelib.domain.events import LifecycleEvent
from chalicelib.domain.runs import EvalRun
from chalicelib.plugins.adapter_contract import AgentAdapter
from chalicelib.plugins.decorators import FunctionAdapter, FunctionScorer, PluginObject
from chalicelib.plugins.event_decorators import FunctionSink, FunctionValidator
from chalicelib.plugins.markers import PROJECT, hookimpl
from chalicelib.plugins.scorer_contract import Scorer
from chalicelib.plugins.signature import call_with

Obj = TypeVar("Obj", bound=PluginObject)
_IMPL_MARK = f"{PROJECT}_impl"


def decorated_objects(module: ModuleType) -> list[PluginObject]:
    """Every decorated object in ``module``'s namespace, once each, in namespace order; or,
    when the module has an ``__all__``, the ones it lists, in its order (a module names
    what it exports, as ``from module import *`` reads it)."""
    namespace = vars(module)
    listed = namespace.get("__all__")
    values = (
        [namespace.get(n) for n in listed]
        if isinstance(listed, list | tuple)
        else namespace.values()
    )
    found: dict[int, PluginObject] = {}
    for value in values:
        if isinstance(value, PluginObject):
            found.setdefault(id(value), value)
    return list(found.values())


def _of(objects: Sequence[PluginObject], cls: type[Obj]) -> list[Obj]:
    return [obj for obj in objects if isinstance(obj, cls)]


def _own_hook(module: ModuleType, name: str) -> Callable[..., Any] | None:
    """The module's own ``@hookimpl`` for ``name``, if it wrote one."""
    fn = getattr(module, name, None)
    return fn if callable(fn) and hasattr(fn, _IMPL_MARK) else None


class ModulePlugin:
    """A module's hooks plus the hooks its decorated objects need (what the host registers).

    ``module`` is kept so reports and lookups can name where the plugin came from.
    """

    def __init__(self, module: ModuleType, objects: Sequence[PluginObject]) -> None:
        self.module = module
        self.objects = tuple(objects)
        for name in dir(module):
            own = _own_hook(module, name)
            if own is not None:
                setattr(self, name, own)
        scorers: list[Scorer] = list(_of(objects, FunctionScorer))
        adapters: list[AgentAdapter] = list(_of(objects, FunctionAdapter))
        sinks = _of(objects, FunctionSink)
        validators = _of(objects, FunctionValidator)
        if scorers:
            self.pawl_register_scorers = _registering(
                scorers, _own_hook(module, "pawl_register_scorers")
            )
        if adapters:
            self.pawl_register_agent_adapters = _registering(
                adapters, _own_hook(module, "pawl_register_agent_adapters")
            )
        if sinks:
            self.pawl_deliver_event = _delivering(sinks, _own_hook(module, "pawl_deliver_event"))
        if validators:
            self.pawl_validate_baseline = _validating(
                validators, _own_hook(module, "pawl_validate_baseline")
            )

    def __repr__(self) -> str:
        return f"<plugin module {self.module.__name__}>"


T = TypeVar("T")


def _registering(objects: list[T], own: Callable[..., Any] | None) -> Callable[[], list[T]]:
    @hookimpl
    def register() -> list[T]:
        written: list[T] = list(own() or []) if own is not None else []
        return [*written, *objects]

    return register


def _delivering(
    sinks: list[FunctionSink[Any]], own: Callable[..., Any] | None
) -> Callable[..., None]:
    @hookimpl
    def deliver(event: LifecycleEvent) -> None:
        # Each sink of the module runs even when one before it raised; the first error is
        # raised afterwards, so the host logs this plugin as failed for the event.
        calls: list[Callable[[], object]] = [lambda: own(event=event)] if own else []
        calls += [lambda sink=sink: sink.deliver(event) for sink in sinks]  # type: ignore[misc]
        errors: list[Exception] = []
        for call in calls:
            try:
                call()
            except Exception as exc:
                errors.append(exc)
        if errors:
            raise errors[0]

    return deliver


def _validating(
    validators: list[FunctionValidator[Any]], own: Callable[..., Any] | None
) -> Callable[..., str | None]:
    @hookimpl
    def validate(eval: Eval, candidate: EvalRun, baseline: EvalRun) -> str | None:
        offered = {"eval": eval, "candidate": candidate, "baseline": baseline}
        reasons = [call_with(own, offered)] if own is not None else []
        reasons += [v.refusal(eval, candidate, baseline) for v in validators]
        refused = [str(r) for r in reasons if r]
        return "; ".join(refused) or None

    return validate


def as_plugin(module: ModuleType) -> object:
    """What to register for ``module``: itself, or a :class:`ModulePlugin` when it holds
    decorated objects."""
    objects = decorated_objects(module)
    return ModulePlugin(module, objects) if objects else module
