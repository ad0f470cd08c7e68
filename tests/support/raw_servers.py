"""A raw TCP server on 127.0.0.1 that drops connections before answering, for retry tests.

``dropping(drop, how)`` accepts connections and, for the first ``drop`` of them (every
one when ``drop`` is None), never sends a byte of an answer:

- ``"reset"``: closes at once with an RST (``SO_LINGER`` 0), before reading anything,
  as a kernel does with a connection its listen backlog has no room for;
- ``"close"``: reads the whole request, then closes (FIN) without answering: the
  server saw the request, as one that crashed before answering would have;
- ``"partial"``: reads the request, sends the start of an answer, then closes.

Every other connection is answered ``200`` with ``answer`` (by default ``{"output":
"ok"}``, an http agent's answer; ``Connection: close``). It counts connections accepted
and answered. While it runs its port is on the outbound allow-list.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Literal

from tests.support.servers import allow_loopback_port

How = Literal["reset", "close", "partial"]
ANSWER = b'{"output": "ok"}'


@dataclass
class Dropping:
    url: str
    port: int
    accepted: int = 0
    answered: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return
        body += chunk


def _serve_one(conn: socket.socket, drop: bool, how: How, state: Dropping, answer: bytes) -> None:
    with conn:
        if drop and how == "reset":
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        _read_request(conn)
        if drop and how == "partial":
            conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"out')
            return
        if drop:
            return
        head = (
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(answer)}\r\nConnection: close\r\n\r\n"
        )
        # Counted before the answer leaves: the client can read it and the test check the
        # count before this thread runs again.
        with state.lock:
            state.answered += 1
        conn.sendall(head.encode() + answer)


@contextmanager
def dropping(drop: int | None, how: How = "reset", answer: bytes = ANSWER) -> Iterator[Dropping]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = listener.getsockname()[1]
    state = Dropping(url=f"http://127.0.0.1:{port}/", port=port)
    stopping = threading.Event()

    def accept_loop() -> None:
        while not stopping.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with state.lock:
                state.accepted += 1
                drop_this = drop is None or state.accepted <= drop
            threading.Thread(
                target=_serve_one, args=(conn, drop_this, how, state, answer), daemon=True
            ).start()

    thread = threading.Thread(target=accept_loop, daemon=True)
    thread.start()
    try:
        with allow_loopback_port(port):
            yield state
    finally:
        stopping.set()
        with suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(timeout=5)
