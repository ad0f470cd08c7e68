"""A rubric task's judge prompt and its weighted score (RFC 0081 §A ``expected.rubric``).

The judge is asked whether each criterion is met and answers ``{"met": [true, ...]}``, one
flag per criterion in order; the task score is the weight of the met criteria over the
total weight. The criteria text goes to the judge only, never into a summary or event.
"""

from __future__ import annotations

import json
from typing import Any

PROMPT = """You grade an AI agent's answer against criteria.

The conversation the agent received (JSON):
{input}

The agent's answer:
{output}

Criteria, numbered from 0:
{criteria}

Reply with one JSON object and nothing else: {{"met": [<true|false for criterion 0>, ...]}},
one boolean per criterion, in order."""


def prompt(messages: list[dict[str, Any]], output: str | None, rubric: list[dict[str, Any]]) -> str:
    criteria = "\n".join(f"{i}. {c['criterion']}" for i, c in enumerate(rubric))
    return PROMPT.format(
        input=json.dumps(messages, ensure_ascii=False), output=output or "", criteria=criteria
    )


def weighted_score(rubric: list[dict[str, Any]], verdict: dict[str, Any] | None) -> float:
    """The weight of the met criteria over the total; ValueError when there is no verdict."""
    flags = None if verdict is None else verdict.get("met")
    if not isinstance(flags, list) or len(flags) != len(rubric):
        raise ValueError(f"the judge must answer {len(rubric)} met flags")
    if not all(isinstance(flag, bool) for flag in flags):
        raise ValueError("every met flag must be true or false")
    total = sum(float(c["weight"]) for c in rubric)
    if total <= 0:
        raise ValueError("the criteria weights sum to 0")
    met = sum(float(c["weight"]) for c, flag in zip(rubric, flags, strict=True) if flag)
    return min(1.0, met / total)
