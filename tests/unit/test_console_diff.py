"""The compare page's word diff: pure segments that rebuild both texts exactly."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from chalicelib.console.diff import MAX_TOKENS, rebuilt, tokens, word_diff


def test_a_changed_word_is_deleted_then_inserted() -> None:
    assert word_diff("the quick brown fox", "the slow fox") == [
        ("same", "the "),
        ("del", "quick brown"),
        ("ins", "slow"),
        ("same", " fox"),
    ]


def test_equal_texts_are_one_same_segment_and_empty_sides_work() -> None:
    assert word_diff("a b", "a b") == [("same", "a b")]
    assert word_diff("", "new words") == [("ins", "new words")]
    assert word_diff("old", "") == [("del", "old")]
    assert word_diff("", "") == []


def test_markup_is_a_word_like_any_other() -> None:
    segments = word_diff("<b>x</b> ok", "<script>alert(1)</script> ok")
    assert segments == [
        ("del", "<b>x</b>"),
        ("ins", "<script>alert(1)</script>"),
        ("same", " ok"),
    ]


def test_too_long_a_side_is_not_diffed() -> None:
    long_text = " ".join(["w"] * MAX_TOKENS)
    assert len(tokens(long_text)) > MAX_TOKENS
    assert word_diff(long_text, "w") is None


@given(st.text(max_size=80), st.text(max_size=80))
def test_the_segments_rebuild_both_texts(before: str, after: str) -> None:
    segments = word_diff(before, after)
    assert segments is not None
    assert rebuilt(segments, "before") == before
    assert rebuilt(segments, "after") == after
    ops = [op for op, _ in segments]
    assert all(a != b for a, b in pairwise(ops))  # neighbours merged
    assert all(text for _, text in segments)
