"""Security regressions for issue 9, finding 1: the stand-in's signature check on its own.

Requests are signed by botocore exactly as pawl's clients sign them, turned into the WSGI
environ the stand-in's server builds, and handed to ``SignatureCheck`` / the
``RequireSignature`` middleware in front of a recording WSGI app. What a forger would change
after signing (a header, the body, the clock, the key) must be refused with 403, and the
app behind must never see the request.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from bench.standin_auth import signed_environ
from pawl.local.standin import StandInCredentials
from pawl.local.standin_auth import MAX_SKEW_S, Refused, RequireSignature, SignatureCheck

KEY = StandInCredentials.generate()
PUT_ITEM = {
    "X-Amz-Target": "DynamoDB_20120810.PutItem",
    "Content-Type": "application/x-amz-json-1.0",
}
BODY = json.dumps({"TableName": "pawl-api-keys", "Item": {"id": {"S": "key_1"}}}).encode()


def signed(
    *,
    service: str = "dynamodb",
    method: str = "POST",
    target: str = "/",
    headers: dict[str, str] | None = None,
    body: bytes = BODY,
    key: StandInCredentials = KEY,
) -> dict[str, Any]:
    """The WSGI environ of a request botocore signed with ``key``."""
    return signed_environ(key, service, method, target, dict(headers or {}), body)


def refusal(environ: dict[str, Any], clock: Callable[[], float] = time.time) -> str | None:
    try:
        SignatureCheck(KEY, clock).verify(environ)
    except Refused as refused:
        return refused.code
    return None


def test_requests_signed_with_the_key_pass_and_keep_their_body() -> None:
    environ = signed(headers=PUT_ITEM)
    assert refusal(environ) is None
    assert environ["wsgi.input"].read() == BODY  # put back for the app behind
    listing = "/pawl-blobs?list-type=2&prefix=runs%2Fa%20b&delimiter=%2F"
    assert refusal(signed(service="s3", method="GET", target=listing, body=b"")) is None
    key_path = "/pawl-blobs/a%20b/%C3%BC%2Bx.json"
    assert refusal(signed(service="s3", method="PUT", target=key_path, body=b"{}")) is None


def test_a_changed_header_body_or_path_breaks_the_signature() -> None:
    environ = signed(headers={**PUT_ITEM, "X-Amz-Target": "DynamoDB_20120810.GetItem"})
    environ["HTTP_X_AMZ_TARGET"] = "DynamoDB_20120810.PutItem"
    assert refusal(environ) == "SignatureDoesNotMatch"

    environ = signed(headers=PUT_ITEM)
    environ["wsgi.input"] = io.BytesIO(BODY.replace(b"key_1", b"key_2"))
    assert refusal(environ) == "SignatureDoesNotMatch"

    environ = signed(service="s3", method="PUT", target="/pawl-blobs/a.json", body=b"{}")
    environ["wsgi.input"] = io.BytesIO(b"[]")  # its x-amz-content-sha256 no longer matches
    assert refusal(environ) == "SignatureDoesNotMatch"

    environ = signed(service="s3", method="GET", target="/pawl-blobs/a.json", body=b"")
    environ["RAW_URI"] = "/pawl-blobs/b.json"
    assert refusal(environ) == "SignatureDoesNotMatch"


def test_another_key_or_a_wrong_secret_is_refused() -> None:
    stranger = StandInCredentials.generate()
    assert refusal(signed(key=stranger)) == "InvalidClientTokenId"
    same_id = StandInCredentials(KEY.access_key_id, "a-guessed-secret")
    assert refusal(signed(key=same_id)) == "SignatureDoesNotMatch"
    old_fixed = StandInCredentials("pawl-local", "pawl-local")
    assert refusal(signed(key=old_fixed)) == "InvalidClientTokenId"


def test_the_clock_must_agree_within_fifteen_minutes() -> None:
    environ = signed(headers=PUT_ITEM)
    now = time.time()
    assert refusal(dict(environ, **{"wsgi.input": io.BytesIO(BODY)}), lambda: now + 60) is None
    late = now + MAX_SKEW_S + 120
    assert refusal(dict(environ, **{"wsgi.input": io.BytesIO(BODY)}), lambda: late) == (
        "RequestTimeTooSkewed"
    )
    early = now - MAX_SKEW_S - 120
    assert refusal(dict(environ, **{"wsgi.input": io.BytesIO(BODY)}), lambda: early) == (
        "RequestTimeTooSkewed"
    )


def test_unsigned_malformed_and_presigned_requests_are_refused() -> None:
    environ = signed(headers=PUT_ITEM)
    del environ["HTTP_AUTHORIZATION"]
    assert refusal(environ) == "MissingAuthenticationToken"

    environ = signed(headers=PUT_ITEM)
    environ["HTTP_AUTHORIZATION"] = f"AWS {KEY.access_key_id}:c2lnbmF0dXJl"  # SigV2
    assert refusal(environ) == "IncompleteSignature"

    environ = signed(headers=PUT_ITEM)
    assert ";x-amz-date;" in environ["HTTP_AUTHORIZATION"]
    environ["HTTP_AUTHORIZATION"] = environ["HTTP_AUTHORIZATION"].replace(";x-amz-date", "")
    assert refusal(environ) == "IncompleteSignature"  # x-amz-date must be signed

    presigned = "/pawl-blobs/a.json?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=00"
    assert refusal(signed(service="s3", method="GET", target=presigned, body=b"")) == (
        "AccessDenied"
    )


@pytest.mark.parametrize("path", ["/moto-api/reset", "/moto-api/data.json", "/moto-api"])
def test_motos_control_routes_are_closed_even_when_signed(path: str) -> None:
    assert refusal(signed(method="POST", target=path, body=b"")) == "AccessDenied"


def test_the_middleware_answers_403_in_the_callers_protocol_and_stops_there() -> None:
    reached: list[str] = []

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        reached.append(environ["PATH_INFO"])
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]

    guarded = RequireSignature(app, KEY)
    answers: list[str] = []

    def call(environ: dict[str, Any]) -> bytes:
        body = b"".join(guarded(environ, lambda status, headers: answers.append(status)))
        return body

    unsigned = signed(headers=PUT_ITEM)
    del unsigned["HTTP_AUTHORIZATION"]
    json_error = json.loads(call(unsigned))
    assert answers[-1].startswith("403") and json_error["__type"] == "MissingAuthenticationToken"
    s3 = signed(service="s3", method="GET", target="/pawl-blobs/a.json", body=b"")
    signature = s3["HTTP_AUTHORIZATION"]
    s3["HTTP_AUTHORIZATION"] = signature[:-1] + ("1" if signature.endswith("0") else "0")
    xml_error = call(s3)
    assert answers[-1].startswith("403") and b"<Code>SignatureDoesNotMatch</Code>" in xml_error
    assert reached == []
    assert call(signed(headers=PUT_ITEM)) == b"ok" and answers[-1].startswith("200")
    assert reached == ["/"]


def test_the_secret_never_shows_in_a_repr() -> None:
    assert KEY.secret_access_key not in repr(KEY)
    assert KEY.access_key_id in repr(KEY)
