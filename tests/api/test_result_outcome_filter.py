"""``?outcome=`` on list-eval-results (a pawl addition to SOAT's list): only the passed,
failed or errored results, paged on the server, with a cursor bound to the filter."""

from __future__ import annotations

from typing import Any

from tests.support.runs import Plugins, make_suite


def _results(api: Any, path: str) -> Any:
    response = api.get(path)
    assert response.status == 200, response
    return response.json


def test_each_outcome_lists_only_its_results_and_pages(
    api: Any, project: Any, plugins: Plugins
) -> None:
    cases = [(f"echo:{i}", str(i)) for i in range(5)]  # pass
    cases += [(f"echo:{i}", "no") for i in range(3)]  # fail
    cases += [("fail", "x")] * 2  # errored
    suite = make_suite(api, project, cases)
    run = api.post(suite.runs_path, {"wait": True}).json
    path = f"{suite.run_path(run['id'])}/results"
    everything = _results(api, f"{path}?limit=100")["data"]
    assert len(everything) == 10
    expected = {
        "passed": [r["id"] for r in everything if r["passed"] is True],
        "failed": [r["id"] for r in everything if r["passed"] is False],
        "errored": [r["id"] for r in everything if r["error"] is not None],
    }
    assert [len(v) for v in expected.values()] == [5, 3, 2]
    for outcome, ids in expected.items():
        first = _results(api, f"{path}?outcome={outcome}&limit=2")
        assert first["total"] == len(ids)
        seen, cursor = [r["id"] for r in first["data"]], first["next_cursor"]
        while cursor:
            following = _results(api, f"{path}?outcome={outcome}&limit=2&cursor={cursor}")
            seen += [r["id"] for r in following["data"]]
            cursor = following["next_cursor"]
        assert seen == ids, outcome


def test_a_cursor_is_bound_to_its_outcome_and_an_unknown_outcome_is_400(
    api: Any, project: Any, plugins: Plugins
) -> None:
    suite = make_suite(api, project, [(f"echo:{i}", str(i)) for i in range(3)])
    run = api.post(suite.runs_path, {"wait": True}).json
    path = f"{suite.run_path(run['id'])}/results"
    cursor = _results(api, f"{path}?outcome=passed&limit=1")["next_cursor"]
    assert api.get(f"{path}?outcome=failed&limit=1&cursor={cursor}").status == 400
    assert api.get(f"{path}?limit=1&cursor={cursor}").status == 400
    unknown = api.get(f"{path}?outcome=bogus")
    assert unknown.status == 400 and unknown.code == "VALIDATION_FAILED"


def test_dataset_item_id_lists_that_items_trials_only(
    api: Any, project: Any, plugins: Plugins
) -> None:
    cases = [("echo:a", "a"), ("echo:b", "b"), ("echo:c", "c")]
    suite = make_suite(api, project, cases, trials=2)
    run = api.post(suite.runs_path, {"wait": True}).json
    path = f"{suite.run_path(run['id'])}/results"
    item = suite.items[1]
    found = _results(api, f"{path}?dataset_item_id={item['id']}")
    assert [(r["dataset_item_id"], r["trial"]) for r in found["data"]] == [
        (item["id"], 1),
        (item["id"], 2),
    ]
    assert found["total"] == 2
    assert _results(api, f"{path}?dataset_item_id=dsit_0000000000000000")["data"] == []
    assert api.get(f"{path}?dataset_item_id=not-an-id").status == 400
