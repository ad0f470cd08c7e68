"""The AWS stand-in (moto's server on 127.0.0.1) and pointing this process at an endpoint.

Every AWS client in pawl is created lazily from :mod:`chalicelib.settings`, so pointing the
process at an endpoint is: change the environment, then drop the cached settings, clients,
queue URLs and table bindings. :class:`EnvPatch` remembers what it changed so an embedded
runtime (tests, ``pawl demo``) leaves the environment as it found it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from moto.server import ThreadedMotoServer

from chalicelib.local import moto_patches

log = logging.getLogger("pawl.local")

#: Credentials the stand-in accepts; real ones must never be sent to it.
DUMMY_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "pawl-local",
    "AWS_SECRET_ACCESS_KEY": "pawl-local",
}
#: Variables that would make boto3 look past the dummy credentials (a profile, a token).
CREDENTIAL_OVERRIDES = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN")


class AwsStandIn:
    """moto's threaded server, always bound to 127.0.0.1 (its default is every interface)."""

    def __init__(self, port: int = 0) -> None:
        moto_patches.apply()
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        self.endpoint: str | None = None

    def start(self) -> str:
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"
        log.info("AWS stand-in (moto) listening on %s", self.endpoint)
        return self.endpoint

    def stop(self) -> None:
        if self.endpoint is not None:
            self._server.stop()
            self.endpoint = None


class EnvPatch:
    """Set or remove environment variables, remembering the previous values."""

    def __init__(self) -> None:
        self._previous: dict[str, str | None] = {}

    def set(self, name: str, value: str | None) -> None:
        if name not in self._previous:
            self._previous[name] = os.environ.get(name)
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value

    def set_default(self, name: str, value: str) -> None:
        if not os.environ.get(name):
            self.set(name, value)

    def update(self, values: Mapping[str, str | None]) -> None:
        for name, value in values.items():
            self.set(name, value)

    def restore(self) -> None:
        for name, value in self._previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._previous.clear()


def stand_in_environment(endpoint: str) -> dict[str, str | None]:
    """The variables that point boto3 (and so all of pawl) at the stand-in."""
    values: dict[str, str | None] = {
        "AWS_ENDPOINT_URL": endpoint,
        # moto's server is not safe under concurrent TransactWriteItems
        # ("dictionary changed size during iteration"): send them one at a time.
        "PAWL_SERIALIZE_TRANSACTIONS": "1",
        **DUMMY_CREDENTIALS,
    }
    values.update({name: None for name in CREDENTIAL_OVERRIDES})
    return values


def reset_aws_state() -> None:
    """Forget every cached setting, client, queue URL and table binding (the env changed)."""
    from chalicelib import aws, queues, settings
    from chalicelib.store import base

    settings.reset_settings()
    aws.reset_clients()
    queues.reset()
    base.bind(force=True)
