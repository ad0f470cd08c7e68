"""``pawl.evaluate``'s pure parts: what it reads, the template it deploys, the verdict's words."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from pawl.demo.flips import IMPROVED, REGRESSED, FlippedItem, ItemVerdict
from pawl.evaluation import evaluate
from pawl.evaluation_apply import (
    DesiredItem,
    EvaluationError,
    agent_source,
    content_key,
    dataset_source,
    item_changes,
    template_for,
)
from pawl.transport import Run
from pawl.verdict import Figures, Verdict, explain, figures_of, reasons_of

ROOT = Path(__file__).resolve().parents[2]
AGENT = "agt_" + "a" * 16
DATASET = "dset_" + "d" * 16
GATES = {"scorers": [{"type": "contains", "value": "x"}], "pass_threshold": 0.8}


def test_a_string_input_is_the_one_user_message_it_stands_for() -> None:
    as_text = content_key({"input": "hi", "metadata": None})
    as_messages = content_key({"input": [{"role": "user", "content": "hi"}], "metadata": {}})
    stored = {"id": "dsit_x", "input": [{"role": "user", "content": "hi"}], "metadata": {}}
    assert as_text == as_messages == content_key(stored)
    assert content_key({"input": "hi", "expected_output": "yo"}) != as_text
    assert content_key({"input": "hi", "metadata": {"k": 1}}) != as_text


def _desired(*texts: str) -> list[DesiredItem]:
    return [DesiredItem(f"item {n}", {"input": t}) for n, t in enumerate(texts, start=1)]


def test_item_changes_keep_what_is_there_add_the_new_delete_the_gone() -> None:
    existing = {
        content_key({"input": "a"}): ["dsit_a"],
        content_key({"input": "b"}): ["dsit_b1", "dsit_b2"],  # a duplicate
        content_key({"input": "old"}): ["dsit_old"],
    }
    to_add, to_delete = item_changes(existing, _desired("a", "b", "new", "new"))
    assert [item.body["input"] for item in to_add] == ["new", "new"]
    assert sorted(to_delete) == ["dsit_b2", "dsit_old"]

    same = {content_key({"input": t}): [f"dsit_{t}"] for t in ("a", "b")}
    assert item_changes(same, _desired("b", "a")) == ([], [])


def test_the_template_declares_only_what_is_not_given_by_id() -> None:
    properties = {**GATES, "max_regression": None, "group_by": None, "trials": 1}
    full = template_for("faq", "https://agent.example/chat", None, properties, {"X-Key": "s"})
    assert sorted(full["resources"]) == ["Agent", "Dataset", "Eval"]
    agent = full["resources"]["Agent"]["properties"]
    assert agent == {
        "name": "faq",
        "type": "http",
        "config": {"url": "https://agent.example/chat", "headers": {"X-Key": "s"}},
    }
    evaluation = full["resources"]["Eval"]["properties"]
    assert evaluation["agent_id"] == {"ref": "Agent"} and evaluation["name"] == "faq"
    assert evaluation["dataset_id"] == {"ref": "Dataset"} and evaluation["pass_threshold"] == 0.8
    assert full["outputs"] == {"eval_id": {"ref": "Eval"}, "dataset_id": {"ref": "Dataset"}}

    bound = template_for("faq", AGENT, DATASET, properties)
    assert list(bound["resources"]) == ["Eval"]
    evaluation = bound["resources"]["Eval"]["properties"]
    assert (evaluation["agent_id"], evaluation["dataset_id"]) == (AGENT, DATASET)
    assert bound["outputs"]["dataset_id"] == DATASET


def test_a_dataset_is_a_list_a_file_or_an_id(tmp_path: Path) -> None:
    assert dataset_source(DATASET) == DATASET
    [item] = dataset_source([{"input": "q", "metadata": {"kind": "x"}}])  # type: ignore[misc]
    assert item.label == "item 1" and item.body["metadata"] == {"kind": "x"}

    jsonl = tmp_path / "cases.jsonl"
    jsonl.write_text('{"input": "one"}\n\n{"input": "two", "expected_output": "2"}\n')
    items = dataset_source(str(jsonl))
    assert isinstance(items, list)
    assert [(i.label, i.body["input"]) for i in items] == [
        ("cases.jsonl line 1", "one"),
        ("cases.jsonl line 3", "two"),
    ]
    csv = tmp_path / "cases.csv"
    csv.write_text("input,expected_output,kind\nq1,a1,billing\n")
    [row] = dataset_source(csv)  # type: ignore[misc]
    assert row.body == {"input": "q1", "expected_output": "a1", "metadata": {"kind": "billing"}}


@pytest.mark.parametrize(
    ("dataset", "message"),
    [
        ([], "the list of items is empty"),
        (["just text"], "item 1 is a str, not an object with 'input'"),
        ("missing.jsonl", "'missing.jsonl' is neither a file nor a dataset id"),
        (42, "expected a list of items, a .jsonl/.csv path or a dataset id, got int"),
    ],
)
def test_a_dataset_it_cannot_use_is_refused_naming_why(dataset: Any, message: str) -> None:
    with pytest.raises(EvaluationError, match=r"^dataset: ") as refused:
        dataset_source(dataset)
    assert message in str(refused.value)


def test_a_bad_line_of_a_file_is_named_by_its_number(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"input": "fine"}\n{"input": \n')
    with pytest.raises(EvaluationError, match=r"bad\.jsonl line 2: not valid JSON"):
        dataset_source(path)
    other = tmp_path / "cases.txt"
    other.write_text("x")
    with pytest.raises(EvaluationError, match="pawl imports JSON Lines"):
        dataset_source(other)


def test_an_agent_is_a_url_or_an_id() -> None:
    assert agent_source("http://127.0.0.1:8100/") == "http://127.0.0.1:8100/"
    assert agent_source(AGENT) == AGENT
    with pytest.raises(EvaluationError, match="agent: expected an http"):
        agent_source("support-agent")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"threshold": None}, "evaluate needs a gate"),
        ({"scorers": []}, "scorers: give a non-empty list"),
        ({"name": "has spaces"}, "name: 'has spaces' must start with a letter"),
        ({"agent": "nope"}, "agent: expected"),
        ({"api_key": ""}, "no API key: set PAWL_API_KEY"),
    ],
)
def test_evaluate_refuses_bad_arguments_before_any_request(
    arguments: dict[str, Any], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PAWL_API_KEY", raising=False)
    given: dict[str, Any] = {
        "name": "faq",
        "dataset": [{"input": "q"}],
        "agent": "http://127.0.0.1:9/",
        "scorers": GATES["scorers"],
        "threshold": 0.8,
        "server": "http://127.0.0.1:9",  # nothing listens: a request would be unreachable
        "api_key": "k",
        **arguments,
    }
    name = given.pop("name")
    with pytest.raises(EvaluationError, match=message):
        evaluate(name, **given)


def _run(**fields: Any) -> Run:
    body = {"id": "evrun_c", "eval_id": "eval_e", "agent_version": 2, "status": "completed"}
    return Run.model_validate({**body, **fields})


AGGREGATE = {
    "pass_rate": 0.4,
    "pass_rate_interval": {"low": 0.17, "high": 0.69, "level": 0.95},
    "scored_item_count": 10,
    "baseline": {
        "compared_item_count": 10,
        "pass_rate_delta": -0.6,
        "p_value": 0.03125,
        "flipped": {"improved": 0, "regressed": 6},
    },
}
REASONS = [
    {"gate": "pass_threshold", "passed": False, "pass_rate": 0.4, "pass_threshold": 0.8,
     "scored_item_count": 10},
]  # fmt: skip


def test_figures_and_reasons_are_the_runs() -> None:
    run = _run(aggregate_scores=AGGREGATE, verdict_reasons=REASONS, item_count=10, passed=False)
    figures = figures_of(run)
    assert figures == Figures(0.4, (0.17, 0.69), 0.95, 10, 0, 10, -0.6, 0.03125, 10, 0, 6)
    assert reasons_of(run, ["a note"]) == (
        "failed: pass rate 0.40 < threshold 0.80 (10 items scored)",
        "a note",
    )
    cancelled = _run(status="cancelled", failure_reason="cancelled by a person")
    assert reasons_of(cancelled) == ("the run ended cancelled: cancelled by a person",)
    assert figures_of(cancelled).interval is None


def _verdict(**fields: Any) -> Verdict:
    base: dict[str, Any] = {
        "passed": False,
        "reasons": ("failed: pass rate 0.40 < threshold 0.80 (10 items scored)",),
        "figures": Figures(0.4, (0.17, 0.69), 0.95, 10, 0, 10, -0.6, 0.03125, 10, 0, 6),
        "flipped": (
            FlippedItem("dsit_1", REGRESSED, "How long does a refund take?", "5-10 days", "Ask"),
            FlippedItem("dsit_2", IMPROVED, None, None, "x" * 500),
        ),
        "run_id": "evrun_c",
        "eval_id": "eval_e",
        "name": "faq",
        "status": "completed",
        "console_url": "http://pawl.example/console/evals/eval_e/runs/evrun_c",
        "baseline_run_id": "evrun_b",
        "more_flipped": 3,
    }
    return Verdict(**{**base, **fields})


def test_explain_names_the_verdict_figures_reasons_and_flipped_items() -> None:
    text = _verdict().explain()
    assert text == explain(_verdict())
    lines = text.splitlines()
    assert lines[0] == "pawl eval faq (eval_e): FAILED (run evrun_c, completed)"
    assert lines[1] == "  pass rate 0.40 [0.17, 0.69] over 10 of 10 items scored (0 errored)"
    assert lines[2] == (
        "  vs baseline evrun_b: Δ -0.60 over 10 items, 0 improved, 6 regressed, p = 0.0312"
    )
    assert "  • failed: pass rate 0.40 < threshold 0.80 (10 items scored)" in lines
    assert "flipped items (5, regressions first):" in lines
    assert "  regressed (pass → fail) dsit_1: 'How long does a refund take?'" in lines
    assert "      baseline: '5-10 days'" in lines and "      now:      'Ask'" in lines
    assert "  improved (fail → pass) dsit_2:" in lines and "      baseline: (no output)" in lines
    assert any(line.endswith("x…'") and len(line) < 200 for line in lines)  # cut, not 500 x's
    assert "  … and 3 more (see the console)" in lines
    assert lines[-1] == "console: http://pawl.example/console/evals/eval_e/runs/evrun_c"


def test_explain_lists_the_failing_items_the_flips_do_not_name() -> None:
    failing = tuple(ItemVerdict(f"dsit_{n:02}", False, f"out {n}", f"q {n}") for n in range(12))
    first_run = _verdict(flipped=(), more_flipped=0, baseline_run_id=None, failing=failing)
    lines = first_run.explain().splitlines()
    assert "failing items (12):" in lines
    assert "  dsit_00: 'q 0'" in lines and "      output: 'out 0'" in lines
    assert "  dsit_09: 'q 9'" in lines and "  dsit_10: 'q 10'" not in lines
    assert "  … and 2 more (see the console)" in lines

    flipped = (FlippedItem("dsit_00", REGRESSED, "q 0", "right", "out 0"),)
    both = _verdict(flipped=flipped, more_flipped=0, failing=failing[:2], more_failing=40)
    lines = both.explain().splitlines()
    assert "other failing items (41):" in lines  # dsit_00 is listed once, as flipped
    assert "  dsit_00: 'q 0'" not in lines and "  dsit_01: 'q 1'" in lines
    assert "  … and 40 more (see the console)" in lines


def test_a_passed_verdict_without_baseline_or_flips_says_less() -> None:
    verdict = _verdict(passed=True, flipped=(), more_flipped=0, baseline_run_id=None)
    text = verdict.explain()
    assert text.startswith("pawl eval faq (eval_e): PASSED")
    assert "vs baseline" not in text and "flipped" not in text
    verdict.assert_passed()  # no exception
    with pytest.raises(AssertionError) as failed:
        _verdict().assert_passed()
    assert str(failed.value) == _verdict().explain()
    assert repr(_verdict()) == "<Verdict failed: run evrun_c of eval faq>"


def test_the_pytest_plugin_imports_nothing_heavy_until_a_test_asks() -> None:
    """pytest loads it in every session where pawl is installed (pawl's own included)."""
    script = (
        "import sys, pawl.pytest_plugin\n"
        "heavy = ['pawl.evaluation', 'pawl.transport', 'httpx', 'pydantic', 'chalicelib',"
        " 'boto3', 'moto', 'rich']\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert found.stdout.strip() == ""


def test_the_plugin_is_a_pytest11_entry_point_and_its_options_reach_evaluate(
    tmp_path: Path,
) -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    assert declared["pytest11"] == {"pawl": "pawl.pytest_plugin"}

    (tmp_path / "test_gate.py").write_text(
        "import pytest\n"
        "from pawl.transport import ServerUnreachable\n"
        "def test_gate(pawl_eval):\n"
        "    with pytest.raises(ServerUnreachable, match='http://127.0.0.1:9 '):\n"
        "        pawl_eval('faq', dataset=[{'input': 'q'}], agent='http://127.0.0.1:9/',\n"
        "                  scorers=[{'type': 'contains', 'value': 'x'}], threshold=0.5)\n"
    )
    installed = any(ep.name == "pawl" for ep in metadata.entry_points(group="pytest11"))
    load = [] if installed else ["-p", "pawl.pytest_plugin"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PAWL_SERVER": "http://127.0.0.1:1"}
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", *load, "-p", "no:cacheprovider", "test_gate.py",
         "--pawl-server", "http://127.0.0.1:9", "--pawl-api-key", "k"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
