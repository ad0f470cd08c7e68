"""Public identifiers: a type prefix and 16 random characters."""

from __future__ import annotations

import hashlib
import secrets
import string
from typing import Annotated

from pydantic import Field

# The shape of an id lives in idformat (no pydantic); its names are still read from here.
from chalicelib.idformat import ID_BODY as ID_BODY
from chalicelib.idformat import PATH_PARAMETER_KINDS as PATH_PARAMETER_KINDS
from chalicelib.idformat import PREFIXES, id_pattern
from chalicelib.idformat import is_id as is_id

_ALPHABET = string.ascii_letters + string.digits


#: The largest multiple of len(_ALPHABET) a byte can hold: bytes at or above it are skipped,
#: so every character stays equally likely.
_UNBIASED_BELOW = 256 - 256 % len(_ALPHABET)


def random_token(length: int = 16) -> str:
    """``length`` characters of :data:`_ALPHABET`, from the OS's CSPRNG.

    One ``token_bytes`` call per token rather than one ``secrets.choice`` per character
    (ids are minted on the hot path: two per executed item).
    """
    chars: list[str] = []
    while len(chars) < length:
        chars += [
            _ALPHABET[b % len(_ALPHABET)]
            for b in secrets.token_bytes(length + 8)
            if b < _UNBIASED_BELOW
        ]
    return "".join(chars[:length])


def derived_id(kind: str, *parts: str) -> str:
    """An id of ``kind`` drawn from a SHA-256 of ``parts`` instead of a random source.

    The same parts give the same id, so a conditional put on it makes a repeated cause (a
    redelivered event, a retried webhook call) one row instead of two.
    """
    number = int.from_bytes(hashlib.sha256("\x00".join(parts).encode()).digest())
    chars = []
    for _ in range(16):
        number, index = divmod(number, len(_ALPHABET))
        chars.append(_ALPHABET[index])
    return f"{PREFIXES[kind]}_{''.join(chars)}"


def new_id(kind: str) -> str:
    """A fresh id for a resource kind named in :data:`PREFIXES`."""
    return f"{PREFIXES[kind]}_{random_token()}"


ProjectId = Annotated[str, Field(pattern=id_pattern("project"))]
AgentId = Annotated[str, Field(pattern=id_pattern("agent"))]
DatasetId = Annotated[str, Field(pattern=id_pattern("dataset"))]
DatasetItemId = Annotated[str, Field(pattern=id_pattern("dataset_item"))]
EvalRunId = Annotated[str, Field(pattern=id_pattern("eval_run"))]
GenerationId = Annotated[str, Field(pattern=id_pattern("generation"))]
AiProviderId = Annotated[str, Field(pattern=id_pattern("ai_provider"))]
ToolId = Annotated[str, Field(pattern=id_pattern("tool"))]
DeciderId = Annotated[str, Field(pattern=id_pattern("decider"))]
EvalId = Annotated[str, Field(pattern=id_pattern("eval"))]
TriggerId = Annotated[str, Field(pattern=id_pattern("trigger"))]
PolicyId = Annotated[str, Field(pattern=id_pattern("policy"))]
SecretId = Annotated[str, Field(pattern=id_pattern("secret"))]
WebhookId = Annotated[str, Field(pattern=id_pattern("webhook"))]
