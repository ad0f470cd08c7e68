"""Hook specifications of the ``pawl`` project: what a plugin may implement, typed.

A plugin is any module or object with functions marked ``@hookimpl`` whose names match
these specs. Installed distributions announce plugins under the ``pawl`` entry-point
group. pawl's own built-ins (scorers, agent adapters, embedding backends, the webhook
sink) register through these very hooks, so a plugin can add to or override them.

Every hook takes and returns pawl's own types (the ones ``docs/plugins.md`` lists as
the plugin surface), never raw dicts. All hooks are called with keyword arguments; an
implementation may accept fewer arguments than its spec, never other ones. Like pytest's
``hookspec.py``, each docstring says whether ``firstresult`` applies; today none does.
"""

from __future__ import annotations

from chalicelib.domain.catalog import Eval
from chalicelib.domain.events import LifecycleEvent
from chalicelib.domain.runs import EvalRun
from chalicelib.domain.tools import BuiltinToolAction
from chalicelib.plugins.adapter_contract import AgentAdapter
from chalicelib.plugins.embedding_contract import BackendFactory
from chalicelib.plugins.markers import hookspec
from chalicelib.plugins.scorer_contract import Scorer


@hookspec
def pawl_register_scorers() -> list[Scorer]:
    """Return the scorers this plugin provides.

    Called once when the plugin host is built. Every result list is merged; when two
    plugins provide the same ``type``, the one registered later wins (plugins load after
    the built-ins, so a plugin can override a built-in). Each scorer validates its own
    config (``config_model`` and ``check``) and scores items (``score``); see
    :mod:`chalicelib.plugins.scorer_contract`.

    Not ``firstresult``: every implementation is called.
    """
    raise NotImplementedError


@hookspec
def pawl_register_agent_adapters() -> list[AgentAdapter]:
    """Return the agent adapters this plugin provides (an agent's ``type`` names one).

    Called once when the plugin host is built; merged like scorers (later ``type`` wins).
    See :mod:`chalicelib.plugins.adapter_contract`.

    Not ``firstresult``: every implementation is called.
    """
    raise NotImplementedError


@hookspec
def pawl_register_embedding_backends() -> dict[str, BackendFactory]:
    """Return ``{name: factory}`` of embedding backends (``PAWL_EMBEDDING_PROVIDER`` names one).

    Called when the deployment's backend is built. ``factory(model=...)`` is called with
    ``PAWL_EMBEDDING_MODEL`` (``None`` when unset) and returns an
    :class:`~chalicelib.plugins.embedding_contract.EmbeddingBackend`.

    Not ``firstresult``: every implementation is called; the dicts are merged, a later
    registration winning a name.
    """
    raise NotImplementedError


@hookspec
def pawl_register_builtin_tools() -> dict[str, BuiltinToolAction]:
    """Return ``{action_name: action}`` for ``builtin`` tools (``tool`` scorers call them).

    Called whenever the actions are looked up. An action receives the tool input dict and
    answers a JSON object (or text holding one); see
    :data:`chalicelib.domain.tools.BuiltinToolAction`.

    Not ``firstresult``: every implementation is called; the dicts are merged, a later
    registration winning an action name.
    """
    raise NotImplementedError


@hookspec
def pawl_validate_baseline(eval: Eval, candidate: EvalRun, baseline: EvalRun) -> str | None:
    """Decide whether ``baseline`` may serve as the baseline of the run ``candidate``.

    Called for every baseline selection, after pawl's own rules (a completed or failed
    run of the same ``eval``) and before anything is written; ``candidate`` is the run
    about to start. The arguments are copies: changing them changes nothing. Return a
    reason string to refuse, or ``None`` to accept.

    Not ``firstresult``: every implementation is called, and any refusal refuses the
    selection. The reasons are logged, never returned to the caller (they could tell
    one tenant about another's runs).
    """
    raise NotImplementedError


@hookspec
def pawl_deliver_event(event: LifecycleEvent) -> None:
    """Deliver one lifecycle event (``eval_run.completed`` / ``eval_run.failed``, and an
    agent's ``agents.release.promoted`` / ``agents.release.aborted``: check ``event.event``).

    Called once per sink for every terminal run and every ended release. Sinks are called
    one at a time, each isolated: an exception in one is logged and does not stop the
    others. A sink must be quick; slow work (HTTP) should be queued. After a crash a sink
    may see the same ``event.id`` again.

    Not ``firstresult`` (nothing is returned): every sink is called.
    """
    raise NotImplementedError
