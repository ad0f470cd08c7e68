"""Let one Chalice app serve several HTTP requests at once, as Lambda's instances do.

Chalice keeps the request being served in two attributes of the app object,
``current_request`` and ``lambda_context``, which every blueprint's ``current_request``
reads. On Lambda an instance serves one request at a time, so a process-global attribute
is enough. The local front serves many connections from one process; with those two
attributes shared it had to run requests one at a time, and a ``wait: true`` run start
then held every other request (its own cancel included) until the run finished.

:func:`serve_concurrently` gives the app those two attributes per thread: the app's class
is swapped for a subclass whose properties keep them in a ``threading.local``. Nothing
else of Chalice's request handling is shared between calls (``Chalice.__call__`` builds a
new ``RestAPIEventHandler`` for each event), and pawl's handlers already run concurrently
with the SQS workers and schedules in this process, as they do on AWS.
"""

from __future__ import annotations

import threading
from typing import Any

from chalice import Chalice

_PER_THREAD = ("current_request", "lambda_context")


class _ThreadLocalRequest:
    """A data descriptor: each thread sees its own value of the attribute."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, app: Any, owner: type | None = None) -> Any:
        if app is None:
            return self
        return getattr(app._pawl_request_state, self.name, None)

    def __set__(self, app: Any, value: Any) -> None:
        setattr(app._pawl_request_state, self.name, value)


def serve_concurrently(app: Chalice) -> Chalice:
    """Make ``app`` safe to call from several threads at once (idempotent); returns it."""
    if "_pawl_request_state" in vars(app):
        return app
    base = type(app)
    namespace: dict[str, object] = {name: _ThreadLocalRequest(name) for name in _PER_THREAD}
    namespace["__doc__"] = f"{base.__name__} with its current request kept per thread."
    per_thread = type(f"PerThread{base.__name__}", (base,), namespace)
    app.__dict__["_pawl_request_state"] = threading.local()
    for name in _PER_THREAD:
        app.__dict__.pop(name, None)  # an instance value would hide nothing, but is stale
    app.__class__ = per_thread
    return app
