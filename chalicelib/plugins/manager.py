"""The plugin manager and the small typed facade the rest of pawl calls.

Nothing outside this module touches ``pm.hook``: the engine asks the facade for a
scorer or an adapter, or to hand an event to the sinks.
"""

from __future__ import annotations

import importlib.metadata
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Protocol, TypedDict, TypeVar

import pluggy

from chalicelib.errors import ValidationFailed
from chalicelib.plugins import hookspecs
from chalicelib.plugins.markers import ENTRY_POINT_GROUP, PROJECT

if TYPE_CHECKING:
    from chalicelib.agents.contract import AgentAdapter
    from chalicelib.domain.catalog import Eval
    from chalicelib.domain.events import LifecycleEvent
    from chalicelib.domain.runs import EvalRun
    from chalicelib.domain.tools import BuiltinToolAction
    from chalicelib.embeddings.contract import BackendFactory
    from chalicelib.scoring.contract import Scorer

log = logging.getLogger("pawl.plugins")


class LoadedPlugin(TypedDict):
    name: str
    version: str
    source: str
    hooks: list[str]


class FailedPlugin(TypedDict):
    name: str
    error: str


@dataclass
class PluginReport:
    loaded: list[LoadedPlugin] = field(default_factory=list)
    failed: list[FailedPlugin] = field(default_factory=list)


class _Typed(Protocol):
    """Anything registered by its ``type`` (scorers, agent adapters)."""

    @property
    def type(self) -> str: ...


_T = TypeVar("_T", bound=_Typed)
_V = TypeVar("_V")


def _merge_by_type(results: list[list[_T] | None]) -> dict[str, _T]:
    """Merge every implementation's list (pluggy's LIFO order); later registrations win."""
    merged: dict[str, _T] = {}
    # pluggy calls LIFO; reverse so the earliest-registered (built-ins) go first.
    for result in reversed(results):
        for obj in result or []:
            merged[obj.type] = obj
    return merged


def _merge_dicts(results: list[Mapping[str, _V] | None]) -> dict[str, _V]:
    """Merge every implementation's dict (pluggy's LIFO order); later registrations win."""
    merged: dict[str, _V] = {}
    for result in reversed(results):
        merged.update(result or {})
    return merged


class PluginHost:
    """Owns one pluggy manager; exposes typed lookups over what plugins registered.

    pawl's own features are plugins too (datasette's way): ``builtins`` are the modules
    the composition root hands over (``wiring.builtin_plugins``), registered under their
    module names before any installed plugin, so an installed one can override them.
    """

    def __init__(self, builtins: Sequence[ModuleType] = (), load_entry_points: bool = True) -> None:
        self.pm = pluggy.PluginManager(PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.report = PluginReport()
        for module in builtins:
            self._register_builtin(module)
        if load_entry_points:
            self._load_entry_points()
        self.pm.check_pending()
        self._scorers: dict[str, Scorer] = _merge_by_type(self.pm.hook.pawl_register_scorers())
        self._adapters: dict[str, AgentAdapter] = _merge_by_type(
            self.pm.hook.pawl_register_agent_adapters()
        )

    def _register_builtin(self, module: ModuleType) -> None:
        self.pm.register(module, name=module.__name__)
        self.report.loaded.append(
            {
                "name": module.__name__,
                "version": "builtin",
                "source": "builtin",
                "hooks": self.hooks_of(module.__name__),
            }
        )

    def _load_entry_points(self) -> None:
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            dist = ep.dist
            try:
                plugin = ep.load()
                self.pm.register(plugin, name=ep.name)
                self._refuse_unknown_hooks(ep.name, plugin)
            except Exception as exc:  # a broken plugin is reported and skipped, never fatal
                log.warning("plugin %s failed to load: %s", ep.name, exc)
                self.report.failed.append(
                    {"name": ep.name, "error": f"{type(exc).__name__}: {exc}"}
                )
                continue
            self.report.loaded.append(
                {
                    "name": ep.name,
                    "version": dist.version if dist else "unknown",
                    "source": dist.name if dist else ep.value,
                    "hooks": self.hooks_of(ep.name),
                }
            )

    def _refuse_unknown_hooks(self, name: str, plugin: object) -> None:
        """Unregister a plugin implementing a hook no spec names (a typo would otherwise make
        ``check_pending`` fail the whole host, not just this plugin)."""
        callers = self.pm.get_hookcallers(plugin) or []
        unknown = sorted(
            caller.name
            for caller in callers
            if not caller.has_spec()
            and any(not i.optionalhook for i in caller.get_hookimpls() if i.plugin is plugin)
        )
        if unknown:
            self.pm.unregister(plugin, name=name)
            raise pluggy.PluginValidationError(plugin, f"unknown hooks: {', '.join(unknown)}")

    # --- facade -------------------------------------------------------------------------

    def hooks_of(self, plugin_name: str) -> list[str]:
        plugin = self.pm.get_plugin(plugin_name)
        return sorted(h.name for h in self.pm.get_hookcallers(plugin) or [])

    def scorer_types(self) -> list[str]:
        return list(self._scorers)

    def scorer(self, scorer_type: str) -> Scorer:
        try:
            return self._scorers[scorer_type]
        except KeyError:
            known = ", ".join(sorted(self._scorers))
            raise ValidationFailed(
                f"unknown scorer type {scorer_type!r} (known: {known})", field="type"
            ) from None

    def adapter_types(self) -> list[str]:
        return list(self._adapters)

    def adapter(self, adapter_type: str) -> AgentAdapter:
        try:
            return self._adapters[adapter_type]
        except KeyError:
            known = ", ".join(sorted(self._adapters))
            raise ValidationFailed(
                f"unknown agent type {adapter_type!r} (known: {known})", field="type"
            ) from None

    def embedding_backends(self) -> dict[str, BackendFactory]:
        return _merge_dicts(self.pm.hook.pawl_register_embedding_backends())

    def builtin_tools(self) -> dict[str, BuiltinToolAction]:
        return _merge_dicts(self.pm.hook.pawl_register_builtin_tools())

    def baseline_refusals(self, eval: Eval, candidate: EvalRun, baseline: EvalRun) -> list[str]:
        """Every plugin's reason to refuse ``baseline`` for ``candidate`` (empty: accepted).

        Plugins get deep copies, so no plugin can alter the run about to be written.
        """
        results: list[str | None] = self.pm.hook.pawl_validate_baseline(
            eval=eval.model_copy(deep=True),
            candidate=candidate.model_copy(deep=True),
            baseline=baseline.model_copy(deep=True),
        )
        return [r for r in results if r]

    def deliver_event(self, event: LifecycleEvent) -> list[str]:
        """Hand ``event`` to every sink, each isolated. Returns the names of sinks that raised."""
        failed = []
        for impl in self.pm.hook.pawl_deliver_event.get_hookimpls():
            try:
                impl.function(event=event)
            except Exception:
                log.exception("sink %s failed for %s", impl.plugin_name, event.event)
                failed.append(impl.plugin_name)
        return failed


_host: PluginHost | None = None
_factory: Callable[[], PluginHost] | None = None
_lock = threading.Lock()


def use_factory(factory: Callable[[], PluginHost]) -> None:
    """How :func:`plugins` builds the host (the composition root installs it)."""
    global _factory
    _factory = factory


def plugins() -> PluginHost:
    """The process-wide plugin host (built on first use, by the installed factory)."""
    global _host
    if _host is None:
        with _lock:
            if _host is None:
                if _factory is None:
                    raise RuntimeError(
                        "no plugin host factory: the process was not put together by "
                        "chalicelib.wiring.build()"
                    )
                _host = _factory()
    return _host


def reset_plugins(host: PluginHost | None = None) -> None:
    """Replace the process-wide host (tests register extra plugins this way)."""
    global _host
    _host = host
