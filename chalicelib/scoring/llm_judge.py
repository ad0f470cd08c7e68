"""The ``llm_judge`` scorer: a model grades the output through a project's AI provider.

- The provider is the one the scorer pins (``ai_provider_id``) or the project's default;
  the model is the scorer's ``model`` or the provider's ``default_model``.
- The prompt's slots ``{{input}}``, ``{{output}}`` and ``{{expected}}`` are filled in one
  regex pass (:func:`fill_prompt`): a value is never re-expanded, an unknown ``{{...}}``
  stays as written.
- One tool-less completion at temperature 0 (:mod:`chalicelib.completions`).
- The reply must hold a JSON object with a numeric ``score`` in 0..1 and an optional
  ``reasoning``; the first decodable ``{...}`` is read, so prose or a code fence around it
  is fine (:func:`parse_verdict`). Anything else raises :class:`ScorerFailed`: the item
  errors, it is never scored 0.
- The completion's tokens are reported as usage with ``source="eval_judge"``, so eval spend
  separates from production spend.

Validation finds providers through the ``ai_provider`` lookup that
the composition root (:mod:`chalicelib.wiring`) registers; scoring reads the store.
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from typing import Any

from chalicelib.completions import ChatEndpoint, Completion, CompletionFailed, complete
from chalicelib.domain.ai_providers import AiProvider
from chalicelib.errors import ValidationFailed
from chalicelib.plugins.decorators import scorer
from chalicelib.plugins.scorer_contract import (
    ItemContext,
    ProjectSetting,
    ScoreOutcome,
    ScorerFailed,
    ScoringEnv,
    UsageRecord,
    ValidationEnv,
)
from chalicelib.scoring.configs import LlmJudgeConfig
from chalicelib.store import ai_providers, secrets, tenancy

USAGE_SOURCE = "eval_judge"
CALL_FAILED = "JUDGE_FAILED"
REPLY_INVALID = "JUDGE_REPLY_INVALID"
PROVIDER_MISSING = "JUDGE_PROVIDER_NOT_FOUND"
#: Reasoning beyond this is cut: a runaway judge must not push a result row past 400 KB.
MAX_REASONING_CHARS = 4000
REPLY_SNIPPET_CHARS = 200

_SLOT = re.compile(r"\{\{\s*(input|output|expected)\s*\}\}")
_decoder = json.JSONDecoder()


# --- pure parts ------------------------------------------------------------------------------


def input_text(messages: Any) -> str:
    """``{{input}}``: a plain string as is, anything else (the messages) as JSON."""
    if isinstance(messages, str):
        return messages
    return json.dumps(messages, ensure_ascii=False)


def fill_prompt(template: str, messages: Any, output: str | None, expected: str | None) -> str:
    """Fill the three slots in ONE pass: substituted text is never scanned again."""
    values = {
        "input": input_text(messages),
        "output": output or "",
        "expected": expected or "",
    }
    return _SLOT.sub(lambda match: values[match.group(1)], template)


def first_json_object(text: str) -> dict[str, Any] | None:
    """The first ``{...}`` of ``text`` that decodes as a JSON object, or None."""
    start = text.find("{")
    while start != -1:
        try:
            value, _ = _decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        return value if isinstance(value, dict) else None
    return None


def _snippet(text: str) -> str:
    return " ".join(text.split())[:REPLY_SNIPPET_CHARS]


def _reasoning(value: Any) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text[:MAX_REASONING_CHARS]


def parse_verdict(reply: str) -> tuple[float, str | None]:
    """``(score, reasoning)`` from a judge's reply; ScorerFailed when there is no verdict."""
    verdict = first_json_object(reply)
    if verdict is None:
        raise ScorerFailed(
            f"the judge's reply holds no JSON object: {_snippet(reply)!r}", code=REPLY_INVALID
        )
    score = verdict.get("score")
    # bool is an int in Python, but true/false is not a score.
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        raise ScorerFailed(
            f"the judge's score is not a number: {json.dumps(score)[:50]}", code=REPLY_INVALID
        )
    if not 0 <= score <= 1:
        raise ScorerFailed(f"the judge's score {score} is outside 0..1", code=REPLY_INVALID)
    return float(score), _reasoning(verdict.get("reasoning"))


def judge_messages(prompt: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": prompt}]


def usage_record(completion: Completion) -> UsageRecord:
    return UsageRecord(
        source=USAGE_SOURCE,
        input_tokens=completion.usage.input_tokens,
        output_tokens=completion.usage.output_tokens,
        cost_usd=completion.usage.cost_usd,
        model=completion.model,
    )


# --- provider resolution -----------------------------------------------------------------------


def _resolve_now(project_id: str, pinned: str | None) -> AiProvider | None:
    provider_id = pinned or tenancy.get_project(project_id).default_ai_provider_id
    return ai_providers.find_provider(project_id, provider_id) if provider_id else None


@lru_cache(maxsize=256)
def _resolve_for_run(run_id: str, project_id: str, pinned: str | None) -> AiProvider | None:
    # One provider per run and worker process: an item costs no extra reads, and a
    # provider edited mid-run does not split a run between two judges.
    return _resolve_now(project_id, pinned)


def resolve_provider(env: ScoringEnv, pinned: str | None) -> AiProvider:
    """The provider that judges this item (pinned, else the project default)."""
    if env.run_id:
        provider = _resolve_for_run(env.run_id, env.project_id, pinned)
    else:
        provider = _resolve_now(env.project_id, pinned)
    if provider is None:
        what = f"ai_provider {pinned}" if pinned else "the project's default ai_provider"
        raise ScorerFailed(
            f"{what} was not found in project {env.project_id}", code=PROVIDER_MISSING
        )
    return provider


# --- the scorer --------------------------------------------------------------------------------


def missing_default(default_id: str) -> ValidationFailed:
    """What an unpinned judge gets when the project's default provider is not there (or,
    at the API, not readable by the caller: docs/iam.md)."""
    return ValidationFailed(
        f"the project's default ai_provider {default_id} no longer exists",
        field="ai_provider_id",
    )


def _check(config: LlmJudgeConfig, env: ValidationEnv) -> None:
    """A pinned provider must be in the project; else the project needs a default."""
    provider_id = config.ai_provider_id
    if provider_id is not None:
        if env.lookup("ai_provider", provider_id) is None:
            raise ValidationFailed(
                f"ai_provider {provider_id} not found in this project", field="ai_provider_id"
            )
        return
    default_id = env.project_default("default_ai_provider_id")
    if default_id is None:
        raise ValidationFailed(
            "llm_judge pins no ai_provider_id and the project has no "
            "default_ai_provider_id: pin a provider or set the project's default",
            field="ai_provider_id",
        )
    if env.phase == "run_start" and env.lookup("ai_provider", default_id) is None:
        raise missing_default(default_id)


def project_fallbacks(config: dict[str, Any]) -> tuple[ProjectSetting, ...]:
    """The project settings this config falls back on: the default provider, unpinned."""
    return () if config.get("ai_provider_id") else ("default_ai_provider_id",)


@scorer("llm_judge", check=_check, project_fallbacks=project_fallbacks)
def llm_judge_scorer(config: LlmJudgeConfig, item: ItemContext, env: ScoringEnv) -> ScoreOutcome:
    provider = resolve_provider(env, config.ai_provider_id)
    endpoint = ChatEndpoint(
        base_url=provider.base_url,
        model=config.model or provider.default_model,
        api_key_env=provider.api_key_env,
        secret_key=secrets.opener(provider.project_id, provider.secret_id),
    )
    prompt = fill_prompt(config.prompt, item.input, item.output, item.expected)
    try:
        completion = complete(endpoint, judge_messages(prompt))
    except CompletionFailed as exc:
        raise ScorerFailed(
            f"judge call to ai_provider {provider.id} failed: {exc.message}",
            code=CALL_FAILED,
            status=exc.status,
        ) from None
    usage = usage_record(completion)
    try:
        score, reasoning = parse_verdict(completion.content)
    except ScorerFailed as exc:
        # The completion was paid for even though it gave no verdict: keep its usage.
        exc.meta["usage"] = usage
        raise
    return ScoreOutcome(
        score=score,
        passed=score >= config.pass_threshold,
        reasoning=reasoning,
        usage=(usage,),
    )


def reset_provider_cache() -> None:
    """Forget the per-run provider choices (the composition root's reset)."""
    _resolve_for_run.cache_clear()
