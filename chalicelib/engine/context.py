"""What executing an item of a run needs, resolved once per run per batch.

The agent version is immutable once written, so it is cached per process: a worker
that executes thousands of items of one run reads it once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from chalicelib.domain.catalog import AgentVersion
from chalicelib.domain.runs import RunState
from chalicelib.plugins.manager import plugins
from chalicelib.scoring.contract import ScorerConfig
from chalicelib.store import agents


@dataclass(frozen=True)
class BoundScorer:
    """One scorer of the run's snapshot: its result key, implementation and parsed config."""

    key: str
    impl: Any
    config: ScorerConfig
    #: Whether scoring may make a call (a judge, a tool, an embedding, a decision): the
    #: scorer's optional ``calls_out`` attribute, True unless it says otherwise.
    calls_out: bool = True


@dataclass(frozen=True)
class BoundAgent:
    """The pinned agent version with its adapter and parsed config."""

    version: AgentVersion
    adapter: Any
    config: Any

    @property
    def agent_id(self) -> str:
        return self.version.agent_id


def always_continue() -> bool:
    return True


@dataclass(frozen=True)
class RunContext:
    state: RunState
    agent: BoundAgent
    scorers: tuple[BoundScorer, ...]
    #: Whether the run still wants new calls (``engine.run_watch``): False once it is
    #: cancelled. Asked before each agent and scorer call, and handed to the agent call.
    should_continue: Callable[[], bool] = field(default=always_continue, compare=False)

    @property
    def run_id(self) -> str:
        return self.state.id

    @property
    def eval_id(self) -> str:
        return self.state.run.eval_id


@lru_cache(maxsize=512)
def pinned_version(agent_id: str, version: int) -> AgentVersion:
    return agents.get_agent_version(agent_id, version)


def bind_agent(version: AgentVersion) -> BoundAgent:
    adapter = plugins().adapter(version.type)
    return BoundAgent(version, adapter, adapter.config_model.model_validate(version.config))


def scorer_key(config: dict[str, Any]) -> str:
    """The key a result's score entry carries: the type, or the name of a named scorer."""
    from chalicelib.scoring.validation import scorer_key as key_of

    return str(key_of(config))


def bind_scorers(configs: list[dict[str, Any]]) -> tuple[BoundScorer, ...]:
    bound = []
    for raw in configs:
        impl = plugins().scorer(str(raw.get("type")))
        config = impl.config_model.model_validate(raw)
        calls_out = bool(getattr(impl, "calls_out", True))
        bound.append(BoundScorer(scorer_key(raw), impl, config, calls_out))
    return tuple(bound)


def load_context(
    state: RunState, should_continue: Callable[[], bool] = always_continue
) -> RunContext:
    version = pinned_version(state.snapshot.agent_id, state.run.agent_version)
    return RunContext(
        state=state,
        agent=bind_agent(version),
        scorers=bind_scorers(state.snapshot.scorers),
        should_continue=should_continue,
    )
