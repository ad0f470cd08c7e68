"""The embedding_similarity scorer: the similarity maths, pass semantics, and how backend
selection and backend answers turn into outcomes or errored items.

Backends here are small plugins registered through the real plugin hook (the extension
point a third party uses); the built-in backends are exercised in
tests/integration/test_embeddings.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import ValidationError

from chalicelib import wiring
from chalicelib.embeddings import EmbeddingFailed, EmbeddingResult
from chalicelib.plugins.markers import hookimpl
from chalicelib.scoring.configs import EmbeddingSimilarityConfig
from chalicelib.scoring.contract import ItemContext, ScorerFailed, ScoringEnv, UsageRecord
from chalicelib.scoring.embedding_similarity import (
    cosine_similarity,
    embedding_similarity_scorer,
    outcome_from_vectors,
    similarity_score,
)

ENV = ScoringEnv(project_id="proj_test")
SCORER = embedding_similarity_scorer


def config(threshold: float) -> EmbeddingSimilarityConfig:
    return EmbeddingSimilarityConfig(type="embedding_similarity", pass_threshold=threshold)


def item(output: str | None, expected: str | None) -> ItemContext:
    return ItemContext(
        input=[{"role": "user", "content": "q"}],
        output=output,
        expected=expected,
        item_metadata={},
    )


# --- the maths ----------------------------------------------------------------------------


def test_cosine_similarity_is_the_angle_not_the_length() -> None:
    assert cosine_similarity([1.0, 0.0], [5.0, 0.0]) == pytest.approx(1.0)
    assert cosine_similarity([1.0, 0.0], [0.0, 2.0]) == pytest.approx(0.0)
    assert cosine_similarity([1.0, 1.0], [1.0, 0.0]) == pytest.approx(1 / math.sqrt(2))
    assert cosine_similarity([1.0, 2.0], [-1.0, -2.0]) == pytest.approx(-1.0)


def test_cosine_similarity_refuses_what_has_no_angle() -> None:
    with pytest.raises(ValueError, match="zero vector"):
        cosine_similarity([0.0, 0.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="dimensions 2 and 3"):
        cosine_similarity([1.0, 0.0], [1.0, 0.0, 0.0])


def test_score_is_clamped_to_zero_and_one() -> None:
    assert similarity_score([1.0, 2.0], [-1.0, -2.0]) == 0.0
    assert similarity_score([3.0, -1.0], [-1.0, 0.5]) == 0.0
    # Rounding can push the cosine of near-identical vectors past 1.
    assert similarity_score([0.1] * 384, [0.1] * 384) <= 1.0
    assert similarity_score([0.1] * 384, [0.1] * 384) == pytest.approx(1.0)


def test_passing_means_reaching_the_threshold() -> None:
    assert outcome_from_vectors([1.0, 0.0], [1.0, 0.0], 1.0).passed
    exactly = outcome_from_vectors([1.0, 0.0], [0.0, 1.0], 0.0)
    assert (exactly.score, exactly.passed) == (0.0, True)
    below = outcome_from_vectors([1.0, 1.0], [1.0, 0.0], 0.75)
    assert below.score == pytest.approx(0.7071, abs=1e-4)
    assert not below.passed


def test_pass_threshold_is_required_and_bounded() -> None:
    with pytest.raises(ValidationError, match="pass_threshold"):
        EmbeddingSimilarityConfig.model_validate({"type": "embedding_similarity"})
    with pytest.raises(ValidationError, match="pass_threshold"):
        EmbeddingSimilarityConfig.model_validate(
            {"type": "embedding_similarity", "pass_threshold": 1.5}
        )


# --- the scorer over a plugin backend -----------------------------------------------------


@dataclass
class TableBackend:
    """A plugin backend answering from a fixed table of vectors; records every call."""

    table: dict[str, list[float]]
    model: str = "table-v1"
    name: str = "table"
    calls: list[list[str]] = field(default_factory=list)
    answer: Callable[[list[str]], Any] | None = None

    def embed(self, texts: list[str]) -> Any:
        self.calls.append(list(texts))
        if self.answer is not None:
            return self.answer(texts)
        return EmbeddingResult(
            vectors=[self.table[t] for t in texts], model=self.model, input_tokens=3 * len(texts)
        )


class BackendPlugin:
    def __init__(self, backends: dict[str, Callable[..., Any]]) -> None:
        self.backends = backends

    @hookimpl
    def pawl_register_embedding_backends(self) -> dict[str, Any]:
        return self.backends


@pytest.fixture
def deployment(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    """Configure PAWL_EMBEDDING_* and register plugin backends on a fresh plugin host."""

    def configure(
        provider: str | None,
        backends: dict[str, Callable[..., Any]] | None = None,
        model: str | None = None,
    ) -> None:
        for name, value in (("PAWL_EMBEDDING_PROVIDER", provider), ("PAWL_EMBEDDING_MODEL", model)):
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, value)
        wiring.reload_settings()
        host = wiring.new_plugin_host(load_entry_points=False)
        if backends:
            host.pm.register(BackendPlugin(backends), name="test-embeddings")
        wiring.install_plugins(host)

    yield configure
    wiring.reload_settings()
    wiring.install_plugins()


TABLE = {
    "Paris": [1.0, 0.0, 0.0],
    "The capital is Paris.": [0.9, 0.1, 0.0],
    "Lyon": [0.0, 1.0, 0.0],
    "not Paris": [-1.0, 0.0, 0.0],
}


def test_both_texts_go_in_one_call_and_usage_is_attributed_to_embedding(
    deployment: Callable[..., None],
) -> None:
    backend = TableBackend(TABLE)
    deployment("table", {"table": lambda model: backend})

    outcome = SCORER.score(config(0.9), item("The capital is Paris.", "Paris"), ENV)

    assert backend.calls == [["The capital is Paris.", "Paris"]]
    assert outcome.score == pytest.approx(0.9 / math.sqrt(0.82))
    assert outcome.passed
    assert outcome.usage == (UsageRecord(source="embedding", input_tokens=6, model="table-v1"),)


def test_unrelated_and_opposite_answers_score_zero_but_are_scored(
    deployment: Callable[..., None],
) -> None:
    backend = TableBackend(TABLE)
    deployment("table", {"table": lambda model: backend})

    orthogonal = SCORER.score(config(0.5), item("Lyon", "Paris"), ENV)
    opposite = SCORER.score(config(0.5), item("not Paris", "Paris"), ENV)

    assert (orthogonal.score, orthogonal.passed) == (0.0, False)
    assert (opposite.score, opposite.passed) == (0.0, False)
    assert len(backend.calls) == 2


@pytest.mark.parametrize(
    ("output", "expected"),
    [("Paris", None), ("Paris", ""), ("Paris", "   "), ("", "Paris"), (None, "Paris")],
)
def test_nothing_to_compare_scores_zero_without_calling_the_backend(
    deployment: Callable[..., None], output: str | None, expected: str | None
) -> None:
    backend = TableBackend(TABLE)
    deployment("table", {"table": lambda model: backend})

    outcome = SCORER.score(config(0.0), item(output, expected), ENV)

    assert (outcome.score, outcome.passed, outcome.usage) == (0.0, False, ())
    assert backend.calls == []


def test_no_reference_scores_zero_even_with_no_backend_configured(
    deployment: Callable[..., None],
) -> None:
    deployment(None)
    outcome = SCORER.score(config(0.5), item("Paris", None), ENV)
    assert (outcome.score, outcome.passed) == (0.0, False)


def test_the_factory_receives_the_configured_model(deployment: Callable[..., None]) -> None:
    models: list[str | None] = []

    def factory(model: str | None) -> TableBackend:
        models.append(model)
        return TableBackend(TABLE, model=model or "default")

    deployment("table", {"table": factory}, model="table-large")
    outcome = SCORER.score(config(0.5), item("Paris", "Paris"), ENV)
    SCORER.score(config(0.5), item("Lyon", "Paris"), ENV)

    assert models == ["table-large"]  # built once per settings and plugin host
    assert outcome.usage[0].model == "table-large"


def test_a_plugin_can_replace_a_builtin_backend(deployment: Callable[..., None]) -> None:
    backend = TableBackend(TABLE, name="openai")
    deployment("openai", {"openai": lambda model: backend})

    SCORER.score(config(0.5), item("Paris", "Lyon"), ENV)

    assert backend.calls == [["Paris", "Lyon"]]


def test_no_backend_configured_errors_the_item(deployment: Callable[..., None]) -> None:
    deployment(None)
    with pytest.raises(ScorerFailed, match="PAWL_EMBEDDING_PROVIDER") as failed:
        SCORER.score(config(0.5), item("Paris", "Paris"), ENV)
    assert failed.value.code == "EVAL_SCORING_FAILED"


def test_an_unknown_backend_errors_the_item_and_names_the_registered_ones(
    deployment: Callable[..., None],
) -> None:
    deployment("cohere")
    with pytest.raises(ScorerFailed, match=r"registered: local, openai"):
        SCORER.score(config(0.5), item("Paris", "Paris"), ENV)


def test_a_factory_that_raises_errors_the_item(deployment: Callable[..., None]) -> None:
    def broken(model: str | None) -> TableBackend:
        raise RuntimeError("no credentials")

    deployment("table", {"table": broken})
    with pytest.raises(ScorerFailed, match="could not be created: RuntimeError: no credentials"):
        SCORER.score(config(0.5), item("Paris", "Paris"), ENV)


def _raise_failed(texts: list[str]) -> Any:
    raise EmbeddingFailed("quota exhausted")


def _raise_bug(texts: list[str]) -> Any:
    raise KeyError("oops")


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (_raise_failed, "quota exhausted"),
        (_raise_bug, "KeyError"),
        (lambda texts: [[1.0], [1.0]], "not an EmbeddingResult"),
        (lambda texts: EmbeddingResult([[1.0, 0.0]], "m"), "1 vector"),
        (lambda texts: EmbeddingResult([[1.0, 0.0], [1.0]], "m"), "dimensions"),
        (lambda texts: EmbeddingResult([[], []], "m"), "dimensions"),
        (lambda texts: EmbeddingResult([[1.0, math.nan], [1.0, 0.0]], "m"), "non-finite"),
        (lambda texts: EmbeddingResult([[1.0, "x"], [1.0, 0.0]], "m"), "non-numeric"),
        (lambda texts: EmbeddingResult([[0.0, 0.0], [1.0, 0.0]], "m"), "all-zero"),
    ],
)
def test_a_failing_or_malformed_backend_errors_the_item_never_scores_zero(
    deployment: Callable[..., None], answer: Callable[[list[str]], Any], message: str
) -> None:
    backend = TableBackend(TABLE, answer=answer)
    deployment("table", {"table": lambda model: backend})
    with pytest.raises(ScorerFailed, match=message) as failed:
        SCORER.score(config(0.5), item("Paris", "Paris"), ENV)
    assert failed.value.meta == {"scorer": "embedding_similarity"}
