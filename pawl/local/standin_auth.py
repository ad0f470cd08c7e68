"""The stand-in's lock: every request must carry a valid AWS SigV4 signature made with the
credentials of the runtime that started it (:class:`pawl.local.standin.StandInCredentials`).

moto checks no signature, and the stand-in is a port on 127.0.0.1 that anything on the host
can reach: without this layer, whoever finds the port owns every table (issue 9, finding 1).
:class:`RequireSignature` is the outermost WSGI middleware of the stand-in: it recomputes the
signature with botocore's own signer (canonical request from the ``SignedHeaders`` the
client listed, ``X-Amz-Date``, the payload hash; S3 paths are not normalised, as S3 signs
them) and compares it in constant time. It refuses, with 403 and an AWS-shaped error body:
unsigned requests, presigned (query-string) signatures, another access key, a wrong
signature, a payload that does not match its signed hash, a clock more than
:data:`MAX_SKEW_S` away, and moto's own ``/moto-api`` control routes (reset, state dumps),
which nothing in pawl uses.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import logging
import re
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlsplit

from botocore.auth import SIGV4_TIMESTAMP, S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.compat import HTTPHeaders
from botocore.credentials import Credentials
from werkzeug.wsgi import get_input_stream

from pawl.local.standin import StandInCredentials

log = logging.getLogger("pawl.standin")

#: How far a request's X-Amz-Date may be from the stand-in's clock (AWS allows 15 minutes).
MAX_SKEW_S = 15 * 60
_AUTHORIZATION = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/,\s]+)/(?P<date>\d{8})/(?P<region>[^/,\s]+)/"
    r"(?P<service>[^/,\s]+)/aws4_request,\s*SignedHeaders=(?P<signed>[a-z0-9;\-]+),\s*"
    r"Signature=(?P<signature>[0-9a-f]{64})$"
)
_PRESIGNED_PARAMETERS = ("x-amz-signature=", "x-amz-credential=", "x-amz-algorithm=")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")

StartResponse = Callable[..., Any]
#: Set in a request's WSGI environ once its whole body has been read off the connection.
BODY_CONSUMED = "pawl.body_consumed"


class Refused(Exception):
    """Why a request is not let through: an AWS error code and a message (no secrets)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _signer_class(service: str) -> type[SigV4Auth]:
    base = S3SigV4Auth if service == "s3" else SigV4Auth

    class _Verifier(base):  # type: ignore[valid-type,misc]
        """botocore's signer, told to sign exactly the headers the client said it signed."""

        def headers_to_sign(self, request: AWSRequest) -> HTTPHeaders:
            return request.headers

    return _Verifier


_VERIFIERS = {service: _signer_class(service) for service in ("s3", "other")}


def _header(environ: dict[str, Any], name: str) -> str | None:
    if name == "content-type":
        return environ.get("CONTENT_TYPE")
    if name == "content-length":
        return environ.get("CONTENT_LENGTH")
    value = environ.get("HTTP_" + name.upper().replace("-", "_"))
    return None if value is None else str(value)


def _raw_target(environ: dict[str, Any]) -> str:
    """The path and query exactly as the client sent them (what it signed)."""
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if raw:
        if raw.startswith(("http://", "https://")):
            parts = urlsplit(raw)
            return parts.path + (f"?{parts.query}" if parts.query else "")
        return str(raw)
    path = quote(environ.get("PATH_INFO", "/").encode("latin-1"), safe="/~")
    query = environ.get("QUERY_STRING", "")
    return path + (f"?{query}" if query else "")


def read_body(environ: dict[str, Any]) -> bytes:
    """Read the whole body and put it back, so the application behind reads it again."""
    body = get_input_stream(environ).read()
    # The connection may now carry the client's next request (keep-alive, see
    # ``standin_process.KeepAliveHandler``): nothing of this one is left unread.
    environ[BODY_CONSUMED] = True
    environ["wsgi.input"] = io.BytesIO(body)
    environ["CONTENT_LENGTH"] = str(len(body))
    return body


class SignatureCheck:
    """Verifies one request's SigV4 header signature against one key pair."""

    def __init__(
        self, credentials: StandInCredentials, clock: Callable[[], float] = time.time
    ) -> None:
        self.key_id = credentials.access_key_id
        self.credentials = Credentials(credentials.access_key_id, credentials.secret_access_key)
        self.clock = clock

    def verify(self, environ: dict[str, Any]) -> None:
        """Return if the request is signed with our key; raise :class:`Refused` otherwise."""
        # Read the body first, refused or not: an unread body would be taken for the next
        # request on a kept-alive connection.
        body = read_body(environ)
        target = _raw_target(environ)
        path, _, query = target.partition("?")
        if path == "/moto-api" or path.startswith("/moto-api/"):
            raise Refused("AccessDenied", "the stand-in's control routes are closed")
        if any(p in query.lower() for p in _PRESIGNED_PARAMETERS):
            raise Refused("AccessDenied", "presigned URLs are not accepted by the stand-in")
        header = _header(environ, "authorization")
        if not header:
            raise Refused("MissingAuthenticationToken", "the request is not signed")
        auth = _AUTHORIZATION.match(header.strip())
        if auth is None:
            raise Refused("IncompleteSignature", "the Authorization header is not AWS SigV4")
        if not hmac.compare_digest(auth["key"].encode(), self.key_id.encode()):
            raise Refused("InvalidClientTokenId", "the access key is not known to the stand-in")
        signed = auth["signed"].split(";")
        stamp = self._timestamp(environ, signed, auth["date"])
        request = self._request(environ, target, signed, body, stamp)
        self._check_payload_hash(request, body)
        expected = self._signature(request, auth["region"], auth["service"])
        if not hmac.compare_digest(expected.encode(), auth["signature"].encode()):
            raise Refused("SignatureDoesNotMatch", "the request signature does not match")

    def _timestamp(self, environ: dict[str, Any], signed: list[str], scope_date: str) -> str:
        if "host" not in signed or "x-amz-date" not in signed:
            raise Refused("IncompleteSignature", "host and x-amz-date must be signed")
        stamp = _header(environ, "x-amz-date") or ""
        try:
            moment = datetime.strptime(stamp, SIGV4_TIMESTAMP).replace(tzinfo=UTC)
        except ValueError:
            raise Refused("IncompleteSignature", "X-Amz-Date is not a SigV4 timestamp") from None
        if stamp[:8] != scope_date:
            raise Refused("SignatureDoesNotMatch", "the credential scope date is not X-Amz-Date")
        if abs(moment.timestamp() - self.clock()) > MAX_SKEW_S:
            raise Refused("RequestTimeTooSkewed", "X-Amz-Date is too far from the server's time")
        return stamp

    @staticmethod
    def _request(
        environ: dict[str, Any], target: str, signed: list[str], body: bytes, stamp: str
    ) -> AWSRequest:
        headers = HTTPHeaders()
        for name in signed:
            value = _header(environ, name)
            if value is None:
                raise Refused("SignatureDoesNotMatch", f"the signed header {name} is missing")
            headers[name] = value
        url = f"http://{headers['host']}{target}"
        request = AWSRequest(method=environ["REQUEST_METHOD"], url=url, headers=headers, data=body)
        request.context["timestamp"] = stamp
        return request

    @staticmethod
    def _check_payload_hash(request: AWSRequest, body: bytes) -> None:
        claimed = request.headers.get("x-amz-content-sha256")
        if claimed and _HEX64.match(claimed) and claimed != hashlib.sha256(body).hexdigest():
            raise Refused("SignatureDoesNotMatch", "the body does not match its signed hash")

    def _signature(self, request: AWSRequest, region: str, service: str) -> str:
        verifier_class = _VERIFIERS["s3" if service == "s3" else "other"]
        verifier = verifier_class(self.credentials, service, region)
        canonical = verifier.canonical_request(request)
        return str(verifier.signature(verifier.string_to_sign(request, canonical), request))


def _error_response(environ: dict[str, Any], refused: Refused) -> tuple[bytes, str]:
    """The body an AWS SDK parses for this protocol: JSON for X-Amz-Target calls, else XML."""
    if environ.get("HTTP_X_AMZ_TARGET"):
        body = json.dumps({"__type": refused.code, "message": refused.message})
        return body.encode(), "application/x-amz-json-1.0"
    xml = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<ErrorResponse><Error><Type>Sender</Type>'
        f"<Code>{refused.code}</Code><Message>{refused.message}</Message></Error>"
        "<RequestId>pawl-stand-in</RequestId></ErrorResponse>"
    )
    return xml.encode(), "text/xml"


class RequireSignature:
    """WSGI middleware: only requests signed with the runtime's key reach ``app``."""

    def __init__(
        self,
        app: Callable[[dict[str, Any], StartResponse], Iterable[bytes]],
        credentials: StandInCredentials,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.app = app
        self.check = SignatureCheck(credentials, clock)

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        try:
            self.check.verify(environ)
        except Refused as refused:
            log.warning(
                "stand-in refused %s %s: %s",
                environ.get("REQUEST_METHOD"),
                environ.get("PATH_INFO"),
                refused.code,
            )
            body, content_type = _error_response(environ, refused)
            start_response(
                "403 Forbidden",
                [("Content-Type", content_type), ("Content-Length", str(len(body)))],
            )
            return [body]
        return self.app(environ, start_response)
