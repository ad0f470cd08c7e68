"""The connections under the shared client: connect-time address vetting, a pool per
thread, and a count of the answer bytes each attempt read."""

from __future__ import annotations

import ssl
import threading
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from chalicelib.outbound.addresses import resolve
from chalicelib.outbound.allowlist import OutboundPolicy
from chalicelib.outbound.errors import OutboundRefused
from chalicelib.outbound.policy import check_addresses, check_connected

USER_AGENT = "pawl"


class _CountingStream(httpcore.NetworkStream):
    """A connection that adds the bytes it reads to this thread's count for the attempt.

    A thread makes one call at a time on its own client, so the count says whether any
    byte of an answer had arrived when an attempt failed (``retry.classify``).
    """

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = self._inner.read(max_bytes, timeout)
        _local.received = getattr(_local, "received", 0) + len(data)
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        return _CountingStream(self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _VettingBackend(httpcore.SyncBackend):
    """Resolves the host itself, refuses disallowed addresses, connects only to vetted ones."""

    def __init__(self, policy: OutboundPolicy) -> None:
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
            addresses = resolve(host, port)
        except (OSError, UnicodeError) as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from None
        check_addresses(host, addresses, port, self.policy)
        last_error: Exception | None = None
        for ip in addresses:
            try:
                stream = super().connect_tcp(str(ip), port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last_error = exc
                continue
            try:
                check_connected(stream.get_extra_info("socket"), port, self.policy)
            except OutboundRefused:
                stream.close()
                raise
            return _CountingStream(stream)
        assert last_error is not None  # getaddrinfo never returns an empty list
        raise last_error


class _VettingTransport(httpx.HTTPTransport):
    def __init__(
        self, policy: OutboundPolicy, limits: httpx.Limits, ssl_context: ssl.SSLContext
    ) -> None:
        super().__init__(verify=ssl_context, trust_env=False, limits=limits)
        # httpx does not expose httpcore's network_backend: rebuild the pool with ours.
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_VettingBackend(policy),
        )


#: Connections one thread keeps: a thread makes one call at a time, to a few hosts.
THREAD_POOL_LIMITS = httpx.Limits(max_connections=8, max_keepalive_connections=8)

_lock = threading.Lock()
_local = threading.local()
#: Bumped by :func:`reset_client`: each thread's client is rebuilt on its next call.
_generation = 0
_ssl_context: ssl.SSLContext | None = None


def _shared_ssl_context() -> ssl.SSLContext:
    """One TLS context for every thread's client (loading the CA bundle costs ~50 ms)."""
    global _ssl_context
    with _lock:
        if _ssl_context is None:
            _ssl_context = httpx.create_ssl_context(trust_env=False)
        return _ssl_context


def thread_client(policy: OutboundPolicy) -> httpx.Client:
    """This thread's client, rebuilt when the SSRF policy changed or after a reset.

    One client per thread rather than one per process: httpcore's pool takes one lock for
    every request and response and checks each pooled connection (a ``poll`` each) on
    every request, so 40 threads sharing one pool spent 1.8 ms of CPU per call against
    0.5 ms alone. A thread's calls are sequential, so its pool stays small.
    """
    held = getattr(_local, "held", None)
    if held is not None and held[0] == policy and held[1] == _generation:
        client: httpx.Client = held[2]
        return client
    if held is not None:
        held[2].close()  # its connections were vetted under the old policy: never reuse them
    client = httpx.Client(
        transport=_VettingTransport(policy, THREAD_POOL_LIMITS, _shared_ssl_context()),
        follow_redirects=False,
        trust_env=False,
        headers={"User-Agent": USER_AGENT},
    )
    _local.held = (policy, _generation, client)
    return client


def reset_client() -> None:
    """Drop every thread's client (tests; the local runtime after a settings change)."""
    global _generation, _ssl_context
    with _lock:
        _generation += 1
        _ssl_context = None


def start_attempt() -> None:
    """Begin counting this thread's answer bytes afresh (one call at a time per thread)."""
    _local.received = 0


def bytes_received() -> int:
    """Answer bytes this thread's connections read since :func:`start_attempt`."""
    return int(getattr(_local, "received", 0))
