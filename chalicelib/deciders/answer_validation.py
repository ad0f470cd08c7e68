"""Holding a backend's answers to the decider's contract. Pure functions.

One answer per question, in any order, each naming its question; stored in question
order with ``type`` filled in:

- predicate: ``{value: bool, probability: 0..1}`` -- either may be omitted, not both
  (a bare value records probability 1 or 0; a bare probability its ``>= 0.5`` value);
- score: ``{score: level index}`` -- an integer from 0 to levels - 1 (``label`` is added);
- choice: ``{choice: one of options}``.

``type`` is optional and must match the question's. Anything else is refused.
"""

from __future__ import annotations

import math
from typing import Any

from chalicelib.domain.deciders import ChoiceQuestion, PredicateQuestion, Question, ScoreQuestion

DECISION_ANSWER_INVALID = "DECISION_ANSWER_INVALID"

_FIELDS = {
    "predicate": {"value", "probability"},
    "score": {"score"},
    "choice": {"choice"},
}


class AnswerInvalid(Exception):
    """The backend answered outside the questions' answer space."""


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _predicate(question: PredicateQuestion, raw: dict[str, Any]) -> dict[str, Any]:
    where = f"answer {question.name!r}"
    value, probability = raw.get("value"), raw.get("probability")
    if value is None and probability is None:
        raise AnswerInvalid(f"{where}: a predicate needs value (true/false) or probability")
    if value is not None and not isinstance(value, bool):
        raise AnswerInvalid(f"{where}: value must be true or false")
    number: float | None = None
    if probability is not None:
        number = _number(probability)
        if number is None or not 0 <= number <= 1:
            raise AnswerInvalid(f"{where}: probability must be a number from 0 to 1")
    if number is None:
        number = 1.0 if value else 0.0
    if value is None:
        value = number >= 0.5
    return {"type": "predicate", "name": question.name, "value": value, "probability": number}


def _score(question: ScoreQuestion, raw: dict[str, Any]) -> dict[str, Any]:
    top = len(question.levels) - 1
    number = _number(raw.get("score"))
    if number is None or not number.is_integer() or not 0 <= number <= top:
        raise AnswerInvalid(
            f"answer {question.name!r}: score must be a level index, an integer from 0 to {top}"
        )
    index = int(number)
    label = question.levels[index]
    return {"type": "score", "name": question.name, "score": index, "label": label}


def _choice(question: ChoiceQuestion, raw: dict[str, Any]) -> dict[str, Any]:
    choice = raw.get("choice")
    if not isinstance(choice, str) or choice not in question.options:
        raise AnswerInvalid(
            f"answer {question.name!r}: choice must be one of {', '.join(question.options)}"
        )
    return {"type": "choice", "name": question.name, "choice": choice}


def _one(question: Question, raw: dict[str, Any]) -> dict[str, Any]:
    kind = raw.get("type", question.kind)
    if kind != question.kind:
        raise AnswerInvalid(
            f"answer {question.name!r}: type {kind!r} is not the question's {question.kind!r}"
        )
    extra = set(raw) - _FIELDS[question.kind] - {"name", "type"}
    if extra:
        raise AnswerInvalid(
            f"answer {question.name!r}: unknown field(s) {', '.join(sorted(extra))}"
        )
    if isinstance(question, PredicateQuestion):
        return _predicate(question, raw)
    if isinstance(question, ScoreQuestion):
        return _score(question, raw)
    return _choice(question, raw)


def _by_name(questions: list[Question], raw_answers: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(raw_answers, list):
        raise AnswerInvalid("answers must be a list with one answer per question")
    known = {q.name for q in questions}
    seen: dict[str, dict[str, Any]] = {}
    for index, raw in enumerate(raw_answers):
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
            raise AnswerInvalid(f"answers.{index} must be an object naming its question")
        name = raw["name"]
        if name not in known:
            raise AnswerInvalid(f"answers.{index} names no question ({name!r})")
        if name in seen:
            raise AnswerInvalid(f"question {name!r} is answered twice")
        seen[name] = raw
    missing = [q.name for q in questions if q.name not in seen]
    if missing:
        raise AnswerInvalid(f"no answer to question(s) {', '.join(missing)}")
    return seen


def validate_answers(questions: list[Question], raw_answers: Any) -> list[dict[str, Any]]:
    """Every question's answer, in question order, or :class:`AnswerInvalid`."""
    by_name = _by_name(questions, raw_answers)
    return [_one(question, by_name[question.name]) for question in questions]


def answers_from_object(questions: list[Question], answer: dict[str, Any]) -> list[dict[str, Any]]:
    """Validate a backend's answer object: ``{"answers": [...]}``, or one key per question.

    The keyed form (``{"tone": {"score": 2}, ...}``) is what a model is asked to write; the
    list form is what a tool answers (the shape of OpenAI's Decisions API).
    """
    if "answers" in answer:
        return validate_answers(questions, answer["answers"])
    entries = []
    for name, fields in answer.items():
        if not isinstance(fields, dict):
            raise AnswerInvalid(f"answer {name!r} must be an object")
        entries.append({**fields, "name": name})
    return validate_answers(questions, entries)
