"""DynamoDB's refusals, answered in place of a call (a botocore ``before-call`` handler
returning one skips the request): how tests make a write fail at a chosen moment."""

from __future__ import annotations

from typing import Any

from botocore.awsrequest import AWSResponse


def refusal(error: dict[str, Any], **extra: Any) -> tuple[AWSResponse, dict[str, Any]]:
    """DynamoDB's 400 answer with ``error`` (and ``extra`` fields beside it)."""
    parsed = {
        "Error": error,
        **extra,
        "ResponseMetadata": {"HTTPStatusCode": 400, "HTTPHeaders": {}},
    }
    return AWSResponse("https://dynamodb.local/", 400, {}, None), parsed


#: A refusal no retry or condition explains: the call fails as a whole.
REFUSED_BY_THE_TEST = {"Code": "ValidationException", "Message": "refused by the test"}
