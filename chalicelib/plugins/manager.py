"""The plugin manager and the small typed facade the rest of pawl calls.

Nothing outside this module touches ``pm.hook``: the engine asks the facade for a
scorer or an adapter, or to hand an event to the sinks.
"""

from __future__ import annotations

import importlib.metadata
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Protocol, TypeVar, cast

import pluggy

from chalicelib.domain.catalog import Eval
from chalicelib.domain.events import LifecycleEvent
from chalicelib.domain.runs import EvalRun
from chalicelib.domain.tools import BuiltinToolAction
from chalicelib.errors import ValidationFailed
from chalicelib.plugins import directory, hookspecs
from chalicelib.plugins.adapter_contract import AgentAdapter
from chalicelib.plugins.collect import ModulePlugin, as_plugin
from chalicelib.plugins.embedding_contract import BackendFactory
from chalicelib.plugins.event_decorators import FunctionSink
from chalicelib.plugins.markers import ENTRY_POINT_GROUP, PROJECT
from chalicelib.plugins.report import FailedPlugin, LoadedPlugin, PluginReport
from chalicelib.plugins.scorer_contract import Scorer

log = logging.getLogger("pawl.plugins")

__all__ = ["FailedPlugin", "LoadedPlugin", "PluginHost", "PluginReport", "plugins"]


class _Typed(Protocol):
    """Anything registered by its ``type`` (scorers, agent adapters)."""

    @property
    def type(self) -> str: ...


_T = TypeVar("_T", bound=_Typed)
_V = TypeVar("_V")


def _registered_by_plugin(caller: pluggy.HookCaller) -> dict[str, list[_T]]:
    """Each plugin's answer to a ``pawl_register_*`` hook, earliest-registered first
    (``get_hookimpls`` order: the built-ins before any installed plugin)."""
    answers: dict[str, list[_T]] = {}
    for impl in caller.get_hookimpls():
        answer = cast("list[_T] | None", impl.function())
        answers[impl.plugin_name] = list(answer or [])
    return answers


def _merge_by_type(answers: Mapping[str, list[_T]]) -> dict[str, _T]:
    """Merge every plugin's list in registration order; later registrations win."""
    merged: dict[str, _T] = {}
    for objects in answers.values():
        for obj in objects:
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

    def __init__(
        self,
        builtins: Sequence[ModuleType] = (),
        load_entry_points: bool = True,
        plugins_dir: str | Path | None = None,
    ) -> None:
        self.pm = pluggy.PluginManager(PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.report = PluginReport()
        self._versions: dict[str, tuple[str, str]] = {}
        for module in builtins:
            self.pm.register(as_plugin(module), name=module.__name__)
            self._versions[module.__name__] = ("builtin", "builtin")
        if load_entry_points:
            self._load_entry_points()
        if plugins_dir is not None:
            self._load_directory(Path(plugins_dir))
        self.pm.check_pending()
        scorers: dict[str, list[Scorer]] = _registered_by_plugin(self.pm.hook.pawl_register_scorers)
        adapters: dict[str, list[AgentAdapter]] = _registered_by_plugin(
            self.pm.hook.pawl_register_agent_adapters
        )
        self._scorers: dict[str, Scorer] = _merge_by_type(scorers)
        self._adapters: dict[str, AgentAdapter] = _merge_by_type(adapters)
        self.report.loaded = [
            self._describe(name, version, source, scorers, adapters)
            for name, (version, source) in self._versions.items()
        ]

    def _register(self, name: str, plugin: object, version: str, source: str) -> None:
        """Register an installed or one-off plugin; what fails is reported and skipped."""
        try:
            if isinstance(plugin, ModuleType):
                plugin = as_plugin(plugin)
            self.pm.register(plugin, name=name)
            self._refuse_unknown_hooks(name, plugin)
        except Exception as exc:  # a broken plugin is reported and skipped, never fatal
            self._failed(name, exc)
            return
        self._versions[name] = (version, source)

    def _failed(self, name: str, exc: BaseException) -> None:
        log.warning("plugin %s failed to load: %s", name, exc)
        self.report.failed.append({"name": name, "error": f"{type(exc).__name__}: {exc}"})

    def _load_entry_points(self) -> None:
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            dist = ep.dist
            try:
                plugin = ep.load()
            except Exception as exc:
                self._failed(ep.name, exc)
                continue
            version = dist.version if dist else "unknown"
            self._register(ep.name, plugin, version, dist.name if dist else ep.value)

    def _load_directory(self, path: Path) -> None:
        """The one-off plugins of ``PAWL_PLUGINS_DIR`` (after the installed ones: they win)."""
        if not path.is_dir():
            self._failed(
                str(path), NotADirectoryError(f"PAWL_PLUGINS_DIR {path} is not a directory")
            )
            return
        for found in directory.candidates(path):
            try:
                module = directory.load(path, found)
            except Exception as exc:  # SyntaxError, ImportError, anything its import raises
                self._failed(found.name, exc)
                continue
            self._register(found.name, module, "local", str(found.path))

    def _describe(
        self,
        name: str,
        version: str,
        source: str,
        scorers: Mapping[str, list[Scorer]],
        adapters: Mapping[str, list[AgentAdapter]],
    ) -> LoadedPlugin:
        """One plugin's report entry: its hooks and what it adds or replaces."""
        builtin = {n for n, (v, _) in self._versions.items() if v == "builtin"}
        builtin_scorers = {s.type for n in builtin for s in scorers.get(n, [])}
        builtin_agents = {a.type for n in builtin for a in adapters.get(n, [])}
        own_scorers = sorted({s.type for s in scorers.get(name, [])})
        own_agents = sorted({a.type for a in adapters.get(name, [])})
        overrides = (
            []
            if name in builtin
            else [
                *(f"scorer {t}" for t in own_scorers if t in builtin_scorers),
                *(f"agent {t}" for t in own_agents if t in builtin_agents),
            ]
        )
        return {
            "name": name,
            "version": version,
            "source": source,
            "hooks": self.hooks_of(name),
            "scorers": own_scorers,
            "agents": own_agents,
            "sinks": self._sinks_of(name),
            "overrides": overrides,
        }

    def _sinks_of(self, name: str) -> list[str]:
        plugin = self.pm.get_plugin(name)
        if isinstance(plugin, ModulePlugin):
            decorated = [o.type for o in plugin.objects if isinstance(o, FunctionSink)]
            written = [name] if hasattr(plugin.module, "pawl_deliver_event") else []
            return [*written, *decorated]
        # A hand-written ``pawl_deliver_event`` is one sink, known by its plugin's name.
        return [name] if "pawl_deliver_event" in self.hooks_of(name) else []

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
