"""What a local runtime prepares before the AWS stand-in exists: the state dir (locked to
one runtime), the secrets it holds, the outbound allow-list check, and the credentials a
loopback endpoint needs.

Pure of the runtime: each step takes what it changes (an :class:`EnvPatch`, a path), so
``local/runtime.py`` only orders them.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit

import boto3

from chalicelib.outbound import InvalidAllowList, validate_allow_list
from chalicelib.settings import PUBLIC_URL, InvalidSetting, public_url_from
from pawl.local import server_secret
from pawl.local.standin import EnvPatch

#: Given to a local endpoint (MiniStack, a moto server) when no AWS credentials are
#: configured: botocore will not sign a request without some, and such an endpoint
#: accepts any.
DUMMY_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "pawl-local", "AWS_SECRET_ACCESS_KEY": "pawl-local"}


def local_endpoint_credentials(endpoint: str) -> dict[str, str]:
    """Dummy credentials for a loopback ``endpoint`` when boto3 finds none; else nothing."""
    host = urlsplit(endpoint).hostname or ""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback or boto3.Session().get_credentials() is not None:
        return {}
    return dict(DUMMY_CREDENTIALS)


def check_allow_list() -> None:
    """Refuse to start with an allow-list pawl does not understand (it would mean "public")."""
    try:
        validate_allow_list(os.environ.get("PAWL_ALLOW_PRIVATE_URLS", ""))
    except InvalidAllowList as exc:
        raise RuntimeError(
            f"PAWL_ALLOW_PRIVATE_URLS is not valid: {exc} (expected a comma-separated list of "
            "loopback:PORT, CIDRs such as 10.0.0.0/8, loopback or all; empty: public only)"
        ) from None


def check_public_url() -> None:
    """Refuse to start with a ``PAWL_PUBLIC_URL`` that is not an http(s) URL."""
    try:
        public_url_from(os.environ.get(PUBLIC_URL))
    except InvalidSetting as exc:
        raise RuntimeError(str(exc)) from None


def publish_own_url(env: EnvPatch, own_url: str) -> None:
    """``PAWL_PUBLIC_URL`` defaults to the runtime's own URL (console links in webhooks)."""
    if os.environ.get(PUBLIC_URL, "").strip():
        return
    try:
        env.set(PUBLIC_URL, public_url_from(own_url))
    except InvalidSetting:  # e.g. an unbracketed IPv6 host: no links rather than no start
        return


def prepare_secrets(env: EnvPatch, state_dir: Path, python_agent_modules: tuple[str, ...]) -> None:
    """The state dir's server secret (unless configured) and the python agent allow-list."""
    if not os.environ.get("PAWL_SERVER_SECRET"):
        env.set("PAWL_SERVER_SECRET", server_secret.load_or_create(state_dir))
    if python_agent_modules:
        listed = os.environ.get("PAWL_PYTHON_AGENT_MODULES", "").split(",")
        names = [n.strip() for n in [*listed, *python_agent_modules] if n.strip()]
        env.set("PAWL_PYTHON_AGENT_MODULES", ",".join(dict.fromkeys(names)))


def lock_state_dir(state_dir: Path) -> IO[bytes]:
    """Create (0700) and lock ``state_dir``; the handle holds the lock until it is closed.

    Two runtimes on one state dir would overwrite each other's snapshots.
    """
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    handle = open(state_dir / ".lock", "wb")  # noqa: SIM115 (held until the runtime stops)
    try:
        import fcntl

        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except ImportError:
        pass  # no advisory locks on this platform
    except OSError:
        handle.close()
        raise RuntimeError(f"{state_dir} is in use by another pawl runtime") from None
    return handle
