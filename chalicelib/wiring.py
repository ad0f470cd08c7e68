"""The composition root: the one place that puts pawl's parts together.

Every entry point goes through it — ``app.py`` (the API, the queue workers and the
schedules are one Chalice app), ``pawl serve`` and the CLI, and the tests' ``conftest``.
:func:`build` makes the plugin host and registers the catalog lookups run-start
validation needs; :func:`blueprints` is the app's blueprint list; :func:`reset` forgets
every per-process cache. No module registers anything when imported, and only the entry
points (``cli.py``, ``local/standin.py``) import this module under ``chalicelib``
(``tests/unit/test_import_graph.py`` keeps both so).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from chalicelib.plugins import manager
from chalicelib.scoring import validation
from chalicelib.scoring.contract import CatalogKind
from chalicelib.settings import Settings, get_settings

if TYPE_CHECKING:
    from chalice import Blueprint, Chalice


@dataclass(frozen=True)
class Services:
    """What :func:`build` put together for one process."""

    settings: Settings
    lookups: Mapping[CatalogKind, validation.LookupFn]

    @property
    def plugins(self) -> manager.PluginHost:
        """The process's plugin host (:func:`reset` drops it; the next use rebuilds it)."""
        return manager.plugins()


_services: Services | None = None
_lock = threading.Lock()


def catalog_lookups() -> dict[CatalogKind, validation.LookupFn]:
    """How validation finds each resource kind a scorer may name (tool, decider, provider)."""
    from chalicelib.store import ai_providers, deciders, tools

    return {
        "tool": tools.find_project_tool,
        "decider": deciders.find_project_decider,
        "ai_provider": ai_providers.find_provider,
    }


def builtin_plugins() -> tuple[ModuleType, ...]:
    """pawl's own plugins, in registration order: its scorers, agent adapters, webhook sink
    and embedding backends are built from the same hooks an installed plugin implements."""
    from chalicelib.agents import plugin as agent_adapters
    from chalicelib.embeddings import plugin as embedding_backends
    from chalicelib.scoring import plugin as scorers
    from chalicelib.webhooks import sink as webhook_sink

    return (scorers, agent_adapters, webhook_sink, embedding_backends)


def new_plugin_host(load_entry_points: bool = True) -> manager.PluginHost:
    """A plugin host with the built-ins and (unless told not to) the installed plugins and
    the one-off ones of ``PAWL_PLUGINS_DIR``."""
    directory = get_settings().plugins_dir if load_entry_points else None
    return manager.PluginHost(
        builtin_plugins(), load_entry_points=load_entry_points, plugins_dir=directory
    )


def build(settings: Settings | None = None) -> Services:
    """Put the process together: the plugin host and the catalog lookups."""
    global _services
    manager.use_factory(new_plugin_host)
    manager.reset_plugins(new_plugin_host())
    lookups = catalog_lookups()
    validation.install(validation.ValidationCatalog(scorers=manager.plugins, lookups=dict(lookups)))
    install_event_listeners()
    _install_firing_check()
    _install_formation_types()
    built = Services(settings=settings or get_settings(), lookups=lookups)
    _services = built
    return built


def install_event_listeners() -> None:
    """What reacts to pawl's own events in-process: event triggers (``docs/triggers.md``)."""
    from chalicelib.engine import bus
    from chalicelib.engine.triggers import events

    bus.install([events.on_event])


def _install_firing_check() -> None:
    """A firing re-checks the key that bound its trigger (``docs/triggers.md``). The check
    is the API's authorization, imported at the first firing: building a worker's process
    loads no API module."""
    from chalicelib.engine.triggers import firing

    def authorize_firing(trigger: Any, evaluation: Any, start: Any) -> None:
        from chalicelib.api import triggers as trigger_routes

        trigger_routes.authorize_firing(trigger, evaluation, start)

    firing.install_binding_check(authorize_firing)


def _install_formation_types() -> None:
    """The resource types a formation may declare (each reached through its REST routes)."""
    from chalicelib.formations import types

    types.install(types.builtin_types())


def services() -> Services:
    """This process's :class:`Services`, built on first use."""
    if _services is None:
        with _lock:
            if _services is None:
                return build()
    assert _services is not None
    return _services


def blueprints() -> list[Blueprint]:
    """Every blueprint of the app: the API's resources, the queue workers and the schedules.

    Imported here, not at the top, because the workers read their queue names from the
    settings when imported (``pawl infra`` imports the app under a stage's environment).
    """
    from chalicelib.api.blueprints import BLUEPRINTS
    from chalicelib.api.v2 import routes as v2_routes
    from chalicelib.console import routes as console
    from chalicelib.workers import queues, schedules, webhook_delivery

    return [*BLUEPRINTS, queues.bp, schedules.bp, webhook_delivery.bp, v2_routes.bp, console.bp]


def create_app() -> Chalice:
    """The Chalice app with every blueprint registered (what ``app.py`` exports)."""
    from chalice import Chalice

    from chalicelib.api.chalice_app import envelope_middleware

    services()
    # configure_logs=False: Chalice would make the "pawl" logger stop propagating, hiding
    # every pawl.* log from the root handler (Lambda's, or a test's).
    app = Chalice(app_name="pawl", configure_logs=False)
    app.register_middleware(envelope_middleware, "http")
    for blueprint in blueprints():
        app.register_blueprint(blueprint)
    return app


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document of every route (loading the blueprints declares their routes)."""
    from chalicelib.api.openapi import build_document

    services()  # the published bodies read the plugin registry (`pawl <operation>` needs it)
    blueprints()
    return build_document()


def reload_settings() -> None:
    """Re-read the settings on next use (the environment changed); nothing else is dropped."""
    from chalicelib import settings

    settings.reset_settings()


def drop_aws_clients() -> None:
    """Forget the boto3 clients and session (e.g. inside a moto context of its own config)."""
    from chalicelib import aws

    aws.reset_clients()


def install_plugins(host: manager.PluginHost | None = None) -> None:
    """Make ``host`` the process's plugin host; ``None`` drops it (rebuilt on next use).

    Tests install a host with extra plugins (an event log, a probe scorer) this way.
    """
    manager.reset_plugins(host)


def reset(clients: bool = True) -> None:
    """Forget every per-process cache (the environment changed).

    ``clients=False`` keeps the boto3 clients and session: they keep working across moto
    contexts in one process, and re-creating them costs ~0.3 s each (the tests' choice).
    The catalog lookups stay registered: they are wiring, not a cache.
    """
    from chalicelib import queues, secretbox
    from chalicelib.agents import python_agent
    from chalicelib.api import openapi, routing
    from chalicelib.api.v2 import openapi as v2_openapi
    from chalicelib.engine import concurrency, context
    from chalicelib.outbound import allowlist, transport
    from chalicelib.scoring import llm_judge
    from chalicelib.store import base

    reload_settings()
    if clients:
        drop_aws_clients()
    queues.reset()
    base.bind(force=clients)
    install_plugins(None)
    transport.reset_client()
    allowlist.build_policy.cache_clear()
    openapi.reset_document_cache()
    routing.reset_reference_tables()
    v2_openapi.build_document.cache_clear()
    secretbox.reset_key_cache()
    python_agent.load_callable.cache_clear()
    context.pinned_version.cache_clear()
    llm_judge.reset_provider_cache()
    concurrency.reset()
