"""Ids: a known prefix, 16 characters of the alphabet, every character equally likely."""

from __future__ import annotations

import string
from collections import Counter

import pytest

from chalicelib import ids

ALPHABET = set(string.ascii_letters + string.digits)


@pytest.mark.parametrize("kind", sorted(ids.PREFIXES))
def test_every_kind_has_its_prefix_and_sixteen_characters(kind: str) -> None:
    prefix, token = ids.new_id(kind).rsplit("_", 1)
    assert prefix == ids.PREFIXES[kind]
    assert len(token) == 16 and set(token) <= ALPHABET


def test_tokens_of_any_length_use_only_the_alphabet() -> None:
    for length in (1, 16, 32, 100):
        token = ids.random_token(length)
        assert len(token) == length and set(token) <= ALPHABET


def test_characters_are_equally_likely() -> None:
    # 62,000 characters: each of the 62 is expected 1,000 times (sd ~31); a byte-modulo
    # bias would put the first 8 characters ~25% above the rest.
    counts = Counter("".join(ids.random_token(100) for _ in range(620)))
    assert set(counts) == ALPHABET
    assert all(800 < n < 1200 for n in counts.values()), counts.most_common(3)
