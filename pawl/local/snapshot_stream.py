"""Read ``snapshot.json`` a chunk of items at a time (a restart's memory).

``json.loads`` of the whole file built every item of every table as Python objects before
the first went into moto: at 100,000 items the 376 MB file became about 2 GB of dicts and
strings on top of the state being rebuilt, and the freed document left the stand-in's heap
fragmented at 2.6 GB after the restore. Here the file's text is walked with the standard
decoder's ``raw_decode``: every top-level value except ``tables`` is decoded whole (they
are small), and each table's items are handed over :data:`CHUNK_ITEMS` at a time, so what
exists at once is the text and one chunk. Any key order and any whitespace are read (the
streamed writer and the older whole-document writer order the keys differently); a
document of another ``format`` is refused before any item is handed over.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

#: Items handed over at a time.
CHUNK_ITEMS = 1000

_SPACE = re.compile(r"[ \t\n\r]*")

OnItems = Callable[[str, list[dict[str, Any]]], None]


class _Text:
    """A position in a JSON text, moved by whole values and single punctuation marks."""

    def __init__(self, text: str) -> None:
        self.text, self.at = text, 0
        self._decoder = json.JSONDecoder()

    def _skip_space(self) -> None:
        self.at = _SPACE.match(self.text, self.at).end()  # type: ignore[union-attr]

    def next_mark(self) -> str:
        """The next character that is not whitespace (consumed)."""
        self._skip_space()
        if self.at >= len(self.text):
            raise ValueError("the snapshot ends early")
        mark = self.text[self.at]
        self.at += 1
        return mark

    def expect(self, mark: str) -> None:
        found = self.next_mark()
        if found != mark:
            raise ValueError(f"expected {mark!r} at {self.at - 1}, found {found!r}")

    def peek_closes(self, mark: str) -> bool:
        """Whether the next mark is ``mark`` (consumed if so)."""
        self._skip_space()
        if self.text.startswith(mark, self.at):
            self.at += 1
            return True
        return False

    def value(self) -> Any:
        self._skip_space()
        value, self.at = self._decoder.raw_decode(self.text, self.at)
        return value

    def more(self, closing: str) -> bool:
        """After a member: True on ``,``, False on ``closing``."""
        mark = self.next_mark()
        if mark not in (",", closing):
            raise ValueError(f"expected ',' or {closing!r} at {self.at - 1}, found {mark!r}")
        return mark == ","


def read(text: str, on_items: OnItems, format_version: int) -> dict[str, Any]:
    """Walk the snapshot ``text``: each table's items go to ``on_items(table, chunk)``;
    returns every other top-level member (``format``, ``bucket``, ``objects``, ...)."""
    document = _Text(text)
    rest: dict[str, Any] = {}
    document.expect("{")
    if document.peek_closes("}"):
        return rest
    while True:
        key = document.value()
        document.expect(":")
        if key == "tables":
            _tables(document, on_items)
        else:
            rest[key] = document.value()
            if key == "format" and rest[key] != format_version:
                raise ValueError(f"unknown snapshot format {rest[key]!r}")
        if not document.more("}"):
            return rest


def _tables(document: _Text, on_items: OnItems) -> None:
    document.expect("{")
    if document.peek_closes("}"):
        return
    while True:
        name = document.value()
        document.expect(":")
        document.expect("[")
        chunk: list[dict[str, Any]] = []
        if not document.peek_closes("]"):
            while True:
                chunk.append(document.value())
                if len(chunk) == CHUNK_ITEMS:
                    on_items(name, chunk)
                    chunk = []
                if not document.more("]"):
                    break
        on_items(name, chunk)
        if not document.more("}"):
            return
