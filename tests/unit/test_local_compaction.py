"""The snapshot policy: a snapshot is due once the journal since the last one is big enough."""

from __future__ import annotations

import pytest

from pawl.local.compaction import MB, CompactionPolicy


def test_an_empty_journal_is_never_due_even_with_no_floor() -> None:
    assert not CompactionPolicy(min_journal_bytes=0, journal_ratio=0).due(0, 0)
    assert CompactionPolicy(min_journal_bytes=0, journal_ratio=0).due(1, 10 * MB)


def test_the_floor_decides_for_a_small_snapshot() -> None:
    policy = CompactionPolicy(min_journal_bytes=4 * MB, journal_ratio=0.25)
    assert policy.threshold(1 * MB) == 4 * MB
    assert not policy.due(4 * MB - 1, 1 * MB)
    assert policy.due(4 * MB, 1 * MB)
    assert not policy.due(4 * MB - 1, 0)  # no snapshot yet: the floor alone


def test_the_ratio_decides_for_a_large_snapshot() -> None:
    policy = CompactionPolicy(min_journal_bytes=4 * MB, journal_ratio=0.25)
    assert policy.threshold(400 * MB) == 100 * MB
    assert not policy.due(100 * MB - 1, 400 * MB)
    assert policy.due(100 * MB, 400 * MB)


def test_negative_knobs_are_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        CompactionPolicy(min_journal_bytes=-1)
    with pytest.raises(ValueError, match="negative"):
        CompactionPolicy(journal_ratio=-0.1)


def _simulate(policy: CompactionPolicy, journal_mb: int, growth: float) -> tuple[int, float]:
    """Checks after every MB journaled, each MB growing the state by ``growth`` MB: how many
    snapshots, and how many MB they wrote in all."""
    state = last_snapshot = since_cut = 0.0
    taken, written = 0, 0.0
    for _ in range(journal_mb):
        since_cut += MB
        state += growth * MB
        if policy.due(int(since_cut), int(last_snapshot)):
            taken, written = taken + 1, written + state
            last_snapshot, since_cut = state, 0.0
    return taken, written / MB


@pytest.mark.parametrize("ratio", [0.1, 0.25, 1.0])
def test_snapshot_cost_follows_the_writes_not_the_state_times_time(ratio: float) -> None:
    """A snapshot follows at least ratio x (the previous one's size) of journal J, which
    grew the state by growth x J at most: each wrote <= J x (1 / ratio + growth), so all of
    them together <= the whole journal x (1 / ratio + growth), however large the state."""
    policy = CompactionPolicy(min_journal_bytes=4 * MB, journal_ratio=ratio)
    journal_mb, growth = 450, 0.84  # about a 100,000-item bench's writes
    taken, written_mb = _simulate(policy, journal_mb, growth)
    assert written_mb <= journal_mb * (1 / ratio + growth)
    # A growing state is snapshotted ever more rarely: the count grows with log(size).
    half_taken, _ = _simulate(policy, journal_mb // 2, growth=0.84)
    assert taken - half_taken < half_taken
