"""``pawl.evaluate`` and the pytest plugin against an embedded runtime, with real http agents.

The agents are ``examples/support_agent.py`` (its good and its regressed version) served on
127.0.0.1; pawl calls them over HTTP as it calls any agent.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pawl.evaluation import Verdict, evaluate
from pawl.evaluation_apply import EvaluationError
from pawl.local.runtime import LocalRuntime
from pawl.transport import ApiError, PawlClient
from tests.support.runtime import runtime_with_project
from tests.support.servers import Reply, Request, Server, serve

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
MENTIONS = {
    "type": "json_logic",
    "expression": {"in": [{"var": "item.metadata.must_mention"}, {"var": "output"}]},
}


def _example_agent() -> ModuleType:
    spec = importlib.util.spec_from_file_location("support_agent", EXAMPLES / "support_agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Setup:
    def __init__(self, runtime: LocalRuntime, key: str, good: Server, regressed: Server) -> None:
        self.url, self.key, self.admin_key = runtime.url, key, runtime.admin_key
        self.good, self.regressed = good, regressed

    def evaluate(self, name: str, **arguments: Any) -> Verdict:
        given: dict[str, Any] = {
            "dataset": EXAMPLES / "support_faq.jsonl",
            "agent": self.good.url,
            "scorers": [MENTIONS],
            "threshold": 0.8,
            "max_regression": 0.1,
            "server": self.url,
            "api_key": self.key,
            "timeout_s": 120,
            **arguments,
        }
        return evaluate(name, **given)

    def count(self, path: str) -> int:
        with PawlClient(self.url, self.key) as client:
            return len(client.send("GET", path, params={"limit": 100})["data"])


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    agent = _example_agent()

    def good(request: Request) -> Reply:
        return Reply(body=agent.reply(request.json()))

    def regressed(request: Request) -> Reply:
        return Reply(body=agent.reply(request.json(), regressed=True))

    with (
        runtime_with_project(tmp_path_factory.mktemp("evaluate"), "evaluate-tests") as (rt, key),
        serve(good) as good_server,
        serve(regressed) as regressed_server,
    ):
        yield Setup(rt, key, good_server, regressed_server)


@pytest.mark.slow
def test_a_second_call_changes_nothing_and_a_regression_names_its_flipped_items(
    setup: Setup,
) -> None:
    first = setup.evaluate("faq-flow")
    assert first.passed, first.explain()
    assert first.applied.formation == "created" and first.applied.items_added == 10
    assert first.figures.pass_rate == 1.0 and first.figures.scored == 10
    assert first.baseline_run_id is None
    assert any("no baseline yet" in reason for reason in first.reasons)
    assert first.console_url == f"{setup.url}/console/evals/{first.eval_id}/runs/{first.run_id}"
    resources = [setup.count(f"/api/v1/{kind}") for kind in ("agents", "datasets", "evals")]

    again = setup.evaluate("faq-flow")
    assert again.passed and again.eval_id == first.eval_id
    assert not again.applied.changed_anything, again.applied
    assert again.baseline_run_id == first.run_id and again.figures.compared == 10
    assert [setup.count(f"/api/v1/{kind}") for kind in ("agents", "datasets", "evals")] == resources

    worse = setup.evaluate("faq-flow", agent=setup.regressed.url)
    assert not worse.passed
    assert worse.applied.formation == "updated" and worse.applied.changed_resources == ("Agent",)
    assert worse.baseline_run_id == again.run_id
    assert (worse.figures.pass_rate, worse.figures.regressed, worse.figures.improved) == (0.4, 6, 0)
    assert {item.direction for item in worse.flipped} == {"regressed"}
    assert len(worse.flipped) == 6 and first.failing == ()
    assert {item.dataset_item_id for item in worse.failing} == {
        item.dataset_item_id for item in worse.flipped
    }
    text = worse.explain()
    assert "failed: pass rate 0.40 < threshold 0.80 (10 items scored)" in text
    assert f"significant regression: pass rate -0.60 vs {again.run_id} over 10 items" in text
    assert "'How long does a refund take to arrive?'" in text and "Please check your" in text
    assert "failing items" not in text  # each failing item is listed once, as flipped
    with pytest.raises(AssertionError, match="flipped items \\(6, regressions first\\)"):
        worse.assert_passed()


@pytest.mark.slow
def test_a_changed_dataset_keeps_the_items_it_still_holds(setup: Setup) -> None:
    items = [json.loads(line) for line in (EXAMPLES / "support_faq.jsonl").read_text().splitlines()]
    first = setup.evaluate("faq-items", dataset=items[:6])
    assert first.applied.items_added == 6 and first.figures.items == 6

    # The first item dropped, the sixth's metadata changed (a new item in its place).
    changed = [*items[1:5], {**items[5], "metadata": {**items[5]["metadata"], "kind": "2fa"}}]
    second = setup.evaluate("faq-items", dataset=changed, baseline=first.run_id)
    assert (second.applied.items_added, second.applied.items_removed) == (1, 2)
    assert second.applied.formation == "unchanged"
    # The four items both runs hold pair up by id.
    assert second.figures.compared == 4 and second.baseline_run_id == first.run_id
    with PawlClient(setup.url, setup.key) as client:
        held = client.send("GET", f"/api/v1/datasets/{_dataset_of(client, second)}/items")
    assert sorted(i["input"][0]["content"] for i in held["data"]) == sorted(
        i["input"] for i in changed
    )


def _dataset_of(client: PawlClient, verdict: Verdict) -> str:
    return str(client.get_eval(verdict.eval_id)["dataset_id"])


@pytest.mark.slow
def test_refusals_name_what_was_wrong_and_write_nothing(setup: Setup) -> None:
    with pytest.raises(EvaluationError, match=r"item 2: .*role"):
        setup.evaluate("faq-bad", dataset=[{"input": "ok"}, {"input": [{"role": "robot"}]}])
    with PawlClient(setup.url, setup.key) as client:
        found = client.find_formation("faq-bad")
        assert found is not None  # the formation deployed; the refused import added nothing
        dataset_id = found["outputs"]["dataset_id"]
        assert client.send("GET", f"/api/v1/datasets/{dataset_id}/items")["data"] == []
        client.create_formation(
            {"name": "from-apply", "template": {"resources": {"D": {"type": "dataset",
             "properties": {"name": "d"}}}}}
        )  # fmt: skip
    with pytest.raises(EvaluationError, match=r"was not made by pawl\.evaluate"):
        setup.evaluate("from-apply")


def _pytest(setup: Setup, agent_url: str) -> subprocess.CompletedProcess[str]:
    """``pytest examples/test_support_agent.py`` as a user runs it, in its own process."""
    installed = any(ep.name == "pawl" for ep in metadata.entry_points(group="pytest11"))
    load = [] if installed else ["-p", "pawl.pytest_plugin"]  # before pip reinstalls pawl
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SUPPORT_AGENT_URL": agent_url,
        "PAWL_SERVER": setup.url,
    }
    env.pop("PAWL_API_KEY", None)
    command = [sys.executable, "-m", "pytest", *load, "examples/test_support_agent.py"]
    return subprocess.run(
        [*command, "--pawl-api-key", setup.key, "-p", "no:randomly", "-p", "no:xdist"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


@pytest.mark.slow
def test_pytest_on_the_example_passes_then_fails_with_the_reasons_and_flipped_items(
    setup: Setup,
) -> None:
    good = _pytest(setup, setup.good.url)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "1 passed" in good.stdout

    regressed = _pytest(setup, setup.regressed.url)
    out = regressed.stdout
    assert regressed.returncode == 1, out + regressed.stderr
    assert "1 failed" in out and "AssertionError: pawl eval support-faq (eval_" in out
    assert "failed: pass rate 0.40 < threshold 0.80 (10 items scored)" in out
    assert "significant regression: pass rate -0.60" in out
    assert "flipped items (6, regressions first):" in out
    assert "regressed (pass → fail)" in out and "'Where do I download my invoices?'" in out
    assert "<Verdict failed: run evrun_" in out  # the short repr, not every field


@pytest.mark.slow
def test_a_run_still_going_when_the_wait_ends_is_no_pass_and_says_it_goes_on(
    setup: Setup,
) -> None:
    release = threading.Event()

    def blocked(request: Request) -> Reply:
        release.wait(60)
        return Reply(body={"output": "released"})

    with serve(blocked) as agent:
        try:
            verdict = setup.evaluate("faq-wait", dataset=[{"input": "q"}], agent=agent.url,
                                     timeout_s=0)  # fmt: skip
        finally:
            release.set()
    assert not verdict.passed and verdict.status in ("queued", "running")
    assert any("the run keeps going on the server" in reason for reason in verdict.reasons)
    with PawlClient(setup.url, setup.key) as client:
        done = client.wait_for_run(verdict.eval_id, verdict.run_id, timeout_s=60)
    assert done.status == "completed"


@pytest.mark.slow
def test_the_admin_key_names_the_project_and_finds_what_the_project_key_made(
    setup: Setup,
) -> None:
    one = [{"input": "How do I export all my data?", "metadata": {"must_mention": "Export"}}]
    made = setup.evaluate("faq-admin", dataset=one)
    with PawlClient(setup.url, setup.key) as client:
        project_id = client.get_eval(made.eval_id)["project_id"]
    with pytest.raises(ApiError) as refused:  # the admin key acts in no project by itself
        setup.evaluate("faq-admin", dataset=one, api_key=setup.admin_key)
    assert refused.value.status == 400 and "project_id" in refused.value.message
    again = setup.evaluate("faq-admin", dataset=one, api_key=setup.admin_key, project_id=project_id)
    assert again.passed and again.eval_id == made.eval_id
    assert not again.applied.changed_anything and again.baseline_run_id == made.run_id
