"""Plain moto, for comparing pawl's moto patches with: its own server in its own process.

The child is started isolated (``-I``: no PYTHONPATH, no working directory on the path)
and imports nothing of pawl, so none of pawl's patches can be in it; it reports whether
moto's TransactWriteItems is moto's own, and the fixture refuses to run otherwise.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
from botocore.config import Config

from pawl.local.standin import StandInCredentials

REGION = "us-east-1"
#: What plain moto (in-process or its server) is called with: it checks no signature.
MOTO_CREDENTIALS = StandInCredentials("testing", "testing")

_SERVER = textwrap.dedent(
    """
    import json, logging, sys
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per request otherwise
    from moto.dynamodb.models import DynamoDBBackend
    from moto.server import ThreadedMotoServer
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    own = DynamoDBBackend.transact_write_items.__module__ == "moto.dynamodb.models"
    pawl = sorted(name for name in sys.modules if name.startswith("chalicelib"))
    port = server.get_host_and_port()[1]
    print(json.dumps({"port": port, "own": own, "pawl": pawl}), flush=True)
    sys.stdin.read()  # until the parent closes the pipe (or dies)
    server.stop()
    """
)


@contextmanager
def plain_moto_server() -> Iterator[str]:
    """The endpoint of plain moto's server, running in a child process until exit."""
    child = subprocess.Popen(
        [sys.executable, "-I", "-c", _SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        started = json.loads(child.stdout.readline())
        assert started["own"] and started["pawl"] == [], f"plain moto is not plain: {started}"
        yield f"http://127.0.0.1:{started['port']}"
    finally:
        child.stdin.close()
        child.wait(timeout=30)


def aws_clients(
    endpoint: str | None, credentials: StandInCredentials = MOTO_CREDENTIALS
) -> tuple[Any, Any]:
    """DynamoDB and SQS clients of a server (no endpoint: of in-process moto).

    One attempt per call: a refused call's answer is what is compared, not a retry's."""
    options: dict[str, Any] = {
        "region_name": REGION,
        "aws_access_key_id": credentials.access_key_id,
        "aws_secret_access_key": credentials.secret_access_key,
        "config": Config(retries={"total_max_attempts": 1}),
    }
    if endpoint is not None:
        options["endpoint_url"] = endpoint
    return boto3.client("dynamodb", **options), boto3.client("sqs", **options)


@contextmanager
def standin_and_plain_dynamodb() -> Iterator[tuple[Any, Any]]:
    """DynamoDB clients of a fresh stand-in (pawl's patched moto) and of plain moto, to
    hold the stand-in's answers to plain moto's."""
    from pawl.local.standin import AwsStandIn

    standin = AwsStandIn()
    standin.start()
    try:
        with plain_moto_server() as endpoint:
            yield aws_clients(standin.endpoint, standin.credentials)[0], aws_clients(endpoint)[0]
    finally:
        standin.stop()
