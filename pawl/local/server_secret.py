"""The local runtime's server secret: created once per state dir, kept beside the snapshot.

``PAWL_SERVER_SECRET`` is the root of the keys that encrypt webhook secrets and hash API keys
(:mod:`chalicelib.secretbox`). A deployment configures it; ``pawl serve`` makes one the first
time a state dir is used and reads it back afterwards, so a restarted runtime can still open
what it sealed. The file is ``0600`` and never part of ``snapshot.json``: a copied snapshot
alone does not reveal the secrets it holds.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

SECRET_FILE = "server-secret"
SECRET_BYTES = 32


def load_or_create(state_dir: Path) -> str:
    """The secret stored in ``state_dir``, created (atomically, mode 0600) when absent."""
    path = state_dir / SECRET_FILE
    if not path.exists():
        _create(path)
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        os.chmod(path, 0o600)  # readable by others (copied by hand?): tighten, never widen
    secret = path.read_text(encoding="ascii").strip()
    if not secret:
        raise RuntimeError(f"{path} is empty: restore it from a backup or remove the state dir")
    return secret


def _create(path: Path) -> None:
    """Write a fresh secret to a private temp file, then link it into place.

    ``os.link`` fails when the name exists, so two runtimes racing on a new state dir agree
    on one secret, and a reader never sees a half-written file.
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temp = path.with_name(f".{SECRET_FILE}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, (secrets.token_urlsafe(SECRET_BYTES) + "\n").encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(temp, path)
    except FileExistsError:
        pass  # another runtime created it first: use theirs
    finally:
        temp.unlink(missing_ok=True)
