"""Reading a JSON answer: what every caller expecting a 2xx JSON body refuses alike.

A non-2xx answer or a body that is not JSON becomes an :class:`UnusableAnswer` whose
message names the far side, the status (and attempts or content type) and an excerpt
of the body. The caller supplies the excerpt, because only it knows which secrets the
body may echo; it re-raises the message as its own error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chalicelib.outbound.client import OutboundResponse


class UnusableAnswer(Exception):
    """The answer is not a 2xx JSON body; ``status`` is its HTTP status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def decode_json(
    response: OutboundResponse, source: str, excerpt: Callable[[OutboundResponse], str]
) -> Any:
    """The decoded body of a 2xx JSON answer; ``source`` names the far side in the error."""
    if not response.ok:
        raise UnusableAnswer(
            f"{source} answered HTTP {response.status} after {response.attempts} attempt(s): "
            f"{excerpt(response)}",
            response.status,
        )
    try:
        return response.json()
    except ValueError:
        content_type = response.headers.get("content-type", "no content-type")
        raise UnusableAnswer(
            f"{source} answered HTTP {response.status} with a body that is not JSON "
            f"({content_type}): {excerpt(response)}",
            response.status,
        ) from None
