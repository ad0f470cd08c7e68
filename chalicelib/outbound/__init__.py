"""The one outbound HTTP client: every call pawl makes to the outside world goes through here.

Agents (``http``, ``model``), LLM judges, tools and webhook deliveries all use this module,
so timeouts, retries and the SSRF policy are decided in one place.

Public API
----------
``request(method, url, *, body=None, headers=None, timeout_s=30.0, max_attempts=None,
max_bytes=MAX_RESPONSE_BYTES, repeatable=None) -> OutboundResponse``
    Send one request (retrying as below) and return the final answer, whatever its status.
``post_json(url, payload, headers=None, timeout_s=30.0, max_attempts=None, repeatable=None)``
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
    :class:`OutboundDropped` (the connection closed before any byte of an answer),
    :class:`OutboundTooLarge` (the answer exceeded ``max_bytes``).
``decode_json(response, source, excerpt) -> Any``
    The body of a 2xx JSON answer; otherwise :class:`UnusableAnswer` (not an
    ``OutboundError``: the call went through), its message quoting ``excerpt(response)``.

Behaviour
---------
- An HTTP answer is *returned*, not raised: callers decide what a 4xx/5xx means to them.
- Retried, with exponential backoff and jitter (``PAWL_HTTP_BACKOFF_BASE_S``), up to
  ``PAWL_HTTP_MAX_ATTEMPTS`` attempts: 429, 502, 503, 504, failures to connect, and a
  connection reset or closed before any byte of an answer when the request is
  *repeatable* (an idempotent method, or ``repeatable=True``: agent calls, completions);
  after a connection failure the backoff base is at most 50 ms.
  ``Retry-After`` (seconds or an HTTP date) is honoured up to ``RETRY_AFTER_CAP_S``.
  A read timeout, or a failure after part of the answer arrived, is never retried: the
  far side may already have done the (costly) work. The rule: :mod:`.retry`.
- Inside ``persisting(should_continue)`` (a run's items, :mod:`.scope`) congestion (429,
  503, and the connection failures above) is retried until the call's own budget
  (``timeout_s`` from its first attempt; each attempt's timeouts are cut to what is
  left) instead of up to ``PAWL_HTTP_MAX_ATTEMPTS``, and retrying stops as soon as
  ``should_continue()`` is false. Every attempt is reported to the scopes that
  ``listening(listener)`` opened (a run's adaptive concurrency, an agent call's count).
- Redirects are never followed (a 3xx is returned as is), so a redirect cannot lead to a
  refused address. Proxy environment variables are ignored for the same reason.
- SSRF: only http/https. Every address the host resolves to is checked *when connecting*
  (so DNS rebinding between a check and the connection does not help), and again at config
  time by :func:`check_url`. IPv6 spellings of IPv4 addresses (mapped ``::ffff:a.b.c.d``,
  compatible ``::a9fe:a9fe``, translated, NAT64, 6to4) are judged as the IPv4 address.
  Public addresses are allowed; anything else only as ``PAWL_ALLOW_PRIVATE_URLS`` lists it:
  ``""`` (or unset) public only; ``loopback:PORT[,loopback:PORT...]`` those loopback ports;
  CIDRs (``10.0.0.0/8,127.0.0.1/32``); ``loopback`` every loopback port; ``all`` every
  private and loopback address. Link-local needs a link-local CIDR, metadata addresses
  their exact address, and unspecified addresses are never allowed. An invalid value is
  "public only" and logged (``pawl serve`` refuses to start with it); grammar in
  :mod:`chalicelib.outbound.allowlist`.
- pawl's own endpoints are refused in every mode: the port of ``AWS_ENDPOINT_URL`` (when it
  is not public) and of every ``PAWL_RESERVED_ENDPOINTS`` entry (the local runtime adds
  the API port it binds) on any non-public address, and on this host's own
  addresses (a connection whose two ends share an address). Their refusal says "pawl's
  own endpoint" and names neither address nor port.
- Logs name the method, scheme, host and path only: never headers or the query string.
"""

from chalicelib.outbound.addresses import address_category, normalize
from chalicelib.outbound.allowlist import (
    InvalidAllowList,
    OutboundPolicy,
    current_policy,
    validate_allow_list,
)
from chalicelib.outbound.client import (
    CONNECT_TIMEOUT_CAP_S,
    MAX_RESPONSE_BYTES,
    OutboundResponse,
    post_json,
    request,
)
from chalicelib.outbound.errors import (
    OutboundDropped,
    OutboundError,
    OutboundRefused,
    OutboundTimeout,
    OutboundTooLarge,
    OutboundUnreachable,
)
from chalicelib.outbound.json_answer import UnusableAnswer, decode_json
from chalicelib.outbound.policy import (
    OWN_ENDPOINT_MESSAGE,
    category_allowed,
    check_url,
    safe_url,
)
from chalicelib.outbound.retry import (
    MAX_BACKOFF_S,
    RETRY_AFTER_CAP_S,
    RETRY_STATUSES,
    Failure,
    backoff_delay,
    retry_after_s,
)
from chalicelib.outbound.scope import (
    AttemptCounter,
    AttemptListener,
    AttemptOutcome,
    listening,
    persisting,
)
from chalicelib.outbound.transport import USER_AGENT, reset_client

__all__ = [
    "CONNECT_TIMEOUT_CAP_S",
    "MAX_BACKOFF_S",
    "MAX_RESPONSE_BYTES",
    "OWN_ENDPOINT_MESSAGE",
    "RETRY_AFTER_CAP_S",
    "RETRY_STATUSES",
    "USER_AGENT",
    "AttemptCounter",
    "AttemptListener",
    "AttemptOutcome",
    "Failure",
    "InvalidAllowList",
    "OutboundDropped",
    "OutboundError",
    "OutboundPolicy",
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
    "current_policy",
    "decode_json",
    "listening",
    "normalize",
    "persisting",
    "post_json",
    "request",
    "reset_client",
    "retry_after_s",
    "safe_url",
    "validate_allow_list",
]
