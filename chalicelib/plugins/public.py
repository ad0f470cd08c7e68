"""The plugin API in one module: what ``pawl.plugins`` (and ``import pawl``) re-exports.

Everything a plugin needs to write a scorer, an agent adapter, an event sink or a baseline
rule, and nothing that is not a promise. It imports only the plugin package and the few
types the contracts are made of, so it loads inside the Lambda package as well.
"""

from chalicelib.domain.events import LifecycleEvent
from chalicelib.errors import ValidationFailed
from chalicelib.plugins.adapter_contract import (
    AdapterConfig,
    AdapterFailed,
    AgentReply,
    AgentRequest,
    Usage,
)
from chalicelib.plugins.decorators import agent_adapter, scorer
from chalicelib.plugins.event_decorators import baseline_validator, event_sink
from chalicelib.plugins.markers import hookimpl
from chalicelib.plugins.scorer_contract import (
    ItemContext,
    ScoreOutcome,
    ScorerConfig,
    ScorerFailed,
    ScoringEnv,
    UsageRecord,
    ValidationEnv,
)

__all__ = [
    "AdapterConfig",
    "AdapterFailed",
    "AgentReply",
    "AgentRequest",
    "ItemContext",
    "LifecycleEvent",
    "ScoreOutcome",
    "ScorerConfig",
    "ScorerFailed",
    "ScoringEnv",
    "Usage",
    "UsageRecord",
    "ValidationEnv",
    "ValidationFailed",
    "agent_adapter",
    "baseline_validator",
    "event_sink",
    "hookimpl",
    "scorer",
]
