"""The stand-in's state lock: moto's DynamoDB one call at a time, and the journal's order.

moto's DynamoDB backend is not safe under concurrent requests (a transaction iterating a
table while another request writes it raises "dictionary changed size during
iteration"), and the journal (``local/journal.py``) needs every DynamoDB call and every S3
request ordered with its log. :class:`OneDynamoDBCallAtATime` takes :data:`STATE_LOCK`
around each DynamoDB request in front of moto, reading only the AWS wire protocol (the
``X-Amz-Target`` header), never moto's internals: it is not one of the version-guarded
patches and holds on any moto release. One call at a time costs little, since moto's
request handling is Python under one interpreter lock anyway.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from pawl.local.journal_wsgi import WsgiApp, run_buffered

#: Taken by every DynamoDB call (below) and, in the journal, by every S3 request and around
#: each mutation until its record is durable (``local/journal_wsgi.py``). Re-entrant: a
#: journaled DynamoDB mutation holds it when this layer takes it again.
STATE_LOCK = threading.RLock()


class OneDynamoDBCallAtATime:
    """WSGI layer: a DynamoDB request runs, answer included, under :data:`STATE_LOCK`."""

    def __init__(self, app: WsgiApp) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if not environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB_"):
            return self.app(environ, start_response)
        with STATE_LOCK:  # the whole answer under the lock: a WSGI body may be lazy
            status, headers, body = run_buffered(self.app, environ)
        start_response(status, headers)
        return [body]
