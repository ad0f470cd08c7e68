"""Invoking an AWS Lambda function synchronously with a JSON event (agents and tools).

Invocations use their own boto3 client: the shared one reads for 30 s and retries a read
timeout, which would cut off a slow function and invoke it again (Lambda runs up to 15 min).
"""

from __future__ import annotations

import json
import threading
from typing import Any

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from chalicelib import aws
from chalicelib.settings import get_settings

#: Longer than Lambda's 15-minute maximum, so a slow agent is never cut off and re-invoked.
INVOKE_READ_TIMEOUT_S = 905
INVOKE_CONFIG = aws.CLIENT_CONFIG.merge(
    Config(read_timeout=INVOKE_READ_TIMEOUT_S, retries={"mode": "standard", "max_attempts": 3})
)

_lock = threading.Lock()
# (the shared lambda client it was made alongside, the invoke client). The shared client's
# identity changes whenever aws.reset_clients() runs (new endpoint or AWS stand-in), and
# the invoke client must follow it.
_cached: tuple[Any, Any] | None = None


def invoke_client() -> Any:
    """The boto3 Lambda client used for invocations (created lazily, once per process)."""
    global _cached
    shared = aws.client("lambda")
    cached = _cached
    if cached is not None and cached[0] is shared:
        return cached[1]
    with _lock:
        if _cached is None or _cached[0] is not shared:
            settings = get_settings()
            client = aws.session().client(
                "lambda",
                region_name=settings.region,
                endpoint_url=settings.aws_endpoint_url,
                config=INVOKE_CONFIG,
            )
            _cached = (shared, client)
        return _cached[1]


class LambdaInvokeFailed(Exception):
    """The function could not be invoked (the message says why, without the payload)."""


def invoke_sync(function_name: str, payload: dict[str, Any]) -> dict[str, Any]:
    """``Invoke`` with ``RequestResponse``; the raw response (``Payload``, ``FunctionError``)."""
    try:
        encoded = json.dumps(payload).encode()
    except (TypeError, ValueError) as exc:
        raise LambdaInvokeFailed(f"the payload cannot be encoded as JSON: {exc}") from None
    try:
        result: dict[str, Any] = invoke_client().invoke(
            FunctionName=function_name, InvocationType="RequestResponse", Payload=encoded
        )
    except ClientError as exc:
        error = exc.response.get("Error", {})
        raise LambdaInvokeFailed(
            f"lambda {function_name} could not be invoked: "
            f"{error.get('Code', 'error')}: {error.get('Message', '')}"
        ) from None
    except BotoCoreError as exc:
        raise LambdaInvokeFailed(
            f"lambda {function_name} could not be invoked: {type(exc).__name__}"
        ) from None
    return result
