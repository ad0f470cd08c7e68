"""Re-export of :mod:`chalicelib.plugins.scorer_contract` (the scorer contract's old home).

The contract now lives below the hook specs, in the plugin package, so the plugin host no
longer reaches up into ``scoring/`` for its types.
"""

from chalicelib.plugins.scorer_contract import (
    PROJECT_FALLBACKS,
    CatalogKind,
    CatalogResource,
    ItemContext,
    ProjectSetting,
    ScoreOutcome,
    Scorer,
    ScorerConfig,
    ScorerFailed,
    ScoringEnv,
    UsageRecord,
    ValidationEnv,
)

__all__ = [
    "PROJECT_FALLBACKS",
    "CatalogKind",
    "CatalogResource",
    "ItemContext",
    "ProjectSetting",
    "ScoreOutcome",
    "Scorer",
    "ScorerConfig",
    "ScorerFailed",
    "ScoringEnv",
    "UsageRecord",
    "ValidationEnv",
]
