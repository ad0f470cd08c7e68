"""Where a client finds pawl and its key: arguments first, then the environment.

The same variables the CLI reads (``PAWL_SERVER``, ``PAWL_API_KEY``), so a shell set up for
``pawl list-evals`` is set up for ``pawl.Client()`` too.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

#: Where ``pawl serve`` listens unless told otherwise.
DEFAULT_SERVER = "http://127.0.0.1:8000"
SERVER_ENV = "PAWL_SERVER"
API_KEY_ENV = "PAWL_API_KEY"
DEFAULT_TIMEOUT_S = 30.0


def server_of(base_url: str | None, environ: Mapping[str, str] | None = None) -> str:
    """The base URL to use, without a trailing ``/``; ``ValueError`` unless http(s)."""
    env = os.environ if environ is None else environ
    url = (base_url or env.get(SERVER_ENV) or DEFAULT_SERVER).strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        source = "base_url" if base_url else SERVER_ENV
        raise ValueError(f"{source} must be an http:// or https:// URL, got {url!r}")
    return url


def api_key_of(api_key: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The key to send (the argument, else ``PAWL_API_KEY``), or None: public routes only."""
    env = os.environ if environ is None else environ
    return api_key or env.get(API_KEY_ENV) or None
