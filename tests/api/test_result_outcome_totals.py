"""``?outcome=``'s ``total`` comes from the run's outcome counters, which the recording
transaction keeps equal to the rows; a run recorded before the counters is counted by a
COUNT query, as before."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.store.models import ResultModel, RunModel
from tests.support.runs import Plugins, Suite, make_suite


@pytest.fixture
def settled(api: Any, project: Any, plugins: Plugins) -> tuple[Suite, dict[str, Any]]:
    cases = [(f"echo:{i}", str(i)) for i in range(4)]  # pass
    cases += [(f"echo:{i}", "no") for i in range(3)]  # fail
    cases += [("fail", "x")] * 2  # errored
    suite = make_suite(api, project, cases)
    return suite, api.post(suite.runs_path, {"wait": True}).json


def totals(api: Any, suite: Suite, run_id: str) -> dict[str, int]:
    path = f"{suite.run_path(run_id)}/results"
    found = {}
    for outcome in ("passed", "failed", "errored"):
        response = api.get(f"{path}?outcome={outcome}&limit=1")
        assert response.status == 200, response
        found[outcome] = response.json["total"]
    return found


def rows_of(run_id: str) -> dict[str, int]:
    rows = list(ResultModel.query(run_id))
    return {
        "passed": sum(1 for r in rows if r.passed is True),
        "failed": sum(1 for r in rows if r.passed is False),
        "errored": sum(1 for r in rows if r.error is not None),
    }


def test_the_counters_match_the_rows_and_no_count_query_is_made(
    api: Any, settled: tuple[Suite, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    suite, run = settled
    row = RunModel.get(run["id"], consistent_read=True)
    assert row.outcomes_counted is True
    assert (row.passed_count, row.failed_count) == (4, 3)
    assert rows_of(run["id"]) == {"passed": 4, "failed": 3, "errored": 2}

    def no_count(*_: Any, **__: Any) -> int:
        raise AssertionError("a COUNT query over the run's rows")

    monkeypatch.setattr(ResultModel, "count", no_count)
    assert totals(api, suite, run["id"]) == {"passed": 4, "failed": 3, "errored": 2}


def test_a_run_recorded_before_the_counters_is_counted_by_a_query(
    api: Any, settled: tuple[Suite, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    suite, run = settled
    # As an older pawl left it: no flag, and counters a later record made partial.
    RunModel(id=run["id"]).update(
        actions=[RunModel.outcomes_counted.remove(), RunModel.passed_count.set(1)]
    )
    counted: list[Any] = []
    real_count = ResultModel.count

    def counting(*args: Any, **kwargs: Any) -> int:
        counted.append(args)
        return int(real_count(*args, **kwargs))

    monkeypatch.setattr(ResultModel, "count", counting)
    assert totals(api, suite, run["id"]) == {"passed": 4, "failed": 3, "errored": 2}
    assert len(counted) == 3
