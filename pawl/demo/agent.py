"""A demo support agent for "Acme Cloud", in two versions (python adapter callables).

``answer_v1`` is the vague first draft: it only knows about password resets and the
status page. ``answer_v2`` routes the question to a knowledge-base answer; it fixes most
cases and, like real prompt changes, breaks a few that v1 happened to get right (its
router checks topics in a fixed order, so a question touching two topics can land on
the wrong one).
"""

from __future__ import annotations

from typing import Any

SIGNATURE = "— Acme Support"

KNOWLEDGE_BASE = {
    "phishing": "Acme will never ask for your password by email; forward suspicious "
    "messages to security@acme.example and we will investigate.",
    "refund": "Refunds for annual plans are prorated and reach your card within "
    "5-10 business days of the cancellation.",
    "billing": "Invoices are issued on the first of each month; download them any time "
    "from Settings > Billing.",
    "export": "You can export your data as CSV or JSON from Settings > Data > Export; "
    "large exports arrive by email as a download link.",
    "two_factor": "Turn on two-factor authentication under Settings > Security; we support "
    "authenticator apps and hardware keys.",
    "email": "You can change your login email under Settings > Profile; we send a "
    "confirmation link to the new address.",
    "password": "Use the Forgot password link on the sign-in page; the reset link expires "
    "after 30 minutes.",
    "outage": "We're aware of the incident. Live updates are on status.acme.example and a "
    "root-cause report follows within 48 hours.",
}

# Checked in this order: the first topic whose keywords appear wins.
ROUTES = [
    ("phishing", ("phishing", "suspicious", "asked for my password", "scam")),
    ("refund", ("refund", "money back", "cancel my annual")),
    ("billing", ("invoice", "billing", "charged", "receipt", "vat")),
    ("export", ("export", "download all", "backup of my data", "csv")),
    ("two_factor", ("2fa", "two-factor", "authenticator", "security key")),
    ("email", ("email",)),
    ("password", ("password", "locked out", "can't log in", "cannot log in")),
    ("outage", ("down", "outage", "503", "not loading", "timeout")),
]


def _question(payload: dict[str, Any]) -> str:
    messages = payload.get("input") or []
    user = [m.get("content", "") for m in messages if m.get("role") == "user"]
    return (user[-1] if user else "").lower()


def _usage(tokens_in: int, tokens_out: int) -> dict[str, Any]:
    """What a hosted model would report: tokens, and their cost at a small model's prices."""
    cost = round(tokens_in * 0.000_001 + tokens_out * 0.000_004, 9)
    return {"input_tokens": tokens_in, "output_tokens": tokens_out, "cost_usd": cost}


def answer_v1(payload: dict[str, Any]) -> dict[str, Any]:
    """The vague first draft."""
    question = _question(payload)
    if any(word in question for word in ("down", "outage", "not loading", "503")):
        text = "Sorry about that! Please check status.acme.example for live updates."
    elif "password" in question or "locked out" in question:
        text = "You can reset it with the Forgot password link on the Acme sign-in page."
    else:
        text = "Thanks for contacting Acme support! Please visit our help center or reply "
        text += "with more details."
    return {"output": text, "usage": _usage(len(question) // 4, 20)}


def answer_v2(payload: dict[str, Any]) -> dict[str, Any]:
    """The knowledge-base version."""
    question = _question(payload)
    for topic, keywords in ROUTES:
        if any(keyword in question for keyword in keywords):
            text = f"{KNOWLEDGE_BASE[topic]} {SIGNATURE}"
            break
    else:
        text = f"Could you tell me a little more so I can route your question? {SIGNATURE}"
    return {"output": text, "usage": _usage(len(question) // 4, 30)}
