"""`pawl demo --quick` in-process: the printed comparison and the HTML report.

The expected figures are worked out here from the demo agent's two versions and the two
scorers' definitions (the answer names the case's fact, and mentions Acme), not read
back from pawl.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

from chalicelib.stats import mcnemar_exact_p, wilson_interval
from pawl.cli import main as cli
from pawl.demo.agent import answer_v1, answer_v2
from pawl.demo.cases import CASES, sample_indices
from pawl.demo.walkthrough import QUICK_CASES
from pawl.local.runtime import LocalRuntime
from pawl.transport import PawlClient
from tests.e2e.test_pawl_run import console_page
from tests.e2e.test_serve import ServeProcess

pytestmark = pytest.mark.slow


def _passes(answer: object, question: str, must_mention: str) -> bool:
    assert callable(answer)
    output = answer({"input": [{"role": "user", "content": question}]})["output"]
    return must_mention in output and "acme" in output.lower()


def _expected() -> dict[str, list[tuple[bool, bool]]]:
    """Per kind, (v1 passed, v2 passed) for each quick case."""
    outcomes: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for index in sample_indices(QUICK_CASES):
        kind, _topic, must_mention, question = CASES[index]
        outcomes[kind].append(
            (_passes(answer_v1, question, must_mention), _passes(answer_v2, question, must_mention))
        )
    return outcomes


def _rate_ci(passed: int, n: int) -> str:
    interval = wilson_interval(passed, n)
    assert interval is not None
    return f"{passed / n:.2f} [{interval['low']:.2f}, {interval['high']:.2f}]"


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip("│ ").split("│")]


def test_quick_demo_prints_the_comparison_writes_the_report_and_its_state_serves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The demo's runtime allow-lists its own agent module: nothing else has to.
    monkeypatch.delenv("PAWL_PYTHON_AGENT_MODULES")
    report = tmp_path / "out" / "report.html"
    args = ["demo", "--quick", "--state-dir", str(tmp_path / "state"), "--report", str(report)]
    seen = _open_the_compare_link_while_serving(monkeypatch, capsys)
    code = cli.main([*args, "--keep-running"])
    captured = capsys.readouterr()
    out = "".join(seen) + captured.out
    assert code == 0, out
    # No engine chatter between the demo's lines: its INFO lines are in the state's log.
    assert " INFO " not in out + captured.err
    assert "queued for 0 webhook(s)" in (tmp_path / "state" / "pawl.log").read_text()
    assert len(seen) == 1, "--keep-running never served"

    expected = _expected()
    pairs = [pair for kind_pairs in expected.values() for pair in kind_pairs]
    v1_passed, v2_passed = sum(a for a, _ in pairs), sum(b for _, b in pairs)
    improved = sum(1 for a, b in pairs if b and not a)
    regressed = sum(1 for a, b in pairs if a and not b)
    n = len(pairs)
    assert n == QUICK_CASES and v2_passed / n >= 0.8 > v1_passed / n  # the demo's story

    # overall figures, both runs
    rate_row = next(line for line in out.splitlines() if line.startswith("│ pass rate"))
    assert _cells(rate_row)[1:] == [f"{v1_passed / n:.2f}", f"{v2_passed / n:.2f}"]
    interval_row = next(line for line in out.splitlines() if line.startswith("│ 95% interval"))
    assert _cells(interval_row)[1:] == [
        _rate_ci(v1_passed, n).split(" ", 1)[1],
        _rate_ci(v2_passed, n).split(" ", 1)[1],
    ]
    p_overall = mcnemar_exact_p(improved, regressed)
    assert f"{improved} improved (fail → pass), {regressed} regressed (pass → fail)" in out
    assert f"exact McNemar p = {p_overall:#.3g}" in out

    # per kind: both rates with intervals, flips
    html = report.read_text(encoding="utf-8")
    for kind, kind_pairs in expected.items():
        row = next(line for line in out.splitlines() if line.startswith(f"│ {kind} "))
        cells = _cells(row)
        size = len(kind_pairs)
        kind_v1 = sum(a for a, _ in kind_pairs)
        kind_v2 = sum(b for _, b in kind_pairs)
        kind_up = sum(1 for a, b in kind_pairs if b and not a)
        kind_down = sum(1 for a, b in kind_pairs if a and not b)
        assert cells[1] == _rate_ci(kind_v1, size)
        assert cells[2] == _rate_ci(kind_v2, size)
        assert cells[4:6] == [str(kind_up), str(kind_down)]
        assert cells[6] == f"{mcnemar_exact_p(kind_up, kind_down):#.3g}"
        assert f"<td>{kind}</td>" in html
        assert _rate_ci(kind_v1, size) in html and _rate_ci(kind_v2, size) in html

    # the verdict, in words
    assert "Verdict: PASSED" in out
    assert f"passed: pass rate {v2_passed / n:.2f} ≥ threshold 0.80 ({n} items scored)" in out
    assert "no significant regression: pass rate" in out

    # the report: where it is, and what it holds
    assert f"report    {report.resolve()}" in out
    assert "<svg" in html and "Verdict for v2: PASSED" in html
    bars = re.findall(r'<rect class="(baseline|candidate)" x=', html)
    assert sorted(bars) == ["baseline"] * len(expected) + ["candidate"] * len(expected)
    assert "<script" not in html

    # the report's flipped items: every flip of the comparison (fewer than 50 here)
    flipped = improved + regressed
    assert 0 < flipped <= 50
    assert f"{flipped} item{'s' if flipped != 1 else ''} changed verdict" in html
    assert html.count('<div class="flip">') == flipped
    assert html.split('id="flipped"')[1].count("fail → pass") == improved

    # the spend: the usage API's rollup by source, checked against the runs' own usage
    eval_spend = re.search(r"^spend     eval: \$([\d.]+) over (\d+) calls", out, re.M)
    judge_spend = re.search(r"^spend     eval_judge: \$([\d.]+) over (\d+) calls", out, re.M)
    assert eval_spend and judge_spend, out
    assert int(eval_spend.group(2)) == 3 * n and int(judge_spend.group(2)) == n
    assert float(eval_spend.group(1)) > 0 and float(judge_spend.group(1)) > 0
    assert "/usage/aggregate?group_by=source equals the runs' own usage" in out

    _serve_the_demos_state(tmp_path / "state", out, capsys)


def _open_the_compare_link_while_serving(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> list[str]:
    """Stand in for the wait on Ctrl-C of ``--keep-running``: while the runtime serves, the
    printed comparison link names the candidate run (its baseline set) and the console,
    signed in with the printed key, shows that run; then "Ctrl-C"."""
    seen: list[str] = []

    def serve_briefly(runtime: LocalRuntime, stop: object) -> None:
        out = capsys.readouterr().out
        seen.append(out)
        link = re.search(
            r"^compare: (\S+)/console/evals/(eval_\w+)/runs/(evrun_\w+)/compare$", out, re.M
        )
        key = re.search(r"with the project key (pawl\.key_\S+)\)$", out, re.M)
        assert link and key, out
        assert link.group(1) == runtime.url
        eval_id, run_id = link.group(2), link.group(3)
        with PawlClient(runtime.url, key.group(1)) as client:
            candidate = client.get_run(eval_id, run_id)
        assert candidate.agent_version == 2 and candidate.baseline_run_id
        run_url = f"{runtime.url}/console/evals/{eval_id}/runs/{run_id}"
        run_page = console_page(runtime.url, key.group(1), run_url)
        assert run_page.status_code == 200 and run_id in run_page.text

    monkeypatch.setattr(cli, "serve_until_stopped", serve_briefly)
    return seen


def _serve_the_demos_state(state_dir: Path, out: str, capsys: pytest.CaptureFixture[str]) -> None:
    """README: `pawl demo --state-dir X`, then `pawl serve --state-dir X` and `pawl run`."""
    key = re.search(r"secret (pawl\.key_\S+)", out)
    eval_id = re.search(r"^eval\s+(eval_\w+)", out, re.M)
    assert key and eval_id, out
    env = {"PAWL_PYTHON_AGENT_MODULES": "pawl.demo.agent"}
    server = ServeProcess(state_dir, state_dir.parent, extra_env=env, admin_key=None)
    try:
        # The comparison's eval and its two runs, and the tone eval the demo judge ran once.
        restored = f"1 project, 1 agent, 1 dataset, {QUICK_CASES} dataset items, 2 evals, 3 runs"
        assert f"restored    {restored}" in "".join(server.output)
        args = ["run", "--server", server.url, "--api-key", key.group(1), "--timeout", "120"]
        assert cli.main([*args, "--eval", eval_id.group(1), "--baseline", "latest"]) == 0
        assert "Verdict: PASSED" in capsys.readouterr().out
    finally:
        server.kill()
