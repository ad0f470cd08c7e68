"""Partial aggregates: accumulators that can be split over a stream and merged back.

A settle too large for one pass is cut into item ranges; each range is accumulated on
its own, its accumulators' ``state()`` stored (plain JSON), and the combining step
rebuilds them with ``from_state`` and folds them together with ``merge``. Every settle
accumulator follows :class:`Partial`, so the combining step needs to know nothing about
any of them, and merging the partials of any split must equal one pass over the whole.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

P = TypeVar("P", bound="Partial")


class Partial(Protocol):
    """What a settle accumulator offers besides its own ``add`` and ``result``."""

    def merge(self: P, other: P) -> None:
        """Fold in ``other``, fed a disjoint share of the same stream (left unchanged)."""

    def state(self) -> Any:
        """Everything the accumulator holds, as JSON values (dicts, lists, str, int, float)."""

    @classmethod
    def from_state(cls: type[P], state: Any) -> P:
        """The accumulator :meth:`state` describes."""


def merge_keyed(mine: dict[str, P], theirs: dict[str, P]) -> None:
    """Merge ``theirs`` into ``mine`` key by key; a key only ``theirs`` has is copied (its
    object is not shared, so ``theirs`` stays as it was)."""
    for key, other in theirs.items():
        own = mine.get(key)
        if own is None:
            mine[key] = type(other).from_state(other.state())
        else:
            own.merge(other)


def keyed_state(values: dict[str, P]) -> dict[str, Any]:
    return {key: values[key].state() for key in sorted(values)}


def keyed_from_state(kind: type[P], state: dict[str, Any]) -> dict[str, P]:
    return {key: kind.from_state(value) for key, value in state.items()}
