"""The ``openwop_expected`` scorer: an OpenWOP task's own ``expected`` block decides.

Each item of a ``/v2`` suite's dataset carries its task's ``expected`` in its metadata
(``metadata.expected``). A ``golden`` task scores 1.0 when ``expected.match`` holds, else
0.0 (:mod:`chalicelib.openwop.matching`); a ``rubric`` task is graded through the
``llm_judge`` scorer's machinery (the project's judge provider, one completion, usage
recorded as ``eval_judge``) against its weighted criteria (:mod:`chalicelib.openwop.rubric`).
A golden task passes on a match; a rubric task passes when its score reaches
``rubric_pass_score``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from chalicelib.completions import ChatEndpoint, CompletionFailed, complete
from chalicelib.openwop import matching, rubric
from chalicelib.plugins.decorators import scorer
from chalicelib.plugins.scorer_contract import ItemContext, ScoreOutcome, ScorerFailed, ScoringEnv
from chalicelib.scoring import llm_judge
from chalicelib.scoring.configs import BuiltinConfig, Threshold
from chalicelib.store import secrets

TYPE = "openwop_expected"


class OpenwopExpectedConfig(BuiltinConfig):
    type: Literal["openwop_expected"]
    rubric_pass_score: Threshold = Field(1.0, description="A rubric task's bar")


def _expected(item: ItemContext) -> dict[str, Any]:
    expected = item.item_metadata.get("expected")
    if not isinstance(expected, dict) or expected.get("kind") not in {"golden", "rubric"}:
        raise ScorerFailed(
            "this item carries no OpenWOP expected block (metadata.expected)",
            code="OPENWOP_EXPECTED_MISSING",
        )
    return expected


def _golden(match: dict[str, Any], item: ItemContext) -> ScoreOutcome:
    structured = item.object if item.has_object else matching.no_structured_output()
    try:
        verdict = matching.matches(match, item.output, structured)
    except (KeyError, ValueError) as exc:
        raise ScorerFailed(f"expected.match cannot be applied: {exc}") from None
    return ScoreOutcome(score=1.0 if verdict else 0.0, passed=verdict)


def _rubric(criteria: list[dict[str, Any]], item: ItemContext, env: ScoringEnv, bar: float) -> Any:
    provider = llm_judge.resolve_provider(env, None)
    endpoint = ChatEndpoint(
        base_url=provider.base_url,
        model=provider.default_model,
        api_key_env=provider.api_key_env,
        secret_key=secrets.opener(provider.project_id, provider.secret_id),
    )
    text = rubric.prompt(item.input, item.output, criteria)
    try:
        completion = complete(endpoint, llm_judge.judge_messages(text))
    except CompletionFailed as exc:
        raise ScorerFailed(
            f"judge call failed: {exc.message}", code=llm_judge.CALL_FAILED, status=exc.status
        ) from None
    usage = llm_judge.usage_record(completion)
    try:
        score = rubric.weighted_score(criteria, llm_judge.first_json_object(completion.content))
    except ValueError as exc:
        raise ScorerFailed(
            f"the judge's reply is not a verdict: {exc}",
            code=llm_judge.REPLY_INVALID,
            usage=usage,
        ) from None
    return ScoreOutcome(score=score, passed=score >= bar, usage=(usage,))


# Nothing to look up at validation (no ``check``): a rubric suite's judge is checked
# when its run starts.
@scorer(TYPE)
def openwop_expected_scorer(
    config: OpenwopExpectedConfig, item: ItemContext, env: ScoringEnv
) -> ScoreOutcome:
    expected = _expected(item)
    if expected["kind"] == "golden":
        return _golden(expected.get("match") or {}, item)
    outcome: ScoreOutcome = _rubric(
        list(expected.get("rubric") or []), item, env, config.rubric_pass_score
    )
    return outcome
