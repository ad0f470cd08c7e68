"""Public identifiers: a type prefix and 16 random characters."""

from __future__ import annotations

import secrets
import string

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
}


def random_token(length: int = 16) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(length))


def new_id(kind: str) -> str:
    """A fresh id for a resource kind named in :data:`PREFIXES`."""
    return f"{PREFIXES[kind]}_{random_token()}"
