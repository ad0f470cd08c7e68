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

from __future__ import annotations

import ipaddress
import json
import logging
import random
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

import httpcore
import httpx

from chalicelib.settings import get_settings

log = logging.getLogger("pawl.outbound")
# httpx logs every request's full URL (query string included) at INFO and httpcore logs
# response headers at DEBUG: keep both quiet so secrets never reach the logs through them.
for _noisy in ("httpx", "httpcore"):
    logging.getLogger(_noisy).setLevel(logging.WARNING)

RETRY_STATUSES = frozenset({429, 502, 503, 504})
RETRY_AFTER_CAP_S = 30.0
MAX_BACKOFF_S = 30.0
CONNECT_TIMEOUT_CAP_S = 10.0
MAX_RESPONSE_BYTES = 10 * 1024 * 1024
USER_AGENT = "pawl"

# Addresses of instance-metadata services (AWS IMDS v4/v6 and ECS, Alibaba); the link-local
# ones are refused as link-local anyway, naming them gives a clearer refusal.
_METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200")
)
_METADATA_HOSTNAMES = frozenset(
    {"metadata.google.internal", "metadata.goog", "metadata.azure.internal", "instance-data"}
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


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


@dataclass(frozen=True)
class OutboundResponse:
    status: int
    headers: dict[str, str]
    body: bytes
    attempts: int = 1

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.body)


# --- policy (pure) ------------------------------------------------------------------------


def _embedded_ipv4(ip: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, NAT64), else ``ip`` itself."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip.sixtofour is not None:
            return ip.sixtofour
        if ip in _NAT64:
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip


def address_category(ip: IPAddress) -> str:
    """public | loopback | private | link-local | metadata | unspecified."""
    ip = _embedded_ipv4(ip)
    if ip in _METADATA_ADDRESSES:
        return "metadata"
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local"
    if not ip.is_global or ip.is_multicast:
        return "private"
    return "public"


def normalized_policy(raw: str) -> str:
    """The effective policy; an unknown value means the strictest (fail closed)."""
    return raw if raw in {"loopback", "all"} else ""


def category_allowed(category: str, policy: str) -> bool:
    if category == "public" or policy == "all":
        return True
    return category == "loopback" and policy == "loopback"


def _refusal(host: str, ip: IPAddress, category: str) -> OutboundRefused:
    shown = host if host == str(ip) else f"{host} ({ip})"
    needed = "loopback" if category == "loopback" else "all"
    return OutboundRefused(
        f"refused to call {shown}: {category} addresses are not allowed "
        f"(PAWL_ALLOW_PRIVATE_URLS={needed} would allow them)"
    )


def _check_addresses(host: str, addresses: Iterable[IPAddress], policy: str) -> None:
    for ip in addresses:
        category = address_category(ip)
        if not category_allowed(category, policy):
            raise _refusal(host, ip, category)


def _literal_ip(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _parse_target(url: str, policy: str) -> httpx.URL:
    """Refusals that need no DNS: bad URL, scheme, metadata host names, literal addresses."""
    try:
        target = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise OutboundRefused(f"not a valid URL: {exc}") from None
    if target.scheme not in {"http", "https"}:
        raise OutboundRefused(f"only http and https URLs are allowed, not {target.scheme!r}")
    host = target.host.rstrip(".").lower()
    if not host:
        raise OutboundRefused("the URL has no host")
    if host in _METADATA_HOSTNAMES and policy != "all":
        raise OutboundRefused(f"refused to call {host}: a cloud metadata service")
    literal = _literal_ip(host)
    if literal is not None:
        _check_addresses(host, [literal], policy)
    return target


def safe_url(url: httpx.URL | str) -> str:
    """scheme://host[:port]/path: what may appear in logs and messages (no query, no userinfo)."""
    try:
        parsed = url if isinstance(url, httpx.URL) else httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return "<invalid url>"
    host = f"[{parsed.host}]" if ":" in parsed.host else parsed.host
    port = f":{parsed.port}" if parsed.port else ""
    return f"{parsed.scheme}://{host}{port}{parsed.path}"


def _resolve(host: str, port: int) -> list[IPAddress]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    unique: dict[IPAddress, None] = {}
    for *_, sockaddr in infos:
        # Strip an IPv6 zone id ("fe80::1%eth0") before parsing.
        unique[ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])] = None
    return list(unique)


def check_url(url: str) -> None:
    """Raise :class:`OutboundRefused` if the policy refuses ``url`` (call it at config time).

    A host that resolves now is checked against every address it resolves to; a host that
    does not resolve yet is accepted here: the check made when connecting is the guarantee.
    """
    policy = normalized_policy(get_settings().allow_private_urls)
    target = _parse_target(url, policy)
    if _literal_ip(target.host) is not None:
        return
    try:
        addresses = _resolve(target.host, target.port or 443)
    except (OSError, UnicodeError):
        return
    _check_addresses(target.host, addresses, policy)


# --- retry timing (pure) ------------------------------------------------------------------


def backoff_delay(attempt: int, base_s: float, rand: Callable[[], float] = random.random) -> float:
    """Seconds to wait after failed ``attempt`` (1-based): equal jitter on base * 2^(n-1)."""
    ceiling = min(MAX_BACKOFF_S, base_s * 2 ** (attempt - 1))
    return ceiling / 2 + rand() * ceiling / 2


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks for (delta-seconds or HTTP date), capped."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), RETRY_AFTER_CAP_S)
    try:
        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    current = time.time() if now is None else now
    return min(max(0.0, when - current), RETRY_AFTER_CAP_S)


# --- transport ----------------------------------------------------------------------------


class _VettingBackend(httpcore.SyncBackend):
    """Resolves the host itself, refuses disallowed addresses, connects only to vetted ones."""

    def __init__(self, policy: str) -> None:
        self.policy = policy

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            addresses = _resolve(host, port)
        except (OSError, UnicodeError) as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from None
        _check_addresses(host, addresses, self.policy)
        last_error: Exception | None = None
        for ip in addresses:
            try:
                return super().connect_tcp(str(ip), port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last_error = exc
        assert last_error is not None  # getaddrinfo never returns an empty list
        raise last_error


class _VettingTransport(httpx.HTTPTransport):
    def __init__(self, policy: str, limits: httpx.Limits) -> None:
        super().__init__(trust_env=False, limits=limits)
        # httpx does not expose httpcore's network_backend: rebuild the pool with ours.
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_VettingBackend(policy),
        )


_lock = threading.Lock()
_client: httpx.Client | None = None
_client_policy: str | None = None


def _shared_client(policy: str) -> httpx.Client:
    """The process-wide client (thread-safe), rebuilt only if the SSRF policy changed."""
    global _client, _client_policy
    client = _client
    if client is not None and _client_policy == policy:
        return client
    with _lock:
        if _client is None or _client_policy != policy:
            # Pooled connections were vetted under the old policy: never reuse them.
            limits = httpx.Limits(max_connections=64, max_keepalive_connections=32)
            _client = httpx.Client(
                transport=_VettingTransport(policy, limits),
                follow_redirects=False,
                trust_env=False,
                headers={"User-Agent": USER_AGENT},
            )
            _client_policy = policy
        return _client


def reset_client() -> None:
    """Drop the shared client (tests; the local runtime after a settings change)."""
    global _client, _client_policy
    with _lock:
        _client, _client_policy = None, None


# --- requests -----------------------------------------------------------------------------


@dataclass
class _Call:
    method: str
    target: httpx.URL
    body: bytes | None
    headers: Mapping[str, str]
    timeout: httpx.Timeout
    max_bytes: int
    where: str = field(init=False)

    def __post_init__(self) -> None:
        self.where = f"{self.method} {safe_url(self.target)}"


def _send_once(client: httpx.Client, call: _Call, attempts: int) -> OutboundResponse:
    try:
        request = client.build_request(
            call.method, call.target, content=call.body, headers=call.headers, timeout=call.timeout
        )
    except (UnicodeError, ValueError, TypeError):
        # The offending header value would be in the library's message: never show it.
        raise OutboundError(f"{call.where}: a header name or value is not valid") from None
    response = client.send(request, stream=True)
    try:
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > call.max_bytes:
                raise OutboundTooLarge(
                    f"{call.where} answered more than {call.max_bytes} bytes", attempts=attempts
                )
            chunks.append(chunk)
    finally:
        response.close()
    headers = {name.lower(): value for name, value in response.headers.items()}
    return OutboundResponse(response.status_code, headers, b"".join(chunks), attempts)


def _attempt(client: httpx.Client, call: _Call, attempt: int) -> OutboundResponse:
    """One attempt; transport failures become :class:`OutboundError` subclasses."""
    try:
        return _send_once(client, call, attempt)
    except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
        raise OutboundUnreachable(
            f"{call.where}: could not connect ({type(exc).__name__})", attempts=attempt
        ) from None
    except httpx.TimeoutException as exc:
        raise OutboundTimeout(
            f"{call.where}: no answer within {call.timeout.read}s ({type(exc).__name__})",
            attempts=attempt,
        ) from None
    except httpx.LocalProtocolError:
        raise OutboundError(
            f"{call.where}: the request was not valid HTTP (a header name or value?)",
            attempts=attempt,
        ) from None
    except httpx.HTTPError as exc:
        raise OutboundError(f"{call.where}: {type(exc).__name__}", attempts=attempt) from None


def request(
    method: str,
    url: str,
    *,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    timeout_s: float = 30.0,
    max_attempts: int | None = None,
    max_bytes: int = MAX_RESPONSE_BYTES,
) -> OutboundResponse:
    """Send a request, retrying as the module docstring says; return the final answer."""
    settings = get_settings()
    policy = normalized_policy(settings.allow_private_urls)
    call = _Call(
        method=method.upper(),
        target=_parse_target(url, policy),
        body=body,
        headers=dict(headers or {}),
        timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, CONNECT_TIMEOUT_CAP_S)),
        max_bytes=max_bytes,
    )
    allowed = max(1, max_attempts or settings.http_max_attempts)
    client = _shared_client(policy)
    attempt = 1
    while True:
        last = attempt >= allowed
        try:
            response = _attempt(client, call, attempt)
        except OutboundUnreachable as exc:
            if last:
                raise OutboundUnreachable(
                    f"{exc} after {attempt} attempt(s)", attempts=attempt
                ) from None
            delay, reason = backoff_delay(attempt, settings.http_backoff_base_s), "no connection"
        else:
            if last or response.status not in RETRY_STATUSES:
                return response
            waited = retry_after_s(response.headers.get("retry-after"))
            delay = (
                waited
                if waited is not None
                else backoff_delay(attempt, settings.http_backoff_base_s)
            )
            reason = f"HTTP {response.status}"
        log.info(
            "%s: %s, attempt %d/%d, retrying in %.3fs", call.where, reason, attempt, allowed, delay
        )
        time.sleep(delay)
        attempt += 1


def post_json(
    url: str,
    payload: Any,
    headers: Mapping[str, str] | None = None,
    timeout_s: float = 30.0,
    max_attempts: int | None = None,
) -> OutboundResponse:
    """POST ``payload`` as JSON (``Content-Type: application/json`` unless given)."""
    merged = {"Content-Type": "application/json", "Accept": "application/json"}
    for name, value in (headers or {}).items():
        # A caller's header replaces ours whatever its case.
        for ours in [n for n in merged if n.lower() == name.lower()]:
            del merged[ours]
        merged[name] = value
    return request(
        "POST",
        url,
        body=json.dumps(payload).encode(),
        headers=merged,
        timeout_s=timeout_s,
        max_attempts=max_attempts,
    )
