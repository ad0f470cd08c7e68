"""Secret header values are write-only: stored and sent, never shown.

An agent's or tool's ``config.headers`` may carry credentials for the system it calls. A
header is *secret* when its name is ``Authorization``, ``Proxy-Authorization``,
``X-Api-Key`` or ``Cookie``, or contains ``token``, ``secret``, ``key``, ``password``,
``auth`` or ``cookie`` (any case). Every read of the resource shows such a value as
:data:`MASK`; the adapters still send the stored value.

A value that is only a secret reference (``{{secret:sec_...}}``, optionally after a scheme
word: ``Bearer {{secret:sec_...}}``) holds no credential and is shown as stored, as SOAT
echoes the token; the value is resolved only for the call (``chalicelib.store.secrets``).

An update that sends :data:`MASK` back as a header's value means "keep the stored value"
(so a client can GET, edit another field, and PUT the config back). Sending the mask for a
header the stored config does not have is refused: there is no value to keep.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from chalicelib.domain.secrets import is_token_only
from chalicelib.errors import ValidationFailed

MASK = "********"
_SECRET_NAMES = frozenset({"authorization", "proxy-authorization", "x-api-key", "cookie"})
_SECRET_PARTS = ("token", "secret", "key", "password", "auth", "cookie")


def masked_config_field() -> Any:
    """The ``config`` field of a resource shown with masked headers (documents the mask)."""
    return Field(
        description=f"Secret header values are shown as {MASK}; sending {MASK} back on an "
        "update keeps the stored value"
    )


def is_secret_header(name: str) -> bool:
    lowered = name.lower()
    return lowered in _SECRET_NAMES or any(part in lowered for part in _SECRET_PARTS)


def _is_reference(value: Any) -> bool:
    return isinstance(value, str) and is_token_only(value)


def masked_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with the values of its secret headers replaced by :data:`MASK`."""
    headers = config.get("headers")
    if not isinstance(headers, Mapping):
        return dict(config)
    shown = {
        name: MASK if is_secret_header(name) and not _is_reference(value) else value
        for name, value in headers.items()
    }
    return {**config, "headers": shown}


def restore_masked(config: Mapping[str, Any], stored: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with each header sent as :data:`MASK` given its stored value back.

    Header names match case-insensitively (HTTP header names do); refused (400, naming the
    header) when the stored config has no such header to keep.
    """
    headers = config.get("headers")
    if not isinstance(headers, Mapping) or MASK not in headers.values():
        return dict(config)
    old = stored.get("headers")
    kept = {str(k).lower(): v for k, v in old.items()} if isinstance(old, Mapping) else {}
    restored: dict[str, Any] = {}
    for name, value in headers.items():
        if value == MASK:
            if name.lower() not in kept:
                raise ValidationFailed(
                    f"header {name!r} is sent as the mask {MASK!r} but has no stored value "
                    "to keep: send the real value",
                    field=f"config.headers.{name}",
                )
            value = kept[name.lower()]
        restored[name] = value
    return {**config, "headers": restored}
