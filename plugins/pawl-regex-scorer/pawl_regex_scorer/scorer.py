"""The ``regex`` scorer: 1 when the agent's output matches a pattern, else 0.

Config: ``{"type": "regex", "pattern": "...", "flags": ["IGNORECASE", ...],
"full_match": false}``. By default the pattern may match anywhere in the output
(``search``); ``full_match`` requires it to match the whole output.

Patterns are compiled with the ``regex`` library rather than ``re`` because it can
bound a match in time: a pattern that backtracks catastrophically on some output
errors that item instead of pinning a worker until its Lambda times out.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

import regex
from pydantic import ConfigDict, Field

from chalicelib.errors import ValidationFailed
from chalicelib.scoring.contract import (
    ItemContext,
    ScoreOutcome,
    ScorerConfig,
    ScorerFailed,
    ScoringEnv,
    ValidationEnv,
)

FlagName = Literal["IGNORECASE", "MULTILINE", "DOTALL"]

FLAGS: dict[str, int] = {
    "IGNORECASE": regex.IGNORECASE,
    "MULTILINE": regex.MULTILINE,
    "DOTALL": regex.DOTALL,
}
MAX_PATTERN_LENGTH = 2000
#: Seconds one match may take before the item is errored.
MATCH_TIMEOUT_S = 1.0


class RegexConfig(ScorerConfig):
    # Strict like pawl's built-in configs: "true" is not coerced to a boolean.
    model_config = ConfigDict(extra="forbid", strict=True)

    type: Literal["regex"]
    # "format": "regex" tells schema-driven clients (and fuzzers) it must compile.
    pattern: str = Field(
        min_length=1, max_length=MAX_PATTERN_LENGTH, json_schema_extra={"format": "regex"}
    )
    flags: list[FlagName] = Field(default_factory=list)
    full_match: bool = False


@lru_cache(maxsize=256)
def _compile(pattern: str, flags: tuple[str, ...]) -> regex.Pattern[str]:
    combined = 0
    for name in flags:
        combined |= FLAGS[name]
    return regex.compile(pattern, combined)


def compile_config(config: RegexConfig) -> regex.Pattern[str]:
    """The compiled pattern; ``ValidationFailed`` naming ``pattern`` when it does not compile."""
    try:
        return _compile(config.pattern, tuple(sorted(set(config.flags))))
    except regex.error as exc:
        raise ValidationFailed(
            f"pattern is not a valid regular expression: {exc}", field="pattern"
        ) from None


class RegexScorer:
    """Implements :class:`chalicelib.scoring.contract.Scorer` for ``type: regex``."""

    type = "regex"
    named = False
    config_model = RegexConfig

    def check(self, config: ScorerConfig, env: ValidationEnv) -> None:
        compile_config(_as_regex_config(config))

    def score(self, config: ScorerConfig, item: ItemContext, env: ScoringEnv) -> ScoreOutcome:
        regex_config = _as_regex_config(config)
        if item.output is None:
            raise ScorerFailed("the agent produced no text output to match", reason="no_output")
        try:
            compiled = compile_config(regex_config)
        except ValidationFailed as exc:
            raise ScorerFailed(exc.message, reason="invalid_pattern") from None
        match_fn = compiled.fullmatch if regex_config.full_match else compiled.search
        try:
            found = match_fn(item.output, timeout=MATCH_TIMEOUT_S)
        except TimeoutError:
            raise ScorerFailed(
                f"matching took longer than {MATCH_TIMEOUT_S}s (catastrophic backtracking?)",
                reason="timeout",
            ) from None
        if found is None:
            return ScoreOutcome(score=0.0, passed=False, reasoning="output does not match")
        return ScoreOutcome(
            score=1.0, passed=True, reasoning=f"matched at [{found.start()}, {found.end()})"
        )


def _as_regex_config(config: ScorerConfig) -> RegexConfig:
    if isinstance(config, RegexConfig):
        return config
    return RegexConfig.model_validate(config.model_dump())
