"""Outbound errors: their messages never hold header values or query strings."""

from __future__ import annotations


class OutboundError(Exception):
    """An outbound call failed before an HTTP answer could be returned."""

    def __init__(self, message: str, *, attempts: int = 0) -> None:
        super().__init__(message)
        self.attempts = attempts


class OutboundRefused(OutboundError):
    """The URL's scheme or address is not allowed by the SSRF policy."""


class OutboundTimeout(OutboundError):
    """The far side did not answer within the timeout."""


class OutboundUnreachable(OutboundError):
    """No connection could be made (refused, unresolvable, connect timeout)."""


class OutboundTooLarge(OutboundError):
    """The answer body was larger than allowed."""
