"""`pawl run`'s CI reports against an embedded runtime over HTTP: `--baseline latest-or-none`,
the items by name, `--junit` (read by junitparser), `--markdown`, the GitHub job summary,
and the composite action's script with a fake GitHub environment."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import junitparser
import pytest

from pawl.cli import main as cli
from pawl.transport import Run
from tests.e2e.test_pawl_run import Setup, seeded_runtime
from tests.unit.test_ci_reports import PARSER, _parse_github_output, _tables

ROOT = Path(__file__).resolve().parents[2]
ACTION_SCRIPT = ROOT / "scripts" / "github_action.sh"


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    state_dir = tmp_path_factory.mktemp("pawl-run-reports-state")
    with seeded_runtime(state_dir, "pawl-run-reports") as seeded:
        yield seeded


def _newest_run(setup: Setup, eval_id: str) -> tuple[Run, list[str]]:
    """The eval's newest run and its items' ids."""
    with setup.client() as client:
        run = next(client.iter_runs(eval_id))
        items = [row["dataset_item_id"] for row in client.iter_results(eval_id, run.id)]
    return run, items


def _junit_cases(path: Path) -> tuple[dict[str, str], dict[str, junitparser.TestCase]]:
    """The suite's properties and its cases by item id, as junitparser reads the file."""
    (suite,) = list(junitparser.JUnitXml.fromfile(str(path)))
    properties = {p.name: p.value for p in suite.properties()}
    return properties, {case.name.split()[0]: case for case in suite}


def _flip(case: junitparser.TestCase) -> str | None:
    found = [p.get("value") for p in case._elem.iter("property") if p.get("name") == "pawl.flip"]
    return found[0] if found else None


@pytest.mark.slow
def test_latest_or_none_gates_a_first_run_on_its_threshold_then_compares(
    setup: Setup,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    eval_id = setup.new_eval("latest-or-none")
    summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    junit, markdown = tmp_path / "out" / "first.xml", tmp_path / "out" / "first.md"
    reports = ["--junit", str(junit), "--markdown", str(markdown)]
    first = ["--eval", eval_id, "--baseline", "latest-or-none", "--agent-version", "1"]

    assert cli.main(setup.args(*first, *reports)) == 1
    out = capsys.readouterr().out
    v1, items = _newest_run(setup, eval_id)
    assert v1.baseline_run_id is None and len(items) == 4
    assert f"eval {eval_id} has no completed run to compare with yet" in out
    assert "gated on its threshold alone" in out
    assert "Failed items (4):" in out and all(f"✗ {item} " in out for item in items)
    properties, cases = _junit_cases(junit)
    assert properties["pawl.run_id"] == v1.id and properties["pawl.verdict"] == "FAILED"
    assert "no completed run to compare with yet" in properties["pawl.baseline_note"]
    assert set(cases) == set(items) and all(case.is_failure for case in cases.values())
    assert all("score 0.00" in case.result[0].message for case in cases.values())
    text = markdown.read_text(encoding="utf-8")
    assert text.startswith("## ❌ pawl: latest-or-none failed")
    assert "gated on its threshold alone" in text and "Flipped items" not in text
    assert summary.read_text(encoding="utf-8") == text

    second = ["--eval", eval_id, "--baseline", "latest-or-none"]
    junit2, markdown2 = tmp_path / "second.xml", tmp_path / "second.md"
    assert cli.main(setup.args(*second, "--junit", str(junit2), "--markdown", str(markdown2))) == 0
    out = capsys.readouterr().out
    v2, _ = _newest_run(setup, eval_id)
    assert v2.baseline_run_id == v1.id and "gated on its threshold alone" not in out
    assert "Flipped items (4):" in out and all(f"{item} " in out for item in items)
    assert out.count("[improved]") == 4
    properties, cases = _junit_cases(junit2)
    assert properties["pawl.baseline_run_id"] == v1.id and properties["pawl.improved"] == "4"
    assert all(case.is_passed and _flip(case) == "improved" for case in cases.values())
    text = markdown2.read_text(encoding="utf-8")
    assert "### Flipped items (4)" in text and text.count("improved (fail → pass)") == 4
    assert "| | baseline v1 | candidate v2 |" in text
    # The job summary holds both runs' reports, one after the other.
    assert summary.read_text(encoding="utf-8") == markdown.read_text(encoding="utf-8") + text


@pytest.mark.slow
def test_a_regression_is_a_failure_of_type_regressed(
    setup: Setup, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    eval_id = setup.new_eval("regression")
    assert cli.main(setup.args("--eval", eval_id, "--agent-version", "2")) == 0
    junit = tmp_path / "regressed.xml"
    args = [
        "--eval",
        eval_id,
        "--agent-version",
        "1",
        "--baseline",
        "latest",
        "--junit",
        str(junit),
    ]
    assert cli.main(setup.args(*args)) == 1
    out = capsys.readouterr().out
    assert out.count("[regressed]") == 4 and "Flipped items (4):" in out
    properties, cases = _junit_cases(junit)
    assert properties["pawl.regressed"] == "4" and properties["pawl.verdict"] == "FAILED"
    for case in cases.values():
        (failure,) = case.result
        assert failure.type == "regressed" and _flip(case) == "regressed"
        assert "passed in the baseline run" in (failure.text or "")


@pytest.mark.slow
def test_an_unwritable_report_exits_2_after_the_verdict(
    setup: Setup, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CI asked for a file it will not find: no verdict to act on, said so."""
    eval_id = setup.new_eval("unwritable")
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    args = ["--eval", eval_id, "--junit", str(blocker / "junit.xml")]
    assert cli.main(setup.args(*args)) == 2
    captured = capsys.readouterr()
    assert "Verdict: PASSED" in captured.out
    assert "pawl run: cannot write a report:" in captured.err


def _action(env: dict[str, str], tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The action's script as a GitHub runner would run it, with temp GITHUB_* files."""
    output, summary = tmp_path / "github-output", tmp_path / "step-summary.md"
    output.touch()
    fake_github = {
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_SHA": "0123abcd",
        "GITHUB_REF_NAME": "feature/x",
        "GITHUB_RUN_ID": "42",
        "GITHUB_REPOSITORY": "acme/support-bot",
        "PAWL_PYTHON": sys.executable,
        "PYTHONPATH": str(ROOT),
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", str(tmp_path)),
    }
    done = subprocess.run(
        ["bash", str(ACTION_SCRIPT)],
        env={**fake_github, **env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done, output


@pytest.mark.slow
def test_the_action_script_runs_pawl_run_and_writes_its_outputs(
    setup: Setup, tmp_path: Path
) -> None:
    eval_id = setup.new_eval("action")
    inputs = {
        "PAWL_SERVER": setup.url,
        "PAWL_API_KEY": setup.key,
        "PAWL_ACTION_EVAL": eval_id,
        "PAWL_ACTION_BASELINE": "latest-or-none",
        "PAWL_ACTION_AGENT_VERSION": "1",
        "PAWL_ACTION_JUNIT": "reports/pawl-junit.xml",
        "PAWL_ACTION_MARKDOWN": "reports/pawl-report.md",
        "PAWL_ACTION_TIMEOUT": "120",
    }
    done, output = _action(inputs, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    outputs = _parse_github_output(output.read_text(encoding="utf-8"))
    run, _ = _newest_run(setup, eval_id)
    assert outputs == {
        "passed": "false",
        "status": "completed",
        "run-id": run.id,
        "console-url": f"{setup.url}/console/evals/{eval_id}/runs/{run.id}",
        "junit": "reports/pawl-junit.xml",
        "markdown": "reports/pawl-report.md",
        "exit-code": "1",
    }
    assert run.metadata == {
        "commit": "0123abcd",
        "ref": "feature/x",
        "github_run": "https://github.com/acme/support-bot/actions/runs/42",
    }
    properties, _ = _junit_cases(tmp_path / "reports" / "pawl-junit.xml")
    assert properties["pawl.run_id"] == run.id
    report = (tmp_path / "reports" / "pawl-report.md").read_text(encoding="utf-8")
    assert (tmp_path / "step-summary.md").read_text(encoding="utf-8") == report

    # The next push: the latest agent, against that run.
    (tmp_path / "next").mkdir()
    done, output = _action({**inputs, "PAWL_ACTION_AGENT_VERSION": ""}, tmp_path / "next")
    assert done.returncode == 0, done.stdout + done.stderr
    outputs = _parse_github_output(output.read_text(encoding="utf-8"))
    assert outputs["passed"] == "true" and outputs["exit-code"] == "0"
    assert "Flipped items (4):" in done.stdout


def test_the_action_script_refuses_missing_inputs(tmp_path: Path) -> None:
    done, output = _action({"PAWL_SERVER": "http://127.0.0.1:9", "PAWL_API_KEY": "k"}, tmp_path)
    assert done.returncode == 2
    assert "pawl action: the eval input is required" in done.stderr
    assert output.read_text(encoding="utf-8") == ""


@pytest.mark.slow
def test_the_action_script_reports_exit_2_when_the_server_is_unreachable(tmp_path: Path) -> None:
    inputs = {"PAWL_SERVER": "http://127.0.0.1:9", "PAWL_API_KEY": "k", "PAWL_ACTION_EVAL": "e"}
    done, output = _action(inputs, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "cannot reach pawl at http://127.0.0.1:9" in done.stderr
    assert _parse_github_output(output.read_text(encoding="utf-8")) == {"exit-code": "2"}


@pytest.mark.slow
def test_errored_and_hostile_items_as_a_real_server_records_them(
    setup: Setup, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The error's code and message as the API records them, and a label built to break
    the Markdown table, end to end."""
    hostile = "echo:nope | `x` <script>alert(1)</script>"
    with setup.client() as client:
        agent = client.create_agent(
            {
                "name": "scripted",
                "type": "python",
                "config": {"callable": "tests.support.agents:scripted"},
            }
        )
        dataset = client.create_dataset({"name": "mixed"})
        for text in ("echo:released", "fail", hostile):
            client.add_item(dataset["id"], {"input": [{"role": "user", "content": text}]})
        evaluation = client.create_eval(
            {
                "name": "mixed | <b>",
                "agent_id": agent["id"],
                "dataset_id": dataset["id"],
                "scorers": [{"type": "contains", "value": "released"}],
                "pass_threshold": 0.9,
            }
        )
    junit, markdown = tmp_path / "mixed.xml", tmp_path / "mixed.md"
    args = ["--eval", evaluation["id"], "--junit", str(junit), "--markdown", str(markdown)]
    assert cli.main(setup.args(*args)) == 1
    out = capsys.readouterr().out
    assert "Failed items (1):" in out and "Errored items (1):" in out
    assert "✗ dsit_" in out and "<script>alert(1)</script>" in out  # the terminal shows it as is
    _, cases = _junit_cases(junit)
    by_question = {case.name.split(" ", 1)[1]: case for case in cases.values()}
    assert by_question["echo:released"].is_passed
    (error,) = by_question["fail"].result
    assert isinstance(error, junitparser.Error)
    assert error.type and error.type in error.message and "told to fail" in error.message
    (failure,) = by_question[hostile].result
    assert failure.message == "contains: score 0.00"
    text = markdown.read_text(encoding="utf-8")
    tokens = PARSER.parse(text)
    failing = _tables(tokens)[-1]
    assert all(len(row) == 4 for row in failing) and len(failing) == 3
    assert "<script>" not in PARSER.render(text)
