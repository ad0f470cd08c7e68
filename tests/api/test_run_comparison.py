"""``GET /api/v1/evals/{eval_id}/runs/{eval_run_id}/comparison`` (a pawl addition): two runs
of one eval compared item by item, on a constructed pair of runs with known flips."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pytest

from chalicelib.engine import comparison as comparison_engine
from chalicelib.stats import holm_adjust, mcnemar_exact_p
from chalicelib.store import blobs, outcome_digest, tenancy
from tests.api.test_authorization import allow, key_with
from tests.support.runs import Plugins, Suite, make_item, make_suite


def _ok(response: Any) -> Any:
    assert response.status == 200, response
    return response.json


def comparison_path(suite: Suite, run_id: str, query: str = "") -> str:
    return f"{suite.run_path(run_id)}/comparison" + (f"?{query}" if query else "")


@pytest.fixture
def pair(api: Any, project: Any, plugins: Plugins) -> tuple[Suite, dict[str, Any], dict[str, Any]]:
    """A baseline and a run against it: 2 regressions, 1 improvement, 2 unchanged, one item
    removed and one added since, one errored in both. Groups ``a`` and ``b``."""
    suite = make_suite(
        api,
        project,
        [
            ("echo:the quick brown fox", "the quick brown fox", {"kind": "a"}),  # regresses
            ("echo:x1", "nope", {"kind": "a"}),  # improves
            ("echo:same", "same", {"kind": "b"}),  # passes twice
            ("echo:y", "zz", {"kind": "b"}),  # fails twice
            ("echo:r2", "r2", {"kind": "b"}),  # regresses
            ("echo:gone", "gone", {"kind": "b"}),  # removed
            ("fail", "x", {"kind": "b"}),  # errored in both: in no list
        ],
        name="pair",
        group_by="kind",
    )
    baseline = api.post(suite.runs_path, {"wait": True}).json
    items = f"/api/v1/datasets/{suite.dataset['id']}/items"
    first, second, _, _, fifth, sixth, _ = suite.items
    api.put(f"{items}/{first['id']}", {"input": [{"role": "user", "content": "echo:the slow fox"}]})
    api.put(f"{items}/{second['id']}", {"expected_output": "x1"})
    api.put(f"{items}/{fifth['id']}", {"input": [{"role": "user", "content": "echo:other"}]})
    assert api.delete(f"{items}/{sixth['id']}").status in (200, 204)
    suite.items.append(
        make_item(api, suite.dataset["id"], "echo:new", "new", metadata={"kind": "a"})
    )
    current = api.post(suite.runs_path, {"wait": True, "baseline_run_id": baseline["id"]}).json
    assert current["status"] == "completed", current
    return suite, baseline, current


def _ids(page: dict[str, Any]) -> list[str]:
    return [item["dataset_item_id"] for item in page["data"]]


def test_the_figures_are_the_stats_on_the_flip_table(api: Any, pair: Any) -> None:
    suite, baseline, current = pair
    answer = _ok(api.get(comparison_path(suite, current["id"])))
    assert answer["baseline_run_id"] == baseline["id"] and answer["group_by"] == "kind"
    figures = answer["comparison"]
    assert figures["flipped"] == {"improved": 1, "regressed": 2}
    assert figures["compared_item_count"] == 5
    assert figures["added_item_count"] == 1 and figures["removed_item_count"] == 1
    assert figures["pass_rate_delta"] == pytest.approx((1 - 2) / 5)
    assert figures["p_value"] == mcnemar_exact_p(1, 2)
    groups = figures["grouping"]["groups"]
    assert groups["a"]["flipped"] == {"improved": 1, "regressed": 1}
    assert groups["b"]["flipped"] == {"improved": 0, "regressed": 1}
    raw = [mcnemar_exact_p(1, 1), mcnemar_exact_p(0, 1)]
    assert [groups["a"]["p_value"], groups["b"]["p_value"]] == raw
    adjusted = [groups["a"]["p_value_adjusted"], groups["b"]["p_value_adjusted"]]
    assert adjusted == holm_adjust(raw)
    # The labels did not change since the run settled: the same figures as it stored.
    assert figures == current["aggregate_scores"]["baseline"]
    assert answer["counts"] == {
        "regressed": 2,
        "improved": 1,
        "unchanged": 2,
        "added": 1,
        "removed": 1,
    }
    assert answer["groups"] == ["a", "b"] and answer["scorers"] == ["probe"]


def test_regressions_come_first_with_both_outputs(api: Any, pair: Any) -> None:
    suite, _, current = pair
    first, second, third, fourth, fifth, sixth, _, added = suite.items
    answer = _ok(api.get(comparison_path(suite, current["id"])))
    regressions = sorted([first["id"], fifth["id"]])
    assert _ids(answer["items"]) == [*regressions, second["id"]]
    assert [i["kind"] for i in answer["items"]["data"]] == ["regressed", "regressed", "improved"]
    assert answer["items"]["total"] == 3 and answer["items"]["next_cursor"] is None
    fox = next(i for i in answer["items"]["data"] if i["dataset_item_id"] == first["id"])
    assert fox["current"]["output"] == "the slow fox" and fox["current"]["outcome"] == "failed"
    assert fox["baseline"]["output"] == "the quick brown fox"
    assert fox["baseline"]["outcome"] == "passed" and fox["group"] == "a"
    assert fox["current"]["scores"]["probe"] == {"score": 0.0, "passed": False}
    assert _ids(answer["added"]) == [added["id"]] and answer["added"]["total"] == 1
    assert answer["added"]["data"][0]["baseline"] is None
    assert _ids(answer["removed"]) == [sixth["id"]]
    assert answer["removed"]["data"][0]["current"] is None
    unchanged = _ok(api.get(comparison_path(suite, current["id"], "changed=false")))
    assert _ids(unchanged["items"]) == sorted([third["id"], fourth["id"]])
    everything = _ok(api.get(comparison_path(suite, current["id"], "changed=all")))
    assert _ids(everything["items"]) == _ids(answer["items"]) + _ids(unchanged["items"])


def test_the_list_pages_on_the_server_in_order(api: Any, pair: Any) -> None:
    suite, _, current = pair
    whole = _ids(_ok(api.get(comparison_path(suite, current["id"], "changed=all")))["items"])
    seen: list[str] = []
    offsets: list[int] = []
    cursor = None
    for _ in range(10):
        query = "changed=all&limit=2" + (f"&cursor={cursor}" if cursor else "")
        page = _ok(api.get(comparison_path(suite, current["id"], query)))["items"]
        assert page["total"] == 5 and len(page["data"]) <= 2
        offsets.append(page["offset"])
        seen += _ids(page)
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == whole and offsets == [0, 2, 4]
    # A cursor belongs to its filters: on another list it is a 400, not another position.
    first = _ok(api.get(comparison_path(suite, current["id"], "changed=all&limit=2")))
    crossed = api.get(
        comparison_path(suite, current["id"], f"limit=2&cursor={first['items']['next_cursor']}")
    )
    assert crossed.status == 400 and crossed.json["error"]["meta"]["field"] == "cursor"
    forged = api.get(comparison_path(suite, current["id"], "cursor=eyJyIjowfQ.abc"))
    assert forged.status == 400


def test_group_and_scorer_filters(api: Any, pair: Any) -> None:
    suite, _, current = pair
    first, second, *_ = suite.items
    group_a = _ok(api.get(comparison_path(suite, current["id"], "group=a")))
    assert _ids(group_a["items"]) == [first["id"], second["id"]]
    assert group_a["counts"]["added"] == 1 and group_a["counts"]["removed"] == 0
    # The figures stay the whole comparison's; only the list is filtered.
    assert group_a["comparison"]["compared_item_count"] == 5
    nobody = _ok(api.get(comparison_path(suite, current["id"], "group=nobody")))
    assert nobody["items"]["data"] == [] and nobody["items"]["total"] == 0
    probe = _ok(api.get(comparison_path(suite, current["id"], "scorer=probe")))
    default = _ok(api.get(comparison_path(suite, current["id"])))
    assert probe["items"] == default["items"]
    other = _ok(api.get(comparison_path(suite, current["id"], "scorer=judge")))
    assert other["items"]["total"] == 0 and other["added"]["total"] == 0


def test_another_run_is_named_with_baseline_run_id(api: Any, pair: Any) -> None:
    suite, baseline, current = pair
    # The baseline has no baseline of its own: it must be told what to compare with.
    refused = api.get(comparison_path(suite, baseline["id"]))
    assert refused.status == 400 and refused.json["error"]["meta"]["field"] == "baseline_run_id"
    reversed_ = _ok(
        api.get(comparison_path(suite, baseline["id"], f"baseline_run_id={current['id']}"))
    )
    assert reversed_["comparison"]["flipped"] == {"improved": 2, "regressed": 1}
    assert reversed_["counts"]["added"] == 1 and reversed_["counts"]["removed"] == 1


def test_unknown_or_bad_query_fields_are_400(api: Any, pair: Any) -> None:
    suite, _, current = pair
    for query in ("nope=1", "changed=maybe", "limit=0", "limit=101", "baseline_run_id=x"):
        refused = api.get(comparison_path(suite, current["id"], query))
        assert refused.status == 400, (query, refused)


def test_a_baseline_not_of_this_eval_is_the_missing_runs_404(
    api: Any, project: Any, pair: Any
) -> None:
    suite, _, current = pair
    other = make_suite(api, project, [("echo:a", "a")], name="other")
    other_run = api.post(other.runs_path, {"wait": True}).json
    stranger = api.post("/api/v1/projects", {"name": "globex"}).json
    foreign = make_suite(api, stranger, [("echo:a", "a")], name="foreign")
    foreign_run = api.post(foreign.runs_path, {"wait": True}).json
    missing = "evrun_missing00000000"
    answers = {}
    for run_id in (missing, other_run["id"], foreign_run["id"]):
        refused = api.get(comparison_path(suite, current["id"], f"baseline_run_id={run_id}"))
        assert refused.status == 404, refused
        answers[run_id] = refused.json["error"]["message"].replace(run_id, "<id>")
    assert len(set(answers.values())) == 1


def test_a_foreign_key_gets_404(api: Any, pair: Any) -> None:
    suite, _, current = pair
    stranger = api.post("/api/v1/projects", {"name": "initech"}).json
    foreign = api.as_key(tenancy.create_api_key(stranger["id"], "foreign", []).key)
    refused = foreign.get(comparison_path(suite, current["id"]))
    assert refused.status == 404 and refused.code == "RESOURCE_NOT_FOUND"


def test_a_baseline_the_key_may_not_read_is_the_missing_runs_404(
    api: Any, project: Any, pair: Any
) -> None:
    suite, _, current = pair
    hidden = make_suite(api, project, [("echo:a", "a")], name="hidden")
    hidden_run = api.post(hidden.runs_path, {"wait": True}).json
    srn = f"srn:{project['id']}:eval:{suite.eval['id']}"
    limited = key_with(api, project["id"], allow(["evaluations:GetEval"], srn))
    assert limited.get(comparison_path(suite, current["id"])).status == 200
    missing = "evrun_missing00000000"
    denied = limited.get(
        comparison_path(suite, current["id"], f"baseline_run_id={hidden_run['id']}")
    )
    absent = limited.get(comparison_path(suite, current["id"], f"baseline_run_id={missing}"))
    assert denied.status == absent.status == 404
    message = denied.json["error"]["message"].replace(hidden_run["id"], "<id>")
    assert message == absent.json["error"]["message"].replace(missing, "<id>")
    # The hidden eval's own comparison is the hidden eval's 404.
    other_way = limited.get(
        comparison_path(hidden, hidden_run["id"], f"baseline_run_id={hidden_run['id']}")
    )
    assert other_way.status == 404
    nothing = key_with(api, project["id"], allow(["evaluations:ListEvals"], srn))
    assert nothing.get(comparison_path(suite, current["id"])).status == 404


def _metadata_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The item ids the comparison reads metadata for (``batch_get_metadata`` counted)."""
    read: list[str] = []
    real = comparison_engine.outcome_rows.batch_get_metadata

    def counted(item_ids: Iterable[str]) -> dict[str, dict[str, Any] | None]:
        wanted = list(item_ids)
        read.extend(wanted)
        return real(wanted)

    monkeypatch.setattr(comparison_engine.outcome_rows, "batch_get_metadata", counted)
    return read


def test_a_digested_pair_reads_metadata_only_for_its_removed_item(
    api: Any, pair: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite, _, current = pair
    first, sixth = suite.items[0], suite.items[5]
    # Moved to group b after both runs settled: a settle-time label keeps it in a.
    items = f"/api/v1/datasets/{suite.dataset['id']}/items"
    api.put(f"{items}/{first['id']}", {"metadata": {"kind": "b"}})
    read = _metadata_reads(monkeypatch)
    answer = _ok(api.get(comparison_path(suite, current["id"])))
    assert read == [sixth["id"]]  # the removed item only: the current run's are in its digest
    assert answer["comparison"] == current["aggregate_scores"]["baseline"]
    grouped = _ok(api.get(comparison_path(suite, current["id"], "group=a")))
    assert _ids(grouped["items"]) == [first["id"], suite.items[1]["id"]]


def test_a_digest_without_labels_falls_back_to_current_metadata(
    api: Any, pair: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite, _, current = pair
    key = outcome_digest.manifest_key(current["id"])
    manifest = json.loads(blobs.get_bytes(key) or b"{}")
    assert manifest["format"] == outcome_digest.FORMAT and manifest["group_by"] == "kind"
    blobs.put_bytes(key, json.dumps({**manifest, "format": 1}).encode(), "application/json")
    read = _metadata_reads(monkeypatch)
    answer = _ok(api.get(comparison_path(suite, current["id"])))
    # Every item of both runs (8: one removed, one added), labelled as before.
    assert len(read) == len(set(read)) == len(suite.items) == 8
    assert answer["comparison"] == current["aggregate_scores"]["baseline"]
