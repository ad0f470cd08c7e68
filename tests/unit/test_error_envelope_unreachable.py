"""A request whose AWS call could not connect answers 503 ``UNAVAILABLE``, not 500.

The audit killed the stand-in under a running ``pawl serve``: before the runtime noticed
(its check runs every 0.2 s) two data requests answered 500 ``INTERNAL_ERROR``. The store's
errors wrap botocore's, so the mapping looks down the cause chain.
"""

from __future__ import annotations

import json

from botocore.exceptions import ConnectionClosedError, EndpointConnectionError

from chalicelib.api.envelope import response_for


class _StoreError(Exception):
    """Stands for the store's own wrapper of a botocore error (PynamoDB's GetError)."""


def _wrapped(cause: Exception) -> Exception:
    try:
        raise _StoreError("Failed to get item") from cause
    except _StoreError as wrapped:
        return wrapped


def test_a_refused_or_dropped_connection_to_aws_is_503() -> None:
    for cause in (
        EndpointConnectionError(endpoint_url="http://127.0.0.1:1"),
        ConnectionClosedError(endpoint_url="http://127.0.0.1:1"),
    ):
        for exc in (cause, _wrapped(cause)):
            answer = response_for(exc)
            assert answer.status_code == 503, exc
            assert json.loads(answer.body)["error"]["code"] == "UNAVAILABLE"


def test_any_other_failure_is_still_500_and_tells_nothing() -> None:
    answer = response_for(_wrapped(KeyError("created_key")))
    assert answer.status_code == 500
    assert json.loads(answer.body)["error"] == {
        "code": "INTERNAL_ERROR",
        "message": "An internal error occurred.",
        "meta": {},
    }
