"""The shape of a public identifier: a type prefix, ``_``, letters and digits.

Apart from :mod:`chalicelib.ids` (which mints ids and types them for pydantic) so the
laptop side (``pawl`` on the command line) can tell an id from a name without importing
pydantic.
"""

from __future__ import annotations

import re

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


#: What the API accepts as an id of a kind: its prefix, ``_``, then 1 to 64 letters or
#: digits. Minted ids have 16; the wider range keeps hand-written test ids readable. A
#: value of another shape can name nothing, so it never reaches the store (an empty
#: string, for one, is not a valid DynamoDB key and used to answer 500).
ID_BODY = "[A-Za-z0-9]{1,64}"


def id_pattern(kind: str) -> str:
    return f"^{PREFIXES[kind]}_{ID_BODY}$"


def is_id(kind: str, value: str) -> bool:
    return re.fullmatch(id_pattern(kind), value) is not None


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
