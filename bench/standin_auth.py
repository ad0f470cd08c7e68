"""CPU cost of the stand-in's signature check per request (pawl.local.standin_auth).

Signs typical pawl requests with botocore (a DynamoDB PutItem, an SQS SendMessage, an S3
PutObject of 64 KB), turns each into the WSGI environ the stand-in's server would build, and
times ``SignatureCheck.verify`` on it (body read and put back included).

    python bench/standin_auth.py [--rounds 2000]
"""

from __future__ import annotations

import argparse
import io
import json
import timeit
from typing import Any
from urllib.parse import urlsplit

from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from pawl.local.standin import StandInCredentials
from pawl.local.standin_auth import SignatureCheck

HOST = "127.0.0.1:4566"


def signed_environ(
    creds: StandInCredentials,
    service: str,
    method: str,
    target: str,
    headers: dict[str, str],
    body: bytes,
) -> dict[str, Any]:
    """The WSGI environ the stand-in's server builds for a request botocore signed with
    ``creds`` (also the security tests' forger's starting point)."""
    request = AWSRequest(method=method, url=f"http://{HOST}{target}", headers=headers, data=body)
    signer = (S3SigV4Auth if service == "s3" else SigV4Auth)(
        Credentials(creds.access_key_id, creds.secret_access_key), service, "us-east-1"
    )
    signer.add_auth(request)
    parts = urlsplit(request.url)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "PATH_INFO": parts.path,
        "QUERY_STRING": parts.query,
        "RAW_URI": target,
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_HOST": HOST,
        "wsgi.input": io.BytesIO(body),
    }
    for name, value in request.headers.items():
        key = name.upper().replace("-", "_")
        environ["CONTENT_TYPE" if key == "CONTENT_TYPE" else f"HTTP_{key}"] = value
    return environ


def cases(creds: StandInCredentials) -> dict[str, dict[str, Any]]:
    item = {"pk": {"S": "run#evrun_0123456789abcdef"}, "payload": {"S": "x" * 2000}}
    put_item = json.dumps({"TableName": "pawl-results", "Item": item}).encode()
    send = json.dumps({"QueueUrl": "http://x/q", "MessageBody": "m" * 500}).encode()
    return {
        "dynamodb PutItem (2 KB)": signed_environ(
            creds,
            "dynamodb",
            "POST",
            "/",
            {
                "X-Amz-Target": "DynamoDB_20120810.PutItem",
                "Content-Type": "application/x-amz-json-1.0",
            },
            put_item,
        ),
        "sqs SendMessage": signed_environ(
            creds,
            "sqs",
            "POST",
            "/",
            {"X-Amz-Target": "AmazonSQS.SendMessage", "Content-Type": "application/x-amz-json-1.0"},
            send,
        ),
        "s3 PutObject (64 KB)": signed_environ(
            creds, "s3", "PUT", "/pawl-blobs/outputs/evres_1.json", {}, b"o" * 65536
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()
    creds = StandInCredentials.generate()
    check = SignatureCheck(creds)
    for name, environ in cases(creds).items():
        body = environ["wsgi.input"].read()

        def verify(environ: dict[str, Any] = environ, body: bytes = body) -> None:
            environ["wsgi.input"] = io.BytesIO(body)
            check.verify(environ)

        verify()  # raises if the check would refuse it
        best = min(timeit.repeat(verify, number=args.rounds, repeat=3)) / args.rounds
        print(f"{name:28s} {best * 1e6:8.1f} µs per request")


if __name__ == "__main__":
    main()
