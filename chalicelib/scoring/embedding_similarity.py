"""The ``embedding_similarity`` scorer: cosine similarity of output and reference embeddings.

Both texts are embedded in one call of the deployment's embedding backend
(:mod:`chalicelib.embeddings`); the cosine similarity, clamped to 0..1, is the score, and
the item passes when it reaches the scorer's ``pass_threshold``.

- No reference answer (``expected_output`` missing or blank): score 0, cannot pass, and
  the backend is not called. A blank output with a reference also scores 0 without a call:
  an empty answer says nothing, and OpenAI-compatible endpoints refuse empty inputs.
- Any backend failure raises :class:`ScorerFailed`: the item errors, it is never scored 0.
- The embedding call's tokens are reported as usage under ``source="embedding"``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from chalicelib import embeddings
from chalicelib.plugins.decorators import scorer
from chalicelib.plugins.scorer_contract import ItemContext, ScoreOutcome, ScorerFailed, UsageRecord
from chalicelib.scoring.configs import EmbeddingSimilarityConfig

USAGE_SOURCE = "embedding"
NO_REFERENCE = ScoreOutcome(score=0.0, passed=False)


def cosine_similarity(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine of the angle between ``a`` and ``b`` (both non-zero, same dimension)."""
    if len(a) != len(b):
        raise ValueError(f"vectors of dimensions {len(a)} and {len(b)}")
    norm_a = math.sqrt(math.fsum(x * x for x in a))
    norm_b = math.sqrt(math.fsum(y * y for y in b))
    if norm_a == 0.0 or norm_b == 0.0:
        raise ValueError("the cosine similarity of a zero vector is undefined")
    return math.fsum(x * y for x, y in zip(a, b, strict=True)) / (norm_a * norm_b)


def similarity_score(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity clamped to 0..1: opposite or unrelated meanings both score 0."""
    return min(1.0, max(0.0, cosine_similarity(a, b)))


def outcome_from_vectors(
    output_vector: Sequence[float], expected_vector: Sequence[float], pass_threshold: float
) -> ScoreOutcome:
    score = similarity_score(output_vector, expected_vector)
    return ScoreOutcome(score=score, passed=score >= pass_threshold)


# The backend is deployment configuration, not the eval's: a missing or failing backend
# errors items at run time rather than refusing the eval (so no ``check``).
@scorer("embedding_similarity")
def embedding_similarity_scorer(
    config: EmbeddingSimilarityConfig, item: ItemContext
) -> ScoreOutcome:
    expected = item.expected
    output = item.output or ""
    if expected is None or not expected.strip() or not output.strip():
        return NO_REFERENCE
    try:
        result = embeddings.embed([output, expected])
        outcome = outcome_from_vectors(
            result.vectors[0], result.vectors[1], float(config.pass_threshold)
        )
    except (embeddings.EmbeddingFailed, ValueError) as exc:
        raise ScorerFailed(f"embedding failed: {exc}", scorer="embedding_similarity") from None
    usage = UsageRecord(source=USAGE_SOURCE, input_tokens=result.input_tokens, model=result.model)
    return ScoreOutcome(score=outcome.score, passed=outcome.passed, usage=(usage,))
