"""Embedding backends: the ``embedding_similarity`` scorer's source of vectors.

Public API
----------
``embed(texts) -> EmbeddingResult``
    Embed every text in one call of the deployment's backend; the answer is checked (one
    finite, non-zero vector per text, one dimension). Raises :class:`EmbeddingFailed`.
``configured_backend() -> EmbeddingBackend``
    The backend ``PAWL_EMBEDDING_PROVIDER`` / ``PAWL_EMBEDDING_MODEL`` select.
``EmbeddingResult``, ``EmbeddingBackend``, ``BackendFactory``, ``EmbeddingFailed``
    The contract a plugin implements to add a backend through
    ``pawl_register_embedding_backends`` (``{name: factory}``).

Built-in backends: ``openai`` (any OpenAI-compatible ``/embeddings`` endpoint) and
``local`` (a sentence-transformers model on disk, by default one shipped in a PyPI
package; needs the ``pawl[embeddings]`` extra and is imported only when first used).
"""

from chalicelib.embeddings.contract import (
    BackendFactory,
    EmbeddingBackend,
    EmbeddingFailed,
    EmbeddingResult,
    check_result,
)
from chalicelib.embeddings.selection import configured_backend, embed

__all__ = [
    "BackendFactory",
    "EmbeddingBackend",
    "EmbeddingFailed",
    "EmbeddingResult",
    "check_result",
    "configured_backend",
    "embed",
]
