"""boto3 clients, created lazily and once per process (per Lambda container).

Clients are built on first use so an in-process AWS stand-in started by a test or by the
local runtime is in place before any client exists. Their timeouts and retries are
``CLIENT_CONFIG``, defined in :mod:`chalicelib.secrets_source`: the one AWS call made
while settings are being built (so below this module, which reads settings) uses it too.
"""

from __future__ import annotations

import threading
from typing import Any

import boto3

from chalicelib.secrets_source import CLIENT_CONFIG
from chalicelib.settings import get_settings

_lock = threading.Lock()
_clients: dict[str, Any] = {}
_session: boto3.session.Session | None = None


def session() -> boto3.session.Session:
    """The boto3 session clients are made from, re-read from the environment after a reset.

    Not boto3's default session: it resolves credentials once per process, so a runtime
    started after anything else used boto3 would sign with stale keys (the stand-in checks
    them: each runtime makes its own).
    """
    global _session
    current = _session
    if current is None:
        with _lock:
            if _session is None:
                _session = boto3.session.Session()
            current = _session
    return current


def client(service: str) -> Any:
    """The shared boto3 client for ``service`` (sqs, s3, lambda, dynamodb).

    Cached per region and endpoint, so a changed endpoint gets a new client.
    """
    settings = get_settings()
    key = f"{service}|{settings.region}|{settings.aws_endpoint_url}"
    existing = _clients.get(key)
    if existing is not None:
        return existing
    made_from = session()
    with _lock:
        if key not in _clients:
            _clients[key] = made_from.client(
                service,
                region_name=settings.region,
                endpoint_url=settings.aws_endpoint_url,
                config=CLIENT_CONFIG,
            )
        return _clients[key]


def reset_clients() -> None:
    """Drop every cached client and the session (the endpoint or credentials changed)."""
    global _session
    with _lock:
        _clients.clear()
        _session = None
