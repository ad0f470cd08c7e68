"""A continuous scorer through real runs: the agent answers a number, the ``output_score``
test scorer scores it, and the run against its baseline carries, for that scorer, the mean
delta's t interval and the Wilcoxon signed-rank test, per group with Holm, equal to scipy's
on the same per-item differences."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from scipy import stats

from chalicelib import wiring
from chalicelib.stats.holm import holm_adjust
from tests.support.drain import drain_queues
from tests.support.output_score import OutputScorePlugin
from tests.support.runs import EventLog, HostWith, Plugins, ProbePlugin, Suite, make_suite

KINDS = ("lookup", "refusal", "smalltalk")


@pytest.fixture
def scored_by_output(plugins: Plugins) -> None:
    wiring.install_plugins(HostWith(EventLog(), ProbePlugin(), OutputScorePlugin()))


def _run(api: Any, app: Any, suite: Suite, **body: Any) -> dict[str, Any]:
    started = api.post(suite.runs_path, body)
    assert started.status == 201, started
    drain_queues(app)
    run: dict[str, Any] = api.get(suite.run_path(started.json["id"])).json
    assert run["status"] == "completed", run
    return run


def _answer(score: float) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"echo:{score:.2f}"}]


def test_a_judge_like_scorer_gets_its_interval_and_signed_rank_test(
    api: Any, app: Any, project: Any, scored_by_output: None
) -> None:
    rng = random.Random(26)
    before = [round(rng.uniform(0.4, 1.0), 2) for _ in range(36)]
    # lookup drops 0.2, refusal holds, smalltalk drops a little.
    drops = {"lookup": 0.2, "refusal": 0.0, "smalltalk": 0.05}
    kinds = [KINDS[i % 3] for i in range(36)]
    after = [
        round(min(1.0, max(0.0, b - drops[k] + rng.uniform(-0.08, 0.08))), 2)
        for b, k in zip(before, kinds, strict=True)
    ]
    cases = [(f"echo:{b:.2f}", None, {"kind": k}) for b, k in zip(before, kinds, strict=True)]
    suite = make_suite(
        api,
        project,
        cases,  # type: ignore[arg-type]
        name="judged",
        scorers=[{"type": "output_score"}],
        group_by="kind",
        max_regression=0.05,
    )
    baseline = _run(api, app, suite)
    for item, score in zip(suite.items, after, strict=True):
        path = f"/api/v1/datasets/{suite.dataset['id']}/items/{item['id']}"
        assert api.put(path, {"input": _answer(score)}).status == 200
    run = _run(api, app, suite, baseline_run_id=baseline["id"])

    comparison = run["aggregate_scores"]["baseline"]
    figures = comparison["scorers"]["output_score"]
    # Items come back in dataset_item_id order; pair the scores the same way.
    order = sorted(range(36), key=lambda i: suite.items[i]["id"])
    d = np.round(np.array([after[i] - before[i] for i in order]), 12)
    assert figures["continuous"] is True
    assert figures["mean_delta"] == pytest.approx(float(d.mean()), abs=1e-12)
    test = figures["wilcoxon"]
    assert test["p_value"] == pytest.approx(float(stats.wilcoxon(d).pvalue), rel=1e-9)
    assert test["method"] == "normal_approximation" and test["n"] == np.count_nonzero(d)
    interval = figures["mean_delta_interval"]
    reference = stats.ttest_1samp(d, 0.0).confidence_interval(0.95)
    assert interval["low"] == pytest.approx(float(reference.low), rel=1e-9)
    assert interval["high"] == pytest.approx(float(reference.high), rel=1e-9)
    assert interval["high"] < 0  # a clear drop overall

    groups = comparison["grouping"]["groups"]
    tests = [groups[kind]["scorers"]["output_score"]["wilcoxon"] for kind in sorted(groups)]
    assert [t["p_value_adjusted"] for t in tests] == holm_adjust([t["p_value"] for t in tests])
    for kind in KINDS:
        rows = [i for i in order if kinds[i] == kind]
        group_d = np.round(np.array([after[i] - before[i] for i in rows]), 12)
        got = groups[kind]["scorers"]["output_score"]["wilcoxon"]["p_value"]
        assert got == pytest.approx(float(stats.wilcoxon(group_d).pvalue), rel=1e-9)
    assert groups["lookup"]["scorers"]["output_score"]["wilcoxon"]["p_value_adjusted"] < 0.01
    assert groups["refusal"]["scorers"]["output_score"]["wilcoxon"]["p_value_adjusted"] > 0.05

    # The comparison route reads the same figures.
    answer = api.get(f"{suite.run_path(run['id'])}/comparison").json
    assert answer["comparison"]["scorers"]["output_score"]["wilcoxon"] == test
