"""boto3 clients, created lazily and once per process (per Lambda container).

Clients are built on first use so an in-process AWS stand-in started by a test or by the
local runtime is in place before any client exists.
"""

from __future__ import annotations

import threading
from typing import Any

import boto3
from botocore.config import Config

from chalicelib.settings import get_settings

_lock = threading.Lock()
_clients: dict[str, Any] = {}

CLIENT_CONFIG = Config(
    connect_timeout=5,
    read_timeout=30,
    retries={"mode": "standard", "max_attempts": 5},
    max_pool_connections=32,
)


def client(service: str) -> Any:
    """The shared boto3 client for ``service`` (sqs, s3, lambda, dynamodb).

    Cached per region and endpoint, so a changed endpoint gets a new client.
    """
    settings = get_settings()
    key = f"{service}|{settings.region}|{settings.aws_endpoint_url}"
    existing = _clients.get(key)
    if existing is not None:
        return existing
    with _lock:
        if key not in _clients:
            _clients[key] = boto3.client(
                service,
                region_name=settings.region,
                endpoint_url=settings.aws_endpoint_url,
                config=CLIENT_CONFIG,
            )
        return _clients[key]


def reset_clients() -> None:
    """Drop every cached client (the endpoint or the stand-in changed)."""
    with _lock:
        _clients.clear()
