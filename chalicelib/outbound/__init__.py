"""The one outbound HTTP client: every call pawl makes to the outside world goes through here.

Agents (``http``, ``model``), LLM judges, tools and webhook deliveries all use this module,
so timeouts, retries and the SSRF policy are decided in one place.

Public API
----------
``request(method, url, *, body=None, headers=None, timeout_s=30.0, max_attempts=None,
max_bytes=MAX_RESPONSE_BYTES) -> OutboundResponse``
    Send one request (retrying as below) and return the final answer, whatever its status.
``post_json(url, payload, headers=None, timeout_s=30.0, max_attempts=None) -> OutboundResponse``
    ``request("POST", ...)`` with ``payload`` encoded as JSON.
``check_url(url) -> None``
    Refuse, at config time, a URL the policy would refuse (raises :class:`OutboundRefused`).
``OutboundResponse``
    ``status``, ``headers`` (lower-cased names), ``body`` (bytes), ``attempts``;
    ``ok`` (2xx), ``text``, ``json()`` (raises ``ValueError`` when the body is not JSON).
Errors (all subclass :class:`OutboundError`, whose message never holds header values):
    :class:`OutboundRefused` (scheme or address not allowed; never retried),
    :class:`OutboundTimeout` (the far side did not answer in time; never retried),
    :class:`OutboundUnreachable` (no connection could be made, after every attempt),
    :class:`OutboundTooLarge` (the answer exceeded ``max_bytes``).
``decode_json(response, source, excerpt) -> Any``
    The body of a 2xx JSON answer; otherwise :class:`UnusableAnswer` (not an
    ``OutboundError``: the call went through), its message quoting ``excerpt(response)``.

Behaviour
---------
- An HTTP answer is *returned*, not raised: callers decide what a 4xx/5xx means to them.
- Retried, with exponential backoff and jitter (``PAWL_HTTP_BACKOFF_BASE_S``), up to
  ``PAWL_HTTP_MAX_ATTEMPTS`` attempts: 429, 502, 503, 504 and failures to connect.
  ``Retry-After`` (seconds or an HTTP date) is honoured up to ``RETRY_AFTER_CAP_S``.
  A read timeout is not retried: the far side may already have done the (costly) work.
- Redirects are never followed (a 3xx is returned as is), so a redirect cannot lead to a
  refused address. Proxy environment variables are ignored for the same reason.
- SSRF: only http/https. Every address the host resolves to is checked *when connecting*
  (so DNS rebinding between a check and the connection does not help) against
  ``PAWL_ALLOW_PRIVATE_URLS``: ``""`` public addresses only; ``"loopback"`` also
  127.0.0.0/8 and ::1; ``"all"`` everything, and only ``"all"`` allows link-local and
  cloud-metadata addresses.
- Logs name the method, scheme, host and path only: never headers or the query string.
"""

from chalicelib.outbound.answers import UnusableAnswer, decode_json
from chalicelib.outbound.client import (
    CONNECT_TIMEOUT_CAP_S,
    MAX_RESPONSE_BYTES,
    USER_AGENT,
    OutboundResponse,
    post_json,
    request,
    reset_client,
)
from chalicelib.outbound.errors import (
    OutboundError,
    OutboundRefused,
    OutboundTimeout,
    OutboundTooLarge,
    OutboundUnreachable,
)
from chalicelib.outbound.policy import (
    address_category,
    category_allowed,
    check_url,
    normalized_policy,
    safe_url,
)
from chalicelib.outbound.retry import (
    MAX_BACKOFF_S,
    RETRY_AFTER_CAP_S,
    RETRY_STATUSES,
    backoff_delay,
    retry_after_s,
)

__all__ = [
    "CONNECT_TIMEOUT_CAP_S",
    "MAX_BACKOFF_S",
    "MAX_RESPONSE_BYTES",
    "RETRY_AFTER_CAP_S",
    "RETRY_STATUSES",
    "USER_AGENT",
    "OutboundError",
    "OutboundRefused",
    "OutboundResponse",
    "OutboundTimeout",
    "OutboundTooLarge",
    "OutboundUnreachable",
    "UnusableAnswer",
    "address_category",
    "backoff_delay",
    "category_allowed",
    "check_url",
    "decode_json",
    "normalized_policy",
    "post_json",
    "request",
    "reset_client",
    "retry_after_s",
    "safe_url",
]
