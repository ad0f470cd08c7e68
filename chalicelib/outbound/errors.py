"""Outbound errors: their messages never hold header values or query strings."""

from __future__ import annotations

from chalicelib.outbound.retry import Failure


class OutboundError(Exception):
    """An outbound call failed before an HTTP answer could be returned.

    ``failure`` says how far the last attempt got (``retry.Failure``) when the transport
    failed; None for a refusal or a request pawl could not build.
    """

    def __init__(self, message: str, *, attempts: int = 0, failure: Failure | None = None) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.failure = failure


class OutboundRefused(OutboundError):
    """The URL's scheme or address is not allowed by the SSRF policy."""


class OutboundTimeout(OutboundError):
    """The far side did not answer within the timeout."""


class OutboundUnreachable(OutboundError):
    """No connection could be made (refused, unresolvable, connect timeout)."""


class OutboundDropped(OutboundError):
    """The connection was reset or closed before any byte of an answer arrived."""


class OutboundTooLarge(OutboundError):
    """The answer body was larger than allowed."""
