"""A small support agent over HTTP, to try ``test_support_agent.py`` against.

``python examples/support_agent.py --port 8100`` serves the good version at
``http://127.0.0.1:8100/``; ``--regressed`` serves a version whose shorter prompt lost the
details of four topics (billing, refunds, exports, two-factor). It answers pawl's http agent
shape: POST ``{"input": [messages], ...}`` -> ``{"output": "..."}``. pawl calls a loopback
port only when the operator allows it: start the server with
``PAWL_ALLOW_PRIVATE_URLS=loopback:8100 pawl serve``.
"""

from __future__ import annotations

import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANSWERS = {
    "phishing": "Acme will never ask for your password by email; forward the message to "
    "security@acme.example.",
    "refund": "Refunds for annual plans are prorated and reach your card within 5-10 business "
    "days of the cancellation.",
    "billing": "Invoices are issued on the first of each month; download them from "
    "Settings > Billing.",
    "export": "Export your data as CSV or JSON from Settings > Data > Export.",
    "two_factor": "Turn on two-factor authentication under Settings > Security.",
    "email": "Change your login email under Settings > Profile; we confirm the new address.",
    "password": "Use the Forgot password link on the sign-in page.",
    "outage": "We're aware of the incident; live updates are on status.acme.example.",
}
#: What the regressed version says instead for the topics it lost.
VAGUE = "Please check your account settings, or write to support for help with that."
LOST_TOPICS = frozenset({"refund", "billing", "export", "two_factor"})
# Checked in this order: the first topic with a keyword in the question wins.
ROUTES = [
    ("phishing", ("asking for my password", "suspicious")),
    ("refund", ("refund",)),
    ("billing", ("invoice", "billing")),
    ("export", ("export",)),
    ("two_factor", ("two-factor", "2fa")),
    ("email", ("email",)),
    ("password", ("password",)),
    ("outage", ("down", "outage")),
]


def answer(question: str, *, regressed: bool = False) -> str:
    text = question.lower()
    topic = next((t for t, words in ROUTES if any(w in text for w in words)), None)
    if topic is None:
        return "Sorry, I don't know that one yet."
    return VAGUE if regressed and topic in LOST_TOPICS else ANSWERS[topic]


def reply(payload: dict[str, Any], *, regressed: bool = False) -> dict[str, Any]:
    """pawl's http agent answer to one request body."""
    users = [m.get("content", "") for m in payload.get("input") or [] if m.get("role") == "user"]
    return {"output": answer(users[-1] if users else "", regressed=regressed)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8100)
    parser.add_argument("--regressed", action="store_true")
    args = parser.parse_args()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            out = json.dumps(reply(json.loads(body or b"{}"), regressed=args.regressed)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(
        f"support agent ({'regressed' if args.regressed else 'good'}) on http://127.0.0.1:{args.port}/"
    )
    server.serve_forever()


if __name__ == "__main__":
    main()
