"""What an embedding backend is, and the checks every backend's answer must pass.

A backend turns a batch of texts into one vector per text, in order, and says what the
call cost. Backends are registered by name through ``pawl_register_embedding_backends``
(``{name: factory}``); a factory is called as ``factory(model=...)`` with
``PAWL_EMBEDDING_MODEL`` (``None`` when unset: the backend's default model).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class EmbeddingFailed(Exception):
    """The backend could not embed the texts (unreachable, bad answer, model not loadable)."""


@dataclass(frozen=True)
class EmbeddingResult:
    """One vector per input text, in input order, and the spend of the call.

    ``model`` names the model that produced the vectors (as the backend reports it), so
    usage and scores can be attributed to it; ``input_tokens`` is what the backend counted.
    """

    vectors: Sequence[Sequence[float]]
    model: str
    input_tokens: int = 0


class EmbeddingBackend(Protocol):
    """An embedding backend instance, bound to one model."""

    @property
    def name(self) -> str:
        """The name it is registered under (``openai``, ``local``, a plugin's)."""
        ...

    @property
    def model(self) -> str:
        """The model it embeds with."""
        ...

    def embed(self, texts: list[str]) -> EmbeddingResult:
        """Embed every text in one call, or raise :class:`EmbeddingFailed`."""
        ...


class BackendFactory(Protocol):
    def __call__(self, model: str | None) -> EmbeddingBackend: ...


def check_result(result: object, count: int, backend: str) -> EmbeddingResult:
    """``result`` when it holds ``count`` finite, non-zero vectors of one dimension.

    Applied to every backend's answer (plugins' included): a malformed answer must error
    the item, never turn into a made-up similarity.
    """
    if not isinstance(result, EmbeddingResult):
        raise EmbeddingFailed(
            f"embedding backend {backend!r} returned {type(result).__name__}, "
            "not an EmbeddingResult"
        )
    if len(result.vectors) != count:
        raise EmbeddingFailed(
            f"embedding backend {backend!r} returned {len(result.vectors)} vector(s) "
            f"for {count} text(s)"
        )
    dimensions = {len(vector) for vector in result.vectors}
    if len(dimensions) > 1 or 0 in dimensions:
        raise EmbeddingFailed(
            f"embedding backend {backend!r} returned vectors of dimensions "
            f"{sorted(dimensions)}: they must be non-empty and of one dimension"
        )
    for position, vector in enumerate(result.vectors):
        if not all(isinstance(x, numbers.Real) and math.isfinite(x) for x in vector):
            raise EmbeddingFailed(
                f"embedding backend {backend!r} returned a vector with a non-numeric or "
                f"non-finite component (text {position})"
            )
        if not any(vector):
            raise EmbeddingFailed(
                f"embedding backend {backend!r} returned an all-zero vector (text {position}): "
                "its similarity to anything is undefined"
            )
    return result
