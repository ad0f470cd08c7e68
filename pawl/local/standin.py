"""The AWS stand-in (moto's server on 127.0.0.1) and pointing this process at an endpoint.

The stand-in answers only requests signed (AWS SigV4) with credentials made at random for
each runtime (:class:`StandInCredentials`): they reach the child on its stdin, never on its
command line, and only this process points boto3 at them. A tenant who reaches the port
without them gets 403 (see :mod:`pawl.local.standin_auth`).

Every AWS client in pawl is created lazily from :mod:`chalicelib.settings`, so pointing the
process at an endpoint is: change the environment, then drop the cached settings, clients,
queue URLs and table bindings. :class:`EnvPatch` remembers what it changed so an embedded
runtime (tests, ``pawl demo``) leaves the environment as it found it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger("pawl.local")

#: How long a stopping stand-in may take before it is killed.
STOP_TIMEOUT_S = 10.0
#: Variables that would make boto3 look past the stand-in's credentials (a profile, a token).
CREDENTIAL_OVERRIDES = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN")


_CHILD_DROPS = frozenset({"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", *CREDENTIAL_OVERRIDES})


class StandinExited(RuntimeError):
    """The stand-in process is gone (its supervisor reports the death and restarts it)."""


@dataclass(frozen=True)
class StandInCredentials:
    """The key pair one stand-in accepts; made at random per runtime, never logged."""

    access_key_id: str
    secret_access_key: str

    @classmethod
    def generate(cls) -> StandInCredentials:
        # The shape of an AWS key pair (20 upper-case characters, 40 URL-safe ones).
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
        key_id = "PAWL" + "".join(secrets.choice(alphabet) for _ in range(16))
        return cls(key_id, secrets.token_urlsafe(30))

    def as_json(self) -> str:
        return json.dumps(
            {"access_key_id": self.access_key_id, "secret_access_key": self.secret_access_key}
        )

    @classmethod
    def from_json(cls, line: str) -> StandInCredentials:
        data = json.loads(line)
        return cls(str(data["access_key_id"]), str(data["secret_access_key"]))

    def __repr__(self) -> str:  # never print the secret by accident
        return f"StandInCredentials(access_key_id={self.access_key_id!r}, secret=***)"


class AwsStandIn:
    """moto's server in a child process, always bound to 127.0.0.1.

    A child rather than a thread: moto's request handling is CPU-bound Python, and sharing
    an interpreter lock with the workers made every AWS call wait for them (and the other
    way round). See :mod:`pawl.local.standin_process`.
    """

    def __init__(self, port: int = 0, journal_dir: Path | None = None) -> None:
        self.port = port
        #: Where the child journals every acknowledged mutation (None: no journal).
        self.journal_dir = journal_dir
        self.credentials = StandInCredentials.generate()
        self.endpoint: str | None = None
        self._process: subprocess.Popen[str] | None = None
        self._control_lock = threading.Lock()

    def start(self) -> str:
        project_root = str(Path(__file__).resolve().parents[2])
        # The child needs no AWS credentials of any kind (it only checks its own).
        env = {
            **{k: v for k, v in os.environ.items() if k not in _CHILD_DROPS},
            "PYTHONPATH": os.pathsep.join(
                filter(None, [project_root, os.environ.get("PYTHONPATH")])
            ),
        }
        command = [sys.executable, "-m", "pawl.local.standin_process"]
        command += ["--port", str(self.port)]
        if self.journal_dir is not None:
            command += ["--journal-dir", str(self.journal_dir)]
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            # ``-m`` puts the working directory first on sys.path: the child must run this
            # checkout's code, not a ``chalicelib`` that happens to be where pawl was started.
            cwd=project_root,
        )
        assert self._process.stdin is not None and self._process.stdout is not None
        # The secret goes down the pipe: argv is visible to every user through ps.
        self._process.stdin.write(self.credentials.as_json() + "\n")
        self._process.stdin.flush()
        first_line = self._process.stdout.readline()
        if not first_line:
            code = self._process.wait(timeout=STOP_TIMEOUT_S)
            raise RuntimeError(f"the AWS stand-in exited with status {code} before listening")
        port = json.loads(first_line)["port"]
        self.port = port  # a restart binds the same port: pawl's clients keep their endpoint
        self.endpoint = f"http://127.0.0.1:{port}"
        log.info("AWS stand-in (moto, pid %d) listening on %s", self._process.pid, self.endpoint)
        return self.endpoint

    def control(self, op: str, **arguments: Any) -> dict[str, Any]:
        """Send one control command to the child (its stdin) and read its answer (stdout)."""
        process = self._process
        if process is None or process.stdin is None or process.stdout is None:
            raise StandinExited("the AWS stand-in is not running")
        with self._control_lock:
            try:
                process.stdin.write(json.dumps({"op": op, **arguments}) + "\n")
                process.stdin.flush()
                line = process.stdout.readline()
            except (BrokenPipeError, ValueError, OSError):  # it died (ValueError: pipe closed)
                line = ""
        if not line:
            raise StandinExited(f"the AWS stand-in exited during {op!r}")
        reply: dict[str, Any] = json.loads(line)
        if not reply.get("ok"):
            raise RuntimeError(f"the AWS stand-in refused {op!r}: {reply.get('error')}")
        return reply

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def exit_status(self) -> int | None:
        """The child's exit status if it exited without being stopped; None while it runs
        (or once :meth:`stop` took it down)."""
        process = self._process
        return None if process is None else process.poll()

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def restart(self) -> str:
        """Start a new child on the same port with the same key pair, after the old one
        exited. The caller then restores the state into it (``open``)."""
        self._release(self._process)
        self._process = None
        return self.start()

    def stop(self) -> None:
        process, self._process, self.endpoint = self._process, None, None
        if process is None:
            return
        assert process.stdin is not None
        # Closing stdin is the child's cue to shut down; a dead child's pipe is broken.
        with contextlib.suppress(BrokenPipeError, OSError):
            process.stdin.close()
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        self._release(process)

    @staticmethod
    def _release(process: subprocess.Popen[str] | None) -> None:
        """Reap an exited child and close its pipes (quietly: they may be broken)."""
        if process is None:
            return
        if process.poll() is None:
            process.kill()
            process.wait()
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                with contextlib.suppress(BrokenPipeError, OSError):
                    pipe.close()


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


def stand_in_environment(endpoint: str, credentials: StandInCredentials) -> dict[str, str | None]:
    """The variables that point boto3 (and so all of pawl) at the stand-in and its key."""
    values: dict[str, str | None] = {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": credentials.access_key_id,
        "AWS_SECRET_ACCESS_KEY": credentials.secret_access_key,
    }
    values.update({name: None for name in CREDENTIAL_OVERRIDES})
    return values


def reset_aws_state() -> None:
    """Forget every cached setting, client, queue URL and table binding (the env changed)."""
    from chalicelib import wiring

    wiring.reset()
