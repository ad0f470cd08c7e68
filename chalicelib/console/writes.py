"""What a console form changes: the API's own write routes, called as the signed-in key.

As :mod:`chalicelib.console.reads` does for reads, each write goes through
:func:`chalicelib.api.routing.dispatch`: the route's IAM action (a key whose policy
denies it gets the API's refusal), the body model (unknown fields and bad values are the
API's 400 with its message), the body's references and the handler's tenancy checks, all
before anything is written.
"""

from __future__ import annotations

import json
from typing import Any

from chalicelib.api import routing
from chalicelib.api.auth import Caller
from chalicelib.console.reads import as_json


def post(
    caller: Caller, path_template: str, body: dict[str, Any] | None = None, /, **path: str
) -> Any:
    """The JSON the API answers ``POST path_template`` with ``body`` as ``caller``."""
    spec = routing.route("POST", path_template)
    raw = json.dumps(body).encode() if body is not None else b""
    return as_json(routing.dispatch(spec, caller, dict(path), {}, raw))
