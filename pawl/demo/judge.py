"""The demo's LLM judge: an OpenAI-compatible chat endpoint on 127.0.0.1, in process.

It grades an answer's tone (does it thank, apologise or offer help?) and reports tokens and
a cost, as a hosted model would, so the demo's runs show judge spend (``eval_judge``)
beside the agent's (``eval``) in the usage API. Its scores never fall below the eval's
``pass_threshold`` for it, so adding it changes no item's pass/fail: the demo's verdict is
still decided by its deterministic scorers.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "demo-tone-judge"
PASS_THRESHOLD = 0.5
PROMPT = (
    "Grade the tone of this support answer from 0 to 1 (warm and helpful is 1). Reply as JSON "
    '{"score": <0-1>, "reasoning": "<why>"}.\nAnswer: {{output}}'
)
_WARM = ("thanks", "thank you", "sorry", "happy to", "glad")
#: USD per prompt token and per completion token (a small hosted model's order of magnitude).
_PRICE_IN, _PRICE_OUT = 0.000_000_5, 0.000_001_5
ALLOW_LIST = "PAWL_ALLOW_PRIVATE_URLS"


def grade(prompt: str) -> dict[str, Any]:
    """The chat completion answering ``prompt``: a verdict and the usage it reports."""
    answer = prompt.rsplit("Answer:", 1)[-1].lower()
    warm = any(word in answer for word in _WARM)
    verdict = {
        "score": 0.9 if warm else 0.6,
        "reasoning": "warm and helpful" if warm else "helpful but curt",
    }
    tokens_in, tokens_out = max(1, len(prompt) // 4), 16
    return {
        "id": "chatcmpl-demo",
        "object": "chat.completion",
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": json.dumps(verdict)},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": tokens_in,
            "completion_tokens": tokens_out,
            "cost": round(tokens_in * _PRICE_IN + tokens_out * _PRICE_OUT, 9),
        },
    }


class _JudgeServer(ThreadingHTTPServer):
    # A run opens a connection per worker thread at once (40 by default); the socket
    # module's listen backlog of 5 drops some, and pawl reads a reset (ReadError).
    request_queue_size = 128
    daemon_threads = True


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        messages = json.loads(self.rfile.read(length)).get("messages") or [{}]
        body = json.dumps(grade(str(messages[-1].get("content", "")))).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@contextmanager
def demo_judge() -> Iterator[str]:
    """Serve the judge on a free loopback port, allow-listed for pawl's outbound calls
    (set before the runtime reads its settings); yields its ``/v1`` base URL."""
    server = _JudgeServer(("127.0.0.1", 0), _Handler)
    port = server.server_address[1]
    previous = os.environ.get(ALLOW_LIST)
    os.environ[ALLOW_LIST] = ",".join(filter(None, [previous, f"loopback:{port}"]))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.shutdown()
        server.server_close()
        if previous is None:
            os.environ.pop(ALLOW_LIST, None)
        else:
            os.environ[ALLOW_LIST] = previous
