"""`pawl run` against an embedded runtime over HTTP: one exit code per outcome."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from chalicelib.settings import get_settings
from pawl.cli import main as cli
from pawl.demo.cases import CASES, dataset_items, eval_scorers
from pawl.demo.ci import exit_code_for
from pawl.local.runtime import LocalRuntime
from pawl.transport import PawlClient, Run
from tests.api.test_iam_examples import documented_policy
from tests.support import agents
from tests.support.console import CSRF_FIELD
from tests.support.runtime import runtime_with_project

#: Cases v1 fails and v2 passes (billing, refund, security, data_export): one of each.
CASE_INDICES = (0, 8, 32, 40)


class Setup:
    def __init__(self, runtime: LocalRuntime, key: str, agent_id: str, dataset_id: str) -> None:
        self.url = runtime.url
        self.admin_key = runtime.admin_key
        self.key = key
        self.agent_id = agent_id
        self.dataset_id = dataset_id

    def client(self) -> PawlClient:
        return PawlClient(self.url, self.key)

    def new_eval(self, name: str) -> str:
        """A fresh eval (its own run history): threshold 0.8, grouped, regression gate."""
        with self.client() as client:
            created = client.create_eval(
                {
                    "name": name,
                    "agent_id": self.agent_id,
                    "dataset_id": self.dataset_id,
                    "scorers": eval_scorers(),
                    "pass_threshold": 0.8,
                    "group_by": "kind",
                    "max_regression": 0.05,
                }
            )
        return str(created["id"])

    def args(self, *extra: str, key: str | None = None) -> list[str]:
        key = key or self.key
        return ["run", "--server", self.url, "--api-key", key, "--timeout", "120", *extra]


@contextmanager
def seeded_runtime(state_dir: Path, project_name: str) -> Iterator[Setup]:
    """A runtime with a project, the demo's agent at version 2 and a four-case dataset."""
    with runtime_with_project(state_dir, project_name) as (runtime, key):
        with PawlClient(runtime.url, key) as client:
            agent = client.create_agent(
                {
                    "name": "support",
                    "type": "python",
                    "config": {"callable": "pawl.demo.agent:answer_v1"},
                }
            )
            client.update_agent(agent["id"], {"config": {"callable": "pawl.demo.agent:answer_v2"}})
            dataset = client.create_dataset({"name": "four-cases"})
            items = dataset_items()
            for index in CASE_INDICES:
                client.add_item(dataset["id"], items[index])
        yield Setup(runtime, key, agent["id"], dataset["id"])


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    with seeded_runtime(tmp_path_factory.mktemp("pawl-run-state"), "pawl-run-tests") as seeded:
        yield seeded


def _runs(setup: Setup, eval_id: str) -> list[Run]:
    with setup.client() as client:
        return list(client.iter_runs(eval_id))


@pytest.mark.slow
def test_exit_1_when_the_run_fails_its_threshold_then_0_against_it_as_latest_baseline(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    eval_id = setup.new_eval("fail-then-pass")

    assert cli.main(setup.args("--eval", eval_id, "--agent-version", "1")) == 1
    out = capsys.readouterr().out
    (v1_run,) = _runs(setup, eval_id)
    assert v1_run.status == "completed" and v1_run.passed is False
    assert f"run {v1_run.id} queued" in out
    assert "Verdict: FAILED" in out
    assert "failed: pass rate 0.00 < threshold 0.80 (4 items scored)" in out

    code = cli.main(
        setup.args(
            "--eval", eval_id, "--baseline", "latest", "--metadata", "commit=abc=1", "ci=yes"
        )
    )
    out = capsys.readouterr().out
    assert code == 0, out
    v2_run = _runs(setup, eval_id)[0]  # newest first
    assert v2_run.agent_version == 2 and v2_run.baseline_run_id == v1_run.id
    assert v2_run.passed is True and v2_run.metadata == {"commit": "abc=1", "ci": "yes"}
    assert f"baseline {v1_run.id}" in out
    assert "Verdict: PASSED" in out
    assert "passed: pass rate 1.00 ≥ threshold 0.80 (4 items scored)" in out
    assert "4 improved (fail → pass), 0 regressed" in out
    assert f"no significant regression: pass rate +1.00 vs {v1_run.id} over 4 items" in out
    expected_kinds = {CASES[index][0] for index in CASE_INDICES}
    assert {line.split()[1] for line in out.splitlines() if line.startswith("│ ")} >= expected_kinds


@pytest.mark.slow
def test_early_stop_is_asked_for_with_a_baseline_and_dropped_without_one(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    eval_id = setup.new_eval("early-stop")
    # latest-or-none with no run yet: no baseline, so the run cannot stop early; it runs whole.
    first = setup.args("--eval", eval_id, "--baseline", "latest-or-none", "--early-stop")
    assert cli.main([*first, "--agent-version", "1"]) == 1
    (v1_run,) = _runs(setup, eval_id)
    assert v1_run.early_stop is None
    capsys.readouterr()
    assert cli.main(setup.args("--eval", eval_id, "--baseline", "latest", "--early-stop")) == 0
    v2_run = _runs(setup, eval_id)[0]
    # Four items decide nothing: the run went to the end, with the seed it would have used.
    assert v2_run.early_stop is not None and v2_run.early_stop["decision"] is None
    assert v2_run.completed_count == 4 and isinstance(v2_run.early_stop["seed"], int)
    assert v2_run.aggregate_scores is not None
    assert v2_run.aggregate_scores["early_stop"]["items_skipped"] == 0


@pytest.mark.slow
def test_exit_2_for_latest_baseline_when_no_run_completed(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    eval_id = setup.new_eval("no-runs-yet")
    assert cli.main(setup.args("--eval", eval_id, "--baseline", "latest")) == 2
    err = capsys.readouterr().err
    assert f"eval {eval_id} has no completed run to compare with" in err
    assert _runs(setup, eval_id) == []  # nothing was started


@pytest.mark.slow
def test_exit_2_when_the_api_refuses_the_request(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(setup.args("--eval", "eval_doesnotexist00000")) == 2
    err = capsys.readouterr().err
    assert "refused (404 RESOURCE_NOT_FOUND)" in err and "eval_doesnotexist00000" in err

    eval_id = setup.new_eval("refused-version")
    assert cli.main(setup.args("--eval", eval_id, "--agent-version", "9")) == 2
    err = capsys.readouterr().err
    assert "refused (400 VALIDATION_FAILED)" in err and "has no version 9" in err
    assert _runs(setup, eval_id) == []


@pytest.mark.slow
def test_server_and_key_default_to_the_environment(
    setup: Setup, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    eval_id = setup.new_eval("env-defaults")
    monkeypatch.setenv("PAWL_SERVER", setup.url)
    monkeypatch.setenv("PAWL_API_KEY", setup.key)
    assert cli.main(["run", "--eval", eval_id, "--timeout", "120"]) == 0
    assert "Verdict: PASSED" in capsys.readouterr().out

    monkeypatch.setenv("PAWL_API_KEY", "pawl.key_wrong.secret")
    assert cli.main(["run", "--eval", eval_id]) == 2
    err = capsys.readouterr().err
    assert "refused (401" in err and "check the key in PAWL_API_KEY or --api-key" in err


def test_exit_2_when_the_server_cannot_be_reached(capsys: pytest.CaptureFixture[str]) -> None:
    """The message names the URL tried and how to start a server."""
    args = ["run", "--server", "http://127.0.0.1:9", "--api-key", "k", "--eval", "eval_x"]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert "pawl run: cannot reach pawl at http://127.0.0.1:9" in err
    assert "Start it with `pawl serve` (or `make serve`)" in err and "PAWL_SERVER" in err

    # The generated commands say the same.
    assert cli.main(["list-evals", "--server", "http://127.0.0.1:9", "--api-key", "k"]) == 2
    err = capsys.readouterr().err
    assert "pawl list-evals: cannot reach pawl at http://127.0.0.1:9" in err
    assert "`pawl serve`" in err


def test_without_a_key_the_message_names_pawl_api_key(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PAWL_API_KEY", raising=False)
    assert cli.main(["run", "--server", "http://127.0.0.1:9", "--eval", "eval_x"]) == 2
    err = capsys.readouterr().err
    assert "pawl run: no API key: set PAWL_API_KEY (or pass --api-key)" in err
    assert cli.main(["list-evals", "--server", "http://127.0.0.1:9"]) == 2
    assert "pawl list-evals: no API key: set PAWL_API_KEY" in capsys.readouterr().err


@pytest.mark.slow
def test_a_timeout_says_the_run_keeps_going_and_how_to_cancel_it(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    agents.reset()
    with setup.client() as client:
        agent = client.create_agent(
            {
                "name": "blocker",
                "type": "python",
                "config": {"callable": "tests.support.agents:scripted"},
            }
        )
        dataset = client.create_dataset({"name": "blocks"})
        client.add_item(dataset["id"], {"input": [{"role": "user", "content": "block"}]})
        evaluation = client.create_eval(
            {
                "name": "blocks",
                "agent_id": agent["id"],
                "dataset_id": dataset["id"],
                "scorers": [{"type": "contains", "value": "released"}],
            }
        )
    eval_id = evaluation["id"]
    try:
        # --timeout 0: the first look at the run finds it unfinished (its agent is blocked).
        args = ["run", "--server", setup.url, "--api-key", setup.key, "--timeout", "0"]
        assert cli.main([*args, "--eval", eval_id]) == 2
        err = capsys.readouterr().err
        [run] = _runs(setup, eval_id)
        assert run.status in ("queued", "running")
        ids = f"--eval-id {eval_id} --eval-run-id {run.id}"
        # Queued when the CLI looked, maybe running by now: either is "still" unfinished.
        assert any(f"pawl run: run {run.id} still {s}" in err for s in ("queued", "running"))
        assert "The run keeps going on the server" in err
        assert f"pawl cancel-eval-run {ids}" in err and f"pawl get-eval-run {ids}" in err
        # The command it names does what it says.
        cancel = ["cancel-eval-run", *ids.split(), "--server", setup.url, "--api-key", setup.key]
        assert cli.main([*cancel, "--output", "json"]) == 0
        assert json.loads(capsys.readouterr().out)["id"] == run.id
    finally:
        agents.RELEASE.set()
    with setup.client() as client:
        assert client.wait_for_run(eval_id, run.id, timeout_s=60).status == "cancelled"


def test_metadata_must_be_key_value(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["run", "--eval", "eval_x", "--metadata", "novalue"])
    assert exited.value.code == 2
    assert "metadata must be key=value" in capsys.readouterr().err


def _run(status: str, passed: bool | None) -> Run:
    body: dict[str, Any] = {"id": "evrun_x", "eval_id": "eval_x", "agent_version": 1}
    return Run.model_validate({**body, "status": status, "passed": passed})


@pytest.mark.parametrize(
    ("status", "passed", "code"),
    [
        ("completed", True, 0),
        ("completed", None, 0),
        ("completed", False, 1),
        ("failed", None, 2),
        ("cancelled", None, 2),
    ],
)
def test_exit_code_follows_status_then_verdict(status: str, passed: bool | None, code: int) -> None:
    assert exit_code_for(_run(status, passed)) == code


@pytest.mark.slow
def test_a_ci_key_whose_policy_names_one_eval_runs_it_and_nothing_else(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/iam.md's CI example: `pawl run --baseline latest` needs no more than it grants."""
    eval_id, other_id = setup.new_eval("ci-only"), setup.new_eval("not-for-ci")
    assert cli.main(setup.args("--eval", eval_id, "--agent-version", "1")) == 1
    with setup.client() as client:
        evaluation = client.get_eval(eval_id)
    project_id = evaluation["project_id"]
    document = documented_policy("ci").replace("proj_ACME", project_id)
    document = document.replace("eval_NIGHTLY", eval_id)
    # A run reads the eval's dataset and calls its agent: the example grants both.
    document = document.replace("dset_FAQ", evaluation["dataset_id"])
    document = document.replace("agt_SUPPORT", evaluation["agent_id"])
    with PawlClient(setup.url, setup.admin_key) as admin:
        body = {"name": "ci-only", "document": json.loads(document)}
        policy = admin.send("POST", "/api/v1/policies", body=body)
        key_body = {"project_id": project_id, "name": "ci-only", "policy_ids": [policy["id"]]}
        ci_key = admin.send("POST", "/api/v1/api-keys", body=key_body)["key"]
    capsys.readouterr()
    code = cli.main(setup.args("--eval", eval_id, "--baseline", "latest", key=ci_key))
    out = capsys.readouterr().out
    assert code == 0, out
    assert "Verdict: PASSED" in out
    assert cli.main(setup.args("--eval", other_id, key=ci_key)) == 2
    assert "403 FORBIDDEN" in capsys.readouterr().err


def console_page(base_url: str, key: str, url: str) -> httpx.Response:
    """``url`` as a browser signed in with ``key`` gets it, over the runtime's HTTP front."""
    with httpx.Client(timeout=30) as http:
        form = http.get(f"{base_url}/console/")
        found = CSRF_FIELD.search(form.text)
        assert form.status_code == 200 and found, form.text[:300]
        signed_in = http.post(
            f"{base_url}/console/sign-in", data={"key": key, "csrf": found.group(1)}
        )
        assert signed_in.status_code == 303, signed_in.text[:300]
        return http.get(url)


def test_pawl_run_prints_the_runs_console_url_and_the_page_shows_that_run(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    eval_id = setup.new_eval("console-link")

    assert cli.main(setup.args("--eval", eval_id, "--agent-version", "2")) == 0
    out = capsys.readouterr().out
    (run,) = _runs(setup, eval_id)
    expected = f"{setup.url}/console/evals/{eval_id}/runs/{run.id}"
    lines = [line for line in out.splitlines() if line.startswith("console ")]
    # Once as the run starts (to watch it), once under the verdict (to open it).
    assert lines == [f"console {expected}"] * 2, out
    assert out.index(lines[0]) < out.index("Verdict: PASSED") < out.rindex(lines[1])

    page = console_page(setup.url, setup.key, expected)
    assert page.status_code == 200 and run.id in page.text


def test_the_local_runtime_publishes_its_own_url_for_console_links(setup: Setup) -> None:
    assert os.environ["PAWL_PUBLIC_URL"] == setup.url
    assert get_settings().public_url == setup.url
