"""Hook specifications of the ``pawl`` plugin project.

A plugin is any module or object with functions marked ``@hookimpl`` whose names match
these specs. Installed distributions announce plugins under the ``pawl`` entry-point
group. pawl's own built-ins (scorers, agent adapters, the webhook sink) register through
these very hooks, so a plugin can add to or override them.

All hooks are called with keyword arguments.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chalicelib.plugins.markers import hookspec

if TYPE_CHECKING:
    from chalicelib.agents.contract import AgentAdapter
    from chalicelib.domain.events import LifecycleEvent
    from chalicelib.scoring.contract import Scorer


@hookspec
def pawl_register_scorers() -> list[Scorer]:
    """Return the scorers this plugin provides.

    Called once when the plugin manager is built. Every result list is merged; when two
    plugins provide the same ``type``, the one registered later wins (plugins load after
    the built-ins, so a plugin can override a built-in). Each scorer validates its own
    config (``config_model`` and ``check``) and scores items (``score``); see
    :mod:`chalicelib.scoring.contract`.
    """
    raise NotImplementedError


@hookspec
def pawl_register_agent_adapters() -> list[AgentAdapter]:
    """Return the agent adapters this plugin provides (an agent's ``type`` names one).

    Called once when the plugin manager is built; merged like scorers. See
    :mod:`chalicelib.agents.contract`.
    """
    raise NotImplementedError


@hookspec
def pawl_register_embedding_backends() -> dict[str, Any]:
    """Return ``{name: factory}`` of embedding backends (``PAWL_EMBEDDING_PROVIDER`` names one).

    A factory is called with ``model: str | None`` and returns an object with
    ``embed(texts: list[str]) -> EmbeddingResult``.
    """
    raise NotImplementedError


@hookspec
def pawl_register_builtin_tools() -> dict[str, Any]:
    """Return ``{action_name: callable}`` for ``builtin`` tools (``tool`` scorers call them).

    A callable receives the tool input dict and returns the tool's JSON answer.
    """
    raise NotImplementedError


@hookspec
def pawl_validate_baseline(
    eval: dict[str, Any], candidate: dict[str, Any], baseline: dict[str, Any]
) -> str | None:
    """Decide whether ``baseline`` (a run) may serve as the baseline of ``candidate``.

    Called for every baseline selection, after pawl's own rules (terminal run of the
    same eval). Return a reason string to refuse it, or ``None`` to accept. Any refusal
    refuses the selection; the reason is logged but not returned to the caller across
    a tenant boundary.
    """
    raise NotImplementedError


@hookspec
def pawl_deliver_event(event: LifecycleEvent) -> None:
    """Deliver one lifecycle event (``eval_run.completed`` / ``eval_run.failed``).

    Called once per sink for every terminal run, exactly once per run. Sinks are called
    one at a time, each isolated: an exception in one is logged and does not stop the
    others. A sink must be quick; slow work (HTTP) should be queued.
    """
    raise NotImplementedError
