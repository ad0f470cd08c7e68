"""A word-level diff of two outputs, as segments a template renders as escaped text.

Pure: :func:`word_diff` splits both texts into words and the whitespace between them
(so the text is rebuilt exactly) and runs :class:`difflib.SequenceMatcher` over the
tokens. It returns ``(op, text)`` segments, ``op`` one of ``same``, ``del`` (only in the
baseline), ``ins`` (only in this run); the template puts each in a ``<span>``, ``<del>``
or ``<ins>`` as a template variable, so tenant text is escaped like any other.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

#: A word, or the whitespace run after it: joined back, the tokens are the text.
_TOKEN = re.compile(r"\s+|[^\s]+")
#: Beyond this many tokens a side, the diff is not worked out (quadratic worst case).
MAX_TOKENS = 4000

Segment = tuple[str, str]


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _merged(segments: list[Segment]) -> list[Segment]:
    """Neighbouring segments of the same op as one."""
    merged: list[Segment] = []
    for op, text in segments:
        if not text:
            continue
        if merged and merged[-1][0] == op:
            merged[-1] = (op, merged[-1][1] + text)
        else:
            merged.append((op, text))
    return merged


def word_diff(before: str, after: str) -> list[Segment] | None:
    """``before`` (the baseline's output) to ``after`` (this run's) word by word.

    None when either side has more than :data:`MAX_TOKENS` tokens.
    """
    old, new = tokens(before), tokens(after)
    if len(old) > MAX_TOKENS or len(new) > MAX_TOKENS:
        return None
    matcher = SequenceMatcher(a=old, b=new, autojunk=False)
    segments: list[Segment] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            segments.append(("same", "".join(old[i1:i2])))
            continue
        segments.append(("del", "".join(old[i1:i2])))
        segments.append(("ins", "".join(new[j1:j2])))
    return _merged(segments)


def rebuilt(segments: list[Segment], side: str) -> str:
    """One side's text back from the segments (``before`` or ``after``)."""
    dropped = "ins" if side == "before" else "del"
    return "".join(text for op, text in segments if op != dropped)
