"""The ``regex`` scorer: 1 when the agent's output matches a pattern, else 0.

Config: ``{"type": "regex", "pattern": "...", "flags": ["IGNORECASE", ...],
"full_match": false}`` (the function's parameters below). By default the pattern may
match anywhere in the output (``search``); ``full_match`` requires it to match the whole
output.

Patterns are compiled with the ``regex`` library rather than ``re`` because it can
bound a match in time: a pattern that backtracks catastrophically on some output
errors that item instead of pinning a worker until its Lambda times out.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Literal

import regex
from pydantic import Field

from pawl.plugins import ItemContext, ScoreOutcome, ScorerFailed, ValidationFailed, scorer

FlagName = Literal["IGNORECASE", "MULTILINE", "DOTALL"]

FLAGS: dict[str, int] = {
    "IGNORECASE": regex.IGNORECASE,
    "MULTILINE": regex.MULTILINE,
    "DOTALL": regex.DOTALL,
}
MAX_PATTERN_LENGTH = 2000
#: Seconds one match may take before the item is errored.
MATCH_TIMEOUT_S = 1.0

# "format": "regex" tells schema-driven clients (and fuzzers) it must compile.
Pattern = Annotated[
    str,
    Field(min_length=1, max_length=MAX_PATTERN_LENGTH, json_schema_extra={"format": "regex"}),
]


@lru_cache(maxsize=256)
def _compile(pattern: str, flags: tuple[str, ...]) -> regex.Pattern[str]:
    combined = 0
    for name in flags:
        combined |= FLAGS[name]
    return regex.compile(pattern, combined)


def compile_pattern(pattern: str, flags: list[FlagName] | None) -> regex.Pattern[str]:
    """The compiled pattern; ``ValidationFailed`` naming ``pattern`` when it does not compile."""
    try:
        return _compile(pattern, tuple(sorted(set(flags or ()))))
    except regex.error as exc:
        raise ValidationFailed(
            f"pattern is not a valid regular expression: {exc}", field="pattern"
        ) from None


@scorer("regex", check=compile_pattern, calls_out=False)
def regex_scorer(
    item: ItemContext,
    pattern: Pattern,
    flags: list[FlagName] | None = None,
    full_match: bool = False,
) -> ScoreOutcome:
    """Score 1 when ``item.output`` matches ``pattern``; the item errors without output."""
    if item.output is None:
        raise ScorerFailed("the agent produced no text output to match", reason="no_output")
    try:
        compiled = compile_pattern(pattern, flags)
    except ValidationFailed as exc:
        raise ScorerFailed(exc.message, reason="invalid_pattern") from None
    match_fn = compiled.fullmatch if full_match else compiled.search
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
