"""Binding a secret into a resource: the caller must be allowed to read it.

A body that references a secret (an AI provider's or a model agent's ``secret_id``, a
``{{secret:sec_...}}`` token in a header value) is refused with ``400 SECRET_NOT_FOUND``
unless the secret exists *in the project written to* and the caller holds
``secrets:GetSecret`` on it. A missing secret, another project's and a denied one answer
byte for byte the same (tenancy: the caller learns nothing about what it may not read).
The check runs in the route's handler, so a formation that declares the resource (its
deploy calls the same handlers as the acting key) is checked the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from chalicelib import ids
from chalicelib.api.auth import Caller
from chalicelib.iam.srn import srn
from chalicelib.store import secrets as store

READ_ACTION = "secrets:GetSecret"


def check_secret(caller: Caller, project_id: str, secret_ref: str, field: str) -> None:
    """Refuse (400 ``SECRET_NOT_FOUND``) a reference the caller may not bind."""
    usable = (
        ids.is_id(store.KIND, secret_ref)
        and caller.allows(READ_ACTION, srn(project_id, "secret", secret_ref))
        and store.find_secret(project_id, secret_ref) is not None
    )
    if not usable:
        raise store.secret_not_found(secret_ref, field)


def check_secrets(caller: Caller, project_id: str, refs: Iterable[str], field: str) -> None:
    for secret_ref in sorted(set(refs)):
        check_secret(caller, project_id, secret_ref, field)


def check_config(caller: Caller, project_id: str, config: Any) -> None:
    """Every secret an agent's or tool's ``config`` names (``secret_id``, tokens)."""
    named = config.get("secret_id") if isinstance(config, dict) else None
    if not isinstance(named, str):
        named = None  # not a secret id at all: the config's own validation refuses it
    else:  # the reference field: answered where the route check would
        check_secret(caller, project_id, named, "config.secret_id")
    tokens = store.config_references(config) - {named}
    check_secrets(caller, project_id, tokens, "config")
