"""list-eval-results refined (pawl additions): ``outcome=flaky``, ``group``, ``scorer`` with
``min_score``/``max_score``, ``text`` and ``sort``; validated, paged with signed cursors
bound to the whole refinement."""

from __future__ import annotations

from typing import Any

from tests.support.runs import Plugins, Suite, make_suite


def _ok(api: Any, url: str) -> Any:
    response = api.get(url)
    assert response.status == 200, response
    return response.json


def _walk(api: Any, url: str, limit: int = 2) -> list[dict[str, Any]]:
    """Every result of a refined listing, following next_cursor."""
    page = _ok(api, f"{url}&limit={limit}")
    seen, cursor = list(page["data"]), page["next_cursor"]
    while cursor:
        page = _ok(api, f"{url}&limit={limit}&cursor={cursor}")
        seen += page["data"]
        cursor = page["next_cursor"]
    return seen


def _run(api: Any, suite: Suite) -> str:
    run = api.post(suite.runs_path, {"wait": True}).json
    return f"{suite.run_path(run['id'])}/results"


def _grouped_suite(api: Any, project: Any) -> Suite:
    cases: list[Any] = [
        ("echo:Alpha one", "Alpha one", {"lang": "en"}),
        ("echo:beta", "no", {"lang": "en"}),
        ("echo:GAMMA alpha", "GAMMA alpha", {"lang": "fr"}),
        ("echo:delta", "delta", {"lang": "<b>fr</b>"}),
        ("fail", "x", {"lang": "fr"}),
    ]
    return make_suite(api, project, cases, group_by="lang")


def test_flaky_lists_every_trial_of_the_items_whose_trials_disagree(
    api: Any, project: Any, plugins: Plugins
) -> None:
    cases = [("flip:a", "a"), ("echo:b", "b"), ("flip:c", "c"), ("echo:d", "no")]
    suite = make_suite(api, project, cases, trials=2)
    path = _run(api, suite)
    flaky = _walk(api, f"{path}?outcome=flaky", limit=1)
    flaky_ids = {suite.items[0]["id"], suite.items[2]["id"]}
    assert {r["dataset_item_id"] for r in flaky} == flaky_ids
    assert sorted((r["dataset_item_id"], r["trial"]) for r in flaky) == sorted(
        (item, trial) for item in flaky_ids for trial in (1, 2)
    )
    first = _ok(api, f"{path}?outcome=flaky&limit=1")
    assert first["total"] == 4
    run = api.get(path.removesuffix("/results")).json
    assert run["aggregate_scores"]["flaky_item_count"] == 2


def test_group_text_scorer_and_range_filter_and_combine(
    api: Any, project: Any, plugins: Plugins
) -> None:
    suite = _grouped_suite(api, project)
    path = _run(api, suite)
    outputs = lambda rows: sorted(r["output"] or "" for r in rows)  # noqa: E731
    assert outputs(_walk(api, f"{path}?group=en")) == ["Alpha one", "beta"]
    assert outputs(_walk(api, f"{path}?group=fr")) == ["", "GAMMA alpha"]
    assert outputs(_walk(api, f"{path}?group=%3Cb%3Efr%3C%2Fb%3E")) == ["delta"]
    assert outputs(_walk(api, f"{path}?text=ALPHA")) == ["Alpha one", "GAMMA alpha"]
    assert outputs(_walk(api, f"{path}?scorer=probe&max_score=0.5")) == ["beta"]
    assert outputs(_walk(api, f"{path}?scorer=probe&min_score=1")) == [
        "Alpha one",
        "GAMMA alpha",
        "delta",
    ]
    assert outputs(_walk(api, f"{path}?scorer=probe")) == sorted(
        ["Alpha one", "beta", "GAMMA alpha", "delta"]
    )
    assert outputs(_walk(api, f"{path}?group=fr&outcome=errored")) == [""]
    assert outputs(_walk(api, f"{path}?group=en&text=alpha&outcome=passed")) == ["Alpha one"]
    assert _ok(api, f"{path}?group=fr&limit=1")["total"] == 2


def test_sort_by_a_scorers_score_both_ways_only_its_scored_results(
    api: Any, project: Any, plugins: Plugins
) -> None:
    suite = _grouped_suite(api, project)
    path = _run(api, suite)
    ascending = _walk(api, f"{path}?scorer=probe&sort=score_asc", limit=2)
    scores = [
        next((s["score"] for s in r["scores"] if s["scorer"] == "probe"), None) for r in ascending
    ]
    assert scores == [0.0, 1.0, 1.0, 1.0]
    descending = _walk(api, f"{path}?scorer=probe&sort=score_desc", limit=3)
    assert [r["output"] for r in descending][-1] == "beta"
    assert len(descending) == 4
    # Unsorted with a scorer keeps item order, as the plain list does.
    plain = [r["id"] for r in _walk(api, f"{path}?outcome=passed", limit=100)]
    assert [r["id"] for r in _walk(api, f"{path}?scorer=probe&min_score=1")] == plain


def test_refinements_are_validated(api: Any, project: Any, plugins: Plugins) -> None:
    suite = make_suite(api, project, [("echo:a", "a")])
    path = _run(api, suite)
    for query, field in [
        ("sort=score_asc", "sort"),
        ("min_score=0.5", "min_score"),
        ("max_score=0.5", "max_score"),
        ("scorer=probe&min_score=0.9&max_score=0.1", "min_score"),
        ("group=en", "group"),  # the eval has no group_by
    ]:
        refused = api.get(f"{path}?{query}")
        assert refused.status == 400 and refused.code == "VALIDATION_FAILED", query
        assert refused.json["error"]["meta"]["field"] == field, refused
    range_refusal = api.get(f"{path}?scorer=probe&min_score=0.9&max_score=0.1")
    assert "above max_score" in range_refusal.json["error"]["message"]
    for bad in [
        "sort=score",
        "scorer=probe&min_score=nan",
        "scorer=probe&max_score=inf",
        "text=",
        "colour=red",
        "outcome=bogus",
        f"text={'x' * 201}",
    ]:
        assert api.get(f"{path}?{bad}").status == 400, bad


def test_a_refined_cursor_is_bound_to_its_refinement_and_signed(
    api: Any, project: Any, plugins: Plugins
) -> None:
    suite = _grouped_suite(api, project)
    path = _run(api, suite)
    cursor = _ok(api, f"{path}?text=a&limit=1")["next_cursor"]
    assert cursor
    assert _ok(api, f"{path}?text=a&limit=1&cursor={cursor}")["data"]
    assert api.get(f"{path}?text=b&limit=1&cursor={cursor}").status == 400
    assert api.get(f"{path}?limit=1&cursor={cursor}").status == 400
    assert api.get(f"{path}?text=a&sort=score_asc&scorer=probe&cursor={cursor}").status == 400
    payload, _, mac = cursor.rpartition(".")
    forged = f"{payload}.{'0' * len(mac)}"
    assert api.get(f"{path}?text=a&limit=1&cursor={forged}").status == 400
    plain_cursor = _ok(api, f"{path}?limit=1")["next_cursor"]
    assert api.get(f"{path}?text=a&limit=1&cursor={plain_cursor}").status == 400


def test_a_foreign_key_cannot_refine_another_projects_results(
    api: Any, project: Any, plugins: Plugins
) -> None:
    suite = _grouped_suite(api, project)
    path = _run(api, suite)
    stranger = api.post("/api/v1/projects", {"name": "stranger"}).json
    key = api.post("/api/v1/api-keys", {"project_id": stranger["id"], "name": "k"}).json["key"]
    answer = api.as_key(key).get(f"{path}?outcome=flaky&text=a&group=en")
    assert answer.status == 404 and answer.code == "RESOURCE_NOT_FOUND"
