"""Invoking an AWS Lambda function synchronously with a JSON event (agents and tools).

Invocations use their own boto3 client: the shared one reads for 30 s and retries a read
timeout, which would cut off a slow function and invoke it again (Lambda runs up to 15 min).

What a tenant reads of a failed invocation is a fixed sentence and a reference id: AWS's
own text ("Function not found: arn:aws:lambda:us-east-1:123456789012:function:x", an
AccessDenied naming the execution role, an endpoint URL) names pawl's account, role and
infrastructure. The whole text goes to pawl's log under that reference, for the operator.
A function's own error (``FunctionError``) is the tenant's code speaking, and passes
through :func:`scrub_aws_identifiers` first.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from typing import Any

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from chalicelib import aws, ids
from chalicelib.settings import get_settings

#: Longer than Lambda's 15-minute maximum, so a slow agent is never cut off and re-invoked.
INVOKE_READ_TIMEOUT_S = 905
INVOKE_CONFIG = aws.CLIENT_CONFIG.merge(
    Config(read_timeout=INVOKE_READ_TIMEOUT_S, retries={"mode": "standard", "max_attempts": 3})
)

log = logging.getLogger("pawl.lambda")

#: An ARN of any partition, up to the next blank or quote.
_ARN = re.compile(r"\barn:aws[a-zA-Z-]*:[^\s\"'<>]*")
#: A 12-digit AWS account id standing alone (not part of a longer number).
_ACCOUNT_ID = re.compile(r"(?<![0-9])[0-9]{12}(?![0-9])")
#: What an error reference id starts with (it is looked up in pawl's log, never stored).
REFERENCE_PREFIX = "ref_"

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
    """The function could not be invoked. The message is safe for a tenant (no payload, no
    AWS text); ``reference`` finds the full account in pawl's log."""

    def __init__(self, message: str, reference: str | None = None) -> None:
        super().__init__(message)
        self.reference = reference


def scrub_aws_identifiers(text: str) -> str:
    """``text`` with every ARN and AWS account id replaced (for what a tenant reads)."""
    return _ACCOUNT_ID.sub("<account>", _ARN.sub("<arn>", text))


def _refused(function_name: str, detail: str) -> LambdaInvokeFailed:
    """The tenant's fixed sentence; AWS's ``detail`` logged under a fresh reference."""
    reference = REFERENCE_PREFIX + ids.random_token()
    log.warning("lambda %s could not be invoked [%s]: %s", function_name, reference, detail)
    return LambdaInvokeFailed(
        f"lambda {scrub_aws_identifiers(function_name)} could not be invoked "
        f"(reference {reference}; the operator finds the details in pawl's log)",
        reference,
    )


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
        detail = f"{error.get('Code', 'error')}: {error.get('Message', '')}"
        raise _refused(function_name, detail) from None
    except BotoCoreError as exc:
        raise _refused(function_name, f"{type(exc).__name__}: {exc}") from None
    return result
