"""An instant HTTP agent for benchmarks: answers each request with its last message, at once.

Run as its own process (an agent is another service; in the benchmark's process it would
compete with the workers for the interpreter lock). Prints ``{"port": N}`` when listening
and, when its stdin closes, ``{"calls": N}`` (the requests it answered) and stops.
``GET /_timeline`` answers ``[[start, end], ...]``, the epoch seconds each call since the
last such GET arrived and answered (``bench/latency.py`` reads it), and forgets them.

    python bench/instant_agent.py [--port 0] [--delay-ms 0] [--modest]

``--delay-ms`` makes every answer wait that long first (a latency-bound agent).
``--modest`` is what many prototype agents run on: ``http.server`` as it comes, a listen
backlog of 5 and HTTP/1.0 (a new connection per call).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class InstantAgent(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: pawl's outbound client pools connections
    #: Headers and body leave in separate writes: without TCP_NODELAY the body waits for
    #: the client's delayed ACK (~40 ms per call on a keep-alive connection).
    disable_nagle_algorithm = True

    delay_s = 0.0

    calls = 0
    _count = threading.Lock()
    #: (arrived, answered) epoch seconds of each call since the last ``GET /_timeline``.
    timeline: list[tuple[float, float]] = []

    def do_GET(self) -> None:
        if self.path != "/_timeline":
            self.send_error(404)
            return
        with self._count:
            taken, InstantAgent.timeline = InstantAgent.timeline, []
        body = json.dumps(taken).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        arrived = time.time()
        with self._count:
            InstantAgent.calls += 1
        if self.delay_s:
            time.sleep(self.delay_s)
        length = int(self.headers.get("Content-Length") or 0)
        payload = json.loads(self.rfile.read(length))
        # It reports usage like a real agent, so the run meters every item (usage events).
        usage = {"input_tokens": 12, "output_tokens": 4, "cost_usd": 0.0001}
        body = json.dumps({"output": str(payload["input"][-1]["content"]), "usage": usage}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        with self._count:
            InstantAgent.timeline.append((arrived, time.time()))

    def log_message(self, format: str, *args: object) -> None:
        return  # one line per request otherwise


class Server(ThreadingHTTPServer):
    #: The listen backlog (socketserver's is 5): a run calls the agent 40 at once by default.
    request_queue_size = 128


class ModestAgent(InstantAgent):
    protocol_version = "HTTP/1.0"  # http.server's default: the connection closes after a call


class ModestServer(ThreadingHTTPServer):
    request_queue_size = 5  # socketserver's default


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay-ms", type=float, default=0.0)
    parser.add_argument("--modest", action="store_true", help="backlog 5, HTTP/1.0")
    args = parser.parse_args()
    InstantAgent.delay_s = args.delay_ms / 1000
    server: ThreadingHTTPServer
    if args.modest:
        server = ModestServer(("127.0.0.1", args.port), ModestAgent)
    else:
        server = Server(("127.0.0.1", args.port), InstantAgent)
    server.daemon_threads = True

    def stop_at_eof() -> None:
        sys.stdin.read()
        server.shutdown()

    threading.Thread(target=stop_at_eof, daemon=True).start()
    print(json.dumps({"port": server.server_address[1]}), flush=True)
    server.serve_forever(poll_interval=0.2)
    print(json.dumps({"calls": InstantAgent.calls}), flush=True)


if __name__ == "__main__":
    main()
