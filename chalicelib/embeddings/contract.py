"""Re-export of :mod:`chalicelib.plugins.embedding_contract` (the backend contract's old home)."""

from chalicelib.plugins.embedding_contract import (
    BackendFactory,
    EmbeddingBackend,
    EmbeddingFailed,
    EmbeddingResult,
    check_result,
)

__all__ = [
    "BackendFactory",
    "EmbeddingBackend",
    "EmbeddingFailed",
    "EmbeddingResult",
    "check_result",
]
