"""Public identifiers: a type prefix and 16 random characters."""

from __future__ import annotations

import hashlib
import re
import secrets
import string
from typing import Annotated

from pydantic import Field

_ALPHABET = string.ascii_letters + string.digits

PREFIXES = {
    "project": "proj",
    "api_key": "key",
    "agent": "agt",
    "dataset": "dset",
    "dataset_item": "dsit",
    "eval": "eval",
    "eval_run": "evrun",
    "eval_result": "evres",
    "generation": "gen",
    "webhook": "whk",
    "delivery": "whdl",
    "ai_provider": "aip",
    "tool": "tool",
    "decider": "dcd",
    "decision": "dec",
    "trigger": "trg",
    "trigger_firing": "trg_fire",
    "formation": "form",
    "formation_resource": "form_res",
    "formation_operation": "form_op",
    "policy": "pol",
    "usage_event": "ue",
    "usage_row": "urow",
    "secret": "sec",
}


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


#: What the API accepts as an id of a kind: its prefix, ``_``, then 1 to 64 letters or
#: digits. Minted ids have 16; the wider range keeps hand-written test ids readable. A
#: value of another shape can name nothing, so it never reaches the store (an empty
#: string, for one, is not a valid DynamoDB key and used to answer 500).
ID_BODY = "[A-Za-z0-9]{1,64}"


def id_pattern(kind: str) -> str:
    return f"^{PREFIXES[kind]}_{ID_BODY}$"


def is_id(kind: str, value: str) -> bool:
    return re.fullmatch(id_pattern(kind), value) is not None


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

#: Path parameter name -> the kind of id it holds (a malformed one is a 404 at the edge).
PATH_PARAMETER_KINDS = {
    "project_id": "project",
    "key_id": "api_key",
    "agent_id": "agent",
    "dataset_id": "dataset",
    "item_id": "dataset_item",
    "eval_id": "eval",
    "eval_run_id": "eval_run",
    "generation_id": "generation",
    "webhook_id": "webhook",
    "delivery_id": "delivery",
    "provider_id": "ai_provider",
    "tool_id": "tool",
    "decider_id": "decider",
    "decision_id": "decision",
    "trigger_id": "trigger",
    "firing_id": "trigger_firing",
    "formation_id": "formation",
    "policy_id": "policy",
    "secret_id": "secret",
}
