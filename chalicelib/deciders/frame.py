"""What an AI-provider backend is shown: the questions, the answer shape, then the input.

The wording is pawl's, not the decider's: ``decider_version`` tracks the questions, so a
release that rewords this frame can move answers on an unchanged decider.
"""

from __future__ import annotations

import json
from typing import Any

from chalicelib.domain.deciders import ChoiceQuestion, Question, ScoreQuestion

SYSTEM = (
    "You answer questions about an input. Reply with one JSON object and nothing else: "
    "one key per question name, each answer confined to what its question allows."
)


def _describe(question: Question) -> list[str]:
    lines = [f"### {question.name} ({question.kind})", question.prompt]
    if isinstance(question, ScoreQuestion):
        lines.append('Answer {"score": N} with the number of the level that fits:')
        lines += [f"- {index}: {label}" for index, label in enumerate(question.levels)]
    elif isinstance(question, ChoiceQuestion):
        lines.append('Answer {"choice": "<option>"} with exactly one of these options:')
        lines += [f"- {option}" for option in question.options]
    else:
        lines.append(
            'Answer {"value": true|false, "probability": P}: whether the condition holds, '
            "and your probability from 0 to 1 that it does."
        )
    return lines


def input_text(value: Any) -> str:
    """A string as written; anything else as indented JSON."""
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)


def example(questions: list[Question]) -> dict[str, Any]:
    shapes: dict[str, Any] = {}
    for question in questions:
        if isinstance(question, ScoreQuestion):
            shapes[question.name] = {"score": 0}
        elif isinstance(question, ChoiceQuestion):
            shapes[question.name] = {"choice": question.options[0]}
        else:
            shapes[question.name] = {"value": True, "probability": 0.9}
    return shapes


def messages(questions: list[Question], value: Any) -> list[dict[str, str]]:
    """The chat messages of one decision."""
    parts = ["Answer every question below about the input that follows.", "", "## Questions"]
    for question in questions:
        parts += ["", *_describe(question)]
    parts += [
        "",
        "## Answer shape",
        json.dumps(example(questions)),
        "",
        "## Input",
        "",
        "<input>",
        input_text(value),
        "</input>",
    ]
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n".join(parts)}]
