"""The judge's pure parts: slot filling, verdict parsing, and reading a chat completion."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chalicelib.completions import CompletionFailed, parse_completion, request_body
from chalicelib.scoring.contract import ScorerFailed
from chalicelib.scoring.llm_judge import (
    MAX_REASONING_CHARS,
    fill_prompt,
    first_json_object,
    parse_verdict,
)

MESSAGES = [{"role": "user", "content": "What is 2+2?"}]


def test_slots_are_filled() -> None:
    filled = fill_prompt("Q: {{input}} A: {{output}} R: {{expected}}", MESSAGES, "4", "four")
    assert filled == f"Q: {json.dumps(MESSAGES)} A: 4 R: four"


def test_a_plain_string_input_is_not_json_encoded() -> None:
    assert fill_prompt("<{{input}}>", "just text", "x", None) == "<just text>"


def test_missing_expected_fills_empty_and_slots_repeat() -> None:
    assert fill_prompt("[{{expected}}]{{output}}{{output}}", MESSAGES, "ab", None) == "[]abab"


def test_one_pass_never_re_expands_a_value() -> None:
    filled = fill_prompt(
        "out={{output}} exp={{expected}}", MESSAGES, "I said {{expected}}", "{{output}} ref"
    )
    assert filled == "out=I said {{expected}} exp={{output}} ref"


def test_unknown_slots_stay_as_written() -> None:
    template = "{{foo}} {{ output }} {{Output}} {input} {{input}"
    assert fill_prompt(template, MESSAGES, "yes", None) == "{{foo}} yes {{Output}} {input} {{input}"


def test_input_with_non_ascii_is_readable_json() -> None:
    filled = fill_prompt("{{input}}", [{"role": "user", "content": "café"}], "", None)
    assert "café" in filled and json.loads(filled)[0]["content"] == "café"


@pytest.mark.parametrize(
    ("reply", "score", "reasoning"),
    [
        ('{"score": 0.75, "reasoning": "close"}', 0.75, "close"),
        ('{"score": 1}', 1.0, None),
        ('{"score": 0, "reasoning": null}', 0.0, None),
        (
            'Sure! Here is my grade: {"score": 0.5, "reasoning": "half"} Hope that helps.',
            0.5,
            "half",
        ),
        ('```json\n{"score": 0.9, "reasoning": "good"}\n```', 0.9, "good"),
        ('Consider {this} first. {"score": 0.25}', 0.25, None),
        ('{"score": 0.3, "reasoning": "uses {braces}"} and {"score": 0.9}', 0.3, "uses {braces}"),
        ('{"score": 0.6, "reasoning": ["a", "b"]}', 0.6, '["a", "b"]'),
    ],
)
def test_verdicts_are_parsed(reply: str, score: float, reasoning: str | None) -> None:
    assert parse_verdict(reply) == (score, reasoning)


@pytest.mark.parametrize(
    "reply",
    [
        "I think it is quite good, 0.8",
        "",
        '{"score": "0.8"}',
        '{"score": true}',
        '{"score": null}',
        '{"reasoning": "no score"}',
        '{"score": 1.5}',
        '{"score": -0.1}',
        '{"score": NaN}',
        '{"score": Infinity}',
        '{"score": 0.5',
        '{"grade": {"score": 0.5}}',
    ],
)
def test_replies_without_a_verdict_fail_never_zero(reply: str) -> None:
    with pytest.raises(ScorerFailed) as failed:
        parse_verdict(reply)
    assert failed.value.code == "JUDGE_REPLY_INVALID"


def test_long_reasoning_is_cut() -> None:
    _, reasoning = parse_verdict(json.dumps({"score": 1, "reasoning": "x" * 10_000}))
    assert reasoning is not None and len(reasoning) == MAX_REASONING_CHARS


def test_first_json_object_skips_non_json_braces() -> None:
    assert first_json_object('{not json} {"a": {"b": 1}} {"c": 2}') == {"a": {"b": 1}}
    assert first_json_object("no braces") is None


def test_request_body_is_tool_less_at_temperature_zero() -> None:
    body = request_body("m", MESSAGES)
    assert body["temperature"] == 0 and body["model"] == "m" and body["messages"] == MESSAGES
    assert "tools" not in body and "tool_choice" not in body


def completion(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3},
    }
    data.update(overrides)
    return data


def test_completion_usage_and_cost() -> None:
    parsed = parse_completion(completion(), "m")
    assert (parsed.content, parsed.model, parsed.finish_reason) == ("hi", "m", "stop")
    assert (parsed.usage.input_tokens, parsed.usage.output_tokens) == (12, 3)
    assert parsed.usage.cost_usd == 0.0
    reported = completion(usage={"prompt_tokens": 1, "completion_tokens": 1, "cost": 0.002})
    assert parse_completion(reported, "m").usage.cost_usd == 0.002
    odd = completion(usage={"prompt_tokens": "many", "completion_tokens": -4, "cost": True})
    assert parse_completion(odd, "m").usage == parse_completion(completion(usage=None), "m").usage


def test_completion_content_parts_are_joined() -> None:
    parts = [{"type": "text", "text": '{"score":'}, {"type": "text", "text": " 1}"}]
    data = completion(choices=[{"message": {"content": parts}}])
    assert parse_completion(data, "m").content == '{"score": 1}'


@pytest.mark.parametrize(
    "data",
    [
        {},
        [],
        {"choices": []},
        {"choices": ["x"]},
        {"choices": [{"message": {"content": None}}]},
        {"choices": [{"message": "text"}]},
    ],
)
def test_not_a_completion(data: Any) -> None:
    with pytest.raises(CompletionFailed):
        parse_completion(data, "m")
