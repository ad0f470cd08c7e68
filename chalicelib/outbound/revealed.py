"""Secret values opened for this thread's next outbound call, and scrubbing them from its answer.

A project secret is opened right before the call that uses it (``store.secrets.reveal``),
in the thread that then makes the call. An endpoint may echo what it was sent: an agent
that answers with its request's headers, a tool that reflects its ``Authorization``. What
it answers is stored (a generation's output, a result, a judge's reasoning) and shown to
any key that may read it, which would hand the value to a key denied the secret. So the
values opened since this thread's last call are taken by that call
(:func:`chalicelib.outbound.client.request`), and its answer's body and header values
have every copy replaced by :data:`MARK` before anyone reads them.

A copy is the value as it is, and as JSON escapes it (``"``, ``\\``, ``/``, control and
non-ASCII characters), since answers are mostly JSON. Values shorter than
:data:`MIN_LENGTH` are left alone: scrubbing a two-letter value would mangle every answer,
and no credential is that short.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable

MARK = "[secret]"
MIN_LENGTH = 6

_opened = threading.local()


def note(value: str) -> None:
    """``value`` was just opened for a call this thread is about to make."""
    if len(value) >= MIN_LENGTH:
        pending: set[str] = getattr(_opened, "values", set())
        pending.add(value)
        _opened.values = pending


def take() -> frozenset[str]:
    """The values opened since this thread's last call (and forget them)."""
    pending: set[str] = getattr(_opened, "values", set())
    _opened.values = set()
    return frozenset(pending)


def _spellings(value: str) -> set[bytes]:
    escaped = json.dumps(value)[1:-1]
    forms = {value, escaped, json.dumps(value, ensure_ascii=False)[1:-1]}
    forms |= {form.replace("/", "\\/") for form in list(forms)}
    return {form.encode("utf-8") for form in forms if form}


def scrub(data: bytes, values: Iterable[str]) -> bytes:
    """``data`` with every spelling of each value replaced by :data:`MARK`."""
    spellings = sorted({s for value in values for s in _spellings(value)}, key=len, reverse=True)
    for spelling in spellings:  # longest first: an escaped form may contain the plain one
        data = data.replace(spelling, MARK.encode())
    return data


def scrub_text(text: str, values: Iterable[str]) -> str:
    return scrub(text.encode("utf-8", errors="surrogatepass"), values).decode(
        "utf-8", errors="surrogatepass"
    )
