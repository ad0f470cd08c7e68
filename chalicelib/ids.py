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


def new_id(kind: str) -> str:
    """A fresh id for a resource kind named in :data:`PREFIXES`."""
    return f"{PREFIXES[kind]}_{random_token()}"
