"""Project secrets: a credential a tenant's resources may *use* but nobody can read back.

What the API shows of a secret is :class:`Secret`: its name and whether a value is on file
(``has_value``), never the value. Resources reference a secret by id (``secret_id``, or a
``{{secret:sec_...}}`` token in a header value); the value is opened only right before the
outbound call that needs it (``chalicelib.store.secrets.reveal``).
"""

from __future__ import annotations

import re
from typing import Annotated

from chalicelib.domain.base import Resource
from chalicelib.iam.references import reads
from chalicelib.ids import ID_BODY, PREFIXES, SecretId

#: A reference inside a string field: ``{{secret:sec_...}}`` (by id; see docs/secrets.md).
SECRET_TOKEN = re.compile(r"\{\{\s*secret:(.*?)\s*\}\}", re.IGNORECASE | re.DOTALL)
_TOKEN_START = re.compile(r"\{\{\s*secret:", re.IGNORECASE)
#: A secret id as a token names it.
SECRET_ID = re.compile(rf"^{PREFIXES['secret']}_{ID_BODY}$")


#: A body field naming a secret to bind (``secret_id``): the caller needs
#: ``secrets:GetSecret`` on it, and a denied one answers what a missing one does (the
#: ``SECRET_NOT_FOUND`` of ``store.secrets.secret_not_found``, word for word).
SecretRef = Annotated[
    SecretId,
    reads("secret", message="secret {id} not found in this project", code="SECRET_NOT_FOUND"),
]


class Secret(Resource):
    id: str
    project_id: str
    name: str
    has_value: bool
    created_at: str
    updated_at: str


def token_references(text: str) -> list[str]:
    """What each ``{{secret:...}}`` token of ``text`` names (an id, or anything else a
    tenant wrote there: the caller refuses what is not a secret of the project)."""
    named = [match.group(1) for match in SECRET_TOKEN.finditer(text)]
    unclosed = len(_TOKEN_START.findall(text)) - len(named)
    return named + [""] * unclosed  # an unclosed token names nothing: refused too


def is_token_only(value: str) -> bool:
    """True when ``value`` is one token, optionally after an auth scheme word
    (``Bearer {{secret:sec_X}}``): it holds no credential of its own, so it is echoed."""
    match = re.fullmatch(r"(?:[A-Za-z][A-Za-z0-9._-]* )?(\{\{\s*secret:[^{}]*\}\})", value)
    return match is not None
