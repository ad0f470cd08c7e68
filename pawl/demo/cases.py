"""The demo dataset: realistic support questions, each with the fact a good answer names.

``kind`` groups the cases (the eval's ``group_by``); ``must_mention`` is the phrase the
json_logic scorer looks for in the answer; ``expected_output`` is the reference answer.
"""

from __future__ import annotations

from typing import Any

from pawl.demo.agent import KNOWLEDGE_BASE

# (kind, topic whose answer is right, must_mention, question)
CASES: list[tuple[str, str, str, str]] = [
    ("billing", "billing", "first of each month", "When is my invoice issued each month?"),
    ("billing", "billing", "Settings > Billing", "Where can I download last month's invoice?"),
    ("billing", "billing", "Settings > Billing", "I need a receipt for my accountant."),
    ("billing", "billing", "first of each month", "On what day do you charge my card?"),
    ("billing", "billing", "Settings > Billing", "How do I get an invoice with our VAT number?"),
    ("billing", "billing", "first of each month", "Why was I charged on the 1st?"),
    ("billing", "billing", "Settings > Billing", "Where do I see my billing history?"),
    ("billing", "billing", "first of each month", "When does the next billing cycle start?"),
    ("refund", "refund", "prorated", "Can I get a refund if I cancel my annual plan?"),
    ("refund", "refund", "5-10 business days", "How long does a refund take to arrive?"),
    ("refund", "refund", "prorated", "Do I get money back for unused months?"),
    ("refund", "refund", "5-10 business days", "I was promised a refund, when will I see it?"),
    ("refund", "refund", "prorated", "What happens to my payment if I cancel my annual plan?"),
    ("refund", "refund", "5-10 business days", "Refund still not on my card, is that normal?"),
    ("refund", "refund", "prorated", "Is the refund for the full year or partial?"),
    ("refund", "refund", "5-10 business days", "The refund was approved; when does it land?"),
    ("account", "password", "Forgot password", "I forgot my password, how do I reset it?"),
    ("account", "password", "Forgot password", "I'm locked out of my account."),
    ("account", "email", "Settings > Profile", "How do I change the email I log in with?"),
    ("account", "password", "Forgot password", "I forgot my password and my email changed."),
    ("account", "email", "Settings > Profile", "Can I update my account email address?"),
    ("account", "password", "Forgot password", "Password reset link expired, what now?"),
    ("account", "password", "Forgot password", "My password reset email never arrived."),
    ("account", "email", "Settings > Profile", "We renamed our company; new email for login?"),
    ("outage", "outage", "status.acme.example", "Is Acme down right now?"),
    ("outage", "outage", "status.acme.example", "The dashboard is not loading for anyone."),
    ("outage", "outage", "status.acme.example", "Getting 503 errors on every API call."),
    ("outage", "outage", "status.acme.example", "The app is down and I was charged twice."),
    ("outage", "outage", "root-cause report", "Will you publish what caused the outage?"),
    ("outage", "outage", "status.acme.example", "Requests time out since an hour, outage?"),
    ("outage", "outage", "root-cause report", "Yesterday's outage hurt us, explanation?"),
    ("outage", "outage", "status.acme.example", "Your login page is down, is my password ok?"),
    ("security", "two_factor", "two-factor", "How do I turn on 2FA?"),
    ("security", "two_factor", "hardware keys", "Can I use a security key to sign in?"),
    ("security", "phishing", "never ask for your password", "Someone asked for my password."),
    ("security", "phishing", "security@acme.example", "I got a suspicious email from 'Acme'."),
    ("security", "two_factor", "two-factor", "Which authenticator apps do you support?"),
    ("security", "phishing", "never ask for your password", "Is this phishing? Link attached."),
    ("security", "two_factor", "two-factor", "Can I make two-factor mandatory for my team?"),
    ("security", "phishing", "security@acme.example", "Report a scam site copying Acme."),
    ("data_export", "export", "Settings > Data > Export", "How do I export all my data?"),
    ("data_export", "export", "CSV or JSON", "Which formats can I export projects in?"),
    ("data_export", "export", "download link", "My export is huge; how do I get it?"),
    ("data_export", "export", "Settings > Data > Export", "I want a backup of my data."),
    ("data_export", "export", "CSV or JSON", "Can I get my data as CSV?"),
    ("data_export", "export", "download link", "Where does a large export get delivered?"),
    ("data_export", "export", "Settings > Data > Export", "Before we leave, download all data?"),
    ("data_export", "export", "CSV or JSON", "Export as JSON for our data warehouse?"),
]


def sample_indices(count: int) -> list[int]:
    """``count`` evenly spread case indices (the middle of each equal stride).

    The cases are listed kind by kind, so a sample keeps every kind; 12 of the 48 keep the
    full set's story (v1 mostly fails, v2 mostly passes, one case regresses).
    """
    if not 1 <= count <= len(CASES):
        raise ValueError(f"count must be within 1..{len(CASES)}, got {count}")
    stride = len(CASES) / count
    return [int((index + 0.5) * stride) for index in range(count)]


def dataset_items(count: int | None = None) -> list[dict[str, Any]]:
    """The demo cases (all, or ``count`` of them spread evenly) as dataset-item bodies."""
    chosen = range(len(CASES)) if count is None else sample_indices(count)
    return [_item_body(*CASES[index]) for index in chosen]


def _item_body(kind: str, topic: str, must_mention: str, question: str) -> dict[str, Any]:
    return {
        "input": [{"role": "user", "content": question}],
        "expected_output": KNOWLEDGE_BASE[topic],
        "metadata": {"kind": kind, "must_mention": must_mention},
    }


def eval_scorers() -> list[dict[str, Any]]:
    """The demo eval's deterministic scorers."""
    return [
        {
            "type": "json_logic",
            "expression": {"in": [{"var": "item.metadata.must_mention"}, {"var": "output"}]},
        },
        {"type": "contains", "value": "acme"},
    ]
