"""A run create that botocore retried after the first attempt landed is not a failure.

The retry meets its own row and fails ``does_not_exist``; the run's ``created_key`` (a
stamp taken per attempt) tells that apart from another writer's run of the same id. Either
way the eval's run counter was added once, by the write that landed.
"""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.store import evals, runs
from chalicelib.store.transactions import TxnRefused
from tests.support.triggers import TriggerSuite


def _started(api: Any, suite: TriggerSuite) -> runs.RunState:
    response = api.post(suite.runs_path, {})
    assert response.status == 201, response
    state = runs.find_run(response.json["id"])
    assert state is not None
    return state


def test_our_own_landed_create_reads_as_done(api: Any, suite: TriggerSuite) -> None:
    state = _started(api, suite)
    runs.create_run(state)  # what a retried write meets: the row it wrote itself
    assert runs.get_run(state.id).created_key == state.created_key
    assert evals.get_eval_and_run_count(state.run.eval_id)[1] == 1


def test_another_writers_run_of_the_same_id_is_still_refused(api: Any, suite: TriggerSuite) -> None:
    state = _started(api, suite)
    other = state.model_copy(update={"created_key": f"2099-01-01T00:00:00.000000Z#{state.id}"})
    with pytest.raises(TxnRefused):
        runs.create_run(other)
    assert runs.get_run(state.id).created_key == state.created_key
    assert evals.get_eval_and_run_count(state.run.eval_id)[1] == 1
