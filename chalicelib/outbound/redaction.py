"""Showing what a far side answered in an error message we store, without its secrets."""

from __future__ import annotations

from collections.abc import Iterable

from chalicelib.outbound.client import OutboundResponse

SNIPPET_CHARS = 300


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value (4+ chars) replaced: for error messages we store."""
    for secret in sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def body_snippet(response: OutboundResponse, secrets: Iterable[str]) -> str:
    """The start of an answer body for an error message, with secrets redacted."""
    text = response.text.strip()
    if not text:
        return "(empty body)"
    shortened = text[:SNIPPET_CHARS] + ("..." if len(text) > SNIPPET_CHARS else "")
    return redact(shortened, secrets)
