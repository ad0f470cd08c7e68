"""Which embedding backend this deployment uses, and the one checked way to call it.

``PAWL_EMBEDDING_PROVIDER`` names a registered backend (``openai``, ``local``, or one a
plugin adds); ``PAWL_EMBEDDING_MODEL`` is handed to its factory. Every failure, from "no
backend configured" to a plugin's own exception, surfaces as :class:`EmbeddingFailed`.
"""

from __future__ import annotations

import threading
from typing import Any

from chalicelib.embeddings.contract import (
    EmbeddingBackend,
    EmbeddingFailed,
    EmbeddingResult,
    check_result,
)
from chalicelib.settings import Settings, get_settings

_cache_lock = threading.Lock()
#: The backend built for one (plugin host, settings) pair; rebuilt when either is replaced.
_cached: tuple[Any, Settings, EmbeddingBackend] | None = None


def _build(host: Any, settings: Settings) -> EmbeddingBackend:
    provider = settings.embedding_provider
    if provider is None:
        raise EmbeddingFailed(
            "no embedding backend is configured: set PAWL_EMBEDDING_PROVIDER "
            "(openai, local, or a backend a plugin registers)"
        )
    factories = host.embedding_backends()
    factory = factories.get(provider)
    if factory is None:
        known = ", ".join(sorted(factories)) or "none"
        raise EmbeddingFailed(
            f"PAWL_EMBEDDING_PROVIDER={provider!r} names no registered embedding backend "
            f"(registered: {known})"
        )
    try:
        backend: EmbeddingBackend = factory(model=settings.embedding_model)
    except EmbeddingFailed:
        raise
    except Exception as exc:  # a plugin's factory may raise anything
        raise EmbeddingFailed(
            f"embedding backend {provider!r} could not be created: {type(exc).__name__}: {exc}"
        ) from None
    return backend


def configured_backend() -> EmbeddingBackend:
    """The deployment's backend (built once per plugin host and settings)."""
    global _cached
    from chalicelib.plugins.manager import plugins  # the manager imports built-ins lazily

    host, settings = plugins(), get_settings()
    cached = _cached
    if cached is not None and cached[0] is host and cached[1] is settings:
        return cached[2]
    with _cache_lock:
        backend = _build(host, settings)
        _cached = (host, settings, backend)
    return backend


def embed(texts: list[str]) -> EmbeddingResult:
    """Embed ``texts`` in one call of the configured backend; the answer is checked."""
    backend = configured_backend()
    name = getattr(backend, "name", type(backend).__name__)
    try:
        result = backend.embed(list(texts))
    except EmbeddingFailed:
        raise
    except Exception as exc:  # a backend's bug must error the item, not the worker
        raise EmbeddingFailed(
            f"embedding backend {name!r} failed: {type(exc).__name__}: {exc}"
        ) from None
    return check_result(result, len(texts), name)
