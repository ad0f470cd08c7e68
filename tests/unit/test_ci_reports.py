"""`pawl run`'s reports from fixed result rows: the items, the JUnit file (read back by
junitparser, an independent parser), the Markdown (parsed by markdown-it-py, rendered to
HTML) and the step outputs, with tenant text chosen to break each format."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import junitparser
import pytest
import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token
from rich.console import Console

from pawl.demo.ci_items import (
    ERRORED,
    FAILED,
    IMPROVED,
    PASSED,
    REGRESSED,
    CiReport,
    item_reports,
)
from pawl.demo.ci_junit import render_junit, xml_safe
from pawl.demo.ci_markdown import md_text, render_markdown
from pawl.demo.ci_outputs import append_step_summary, github_output_lines
from pawl.demo.ci_report import (
    ReportTargets,
    gather_report,
    items_needed,
    print_items,
    step_outputs,
)
from pawl.demo.summary import build_comparison
from pawl.transport import Run

#: A label meant to break every format a report is written in.
HOSTILE = 'a | b `tick` <script>alert("x")</script> [link](http://evil.example) @octocat *em* &amp;'
#: Characters XML 1.0 cannot hold even escaped, and a terminal escape.
CONTROL = "bell\x07 nul\x00 esc\x1b[31m"
EVAL_NAME = "support | <b>faq</b>"


def _row(item: str, trial: int, *, passed: bool | None, question: str = "q", **extra: Any) -> Any:
    scores = extra.pop("scores", None)
    if scores is None and passed is not None:
        scores = [{"scorer": "contains", "score": 1.0 if passed else 0.0, "passed": passed}]
    return {
        "dataset_item_id": item,
        "trial": trial,
        "input": [{"role": "system", "content": "sys"}, {"role": "user", "content": question}],
        "output": extra.pop("output", f"answer to {item}"),
        "scores": scores or [],
        "passed": passed,
        "error": extra.pop("error", None),
    }


REASONED_FAILURE = [
    {"scorer": "contains", "score": 1.0, "passed": True},
    {"scorer": "judge", "score": 0.2, "passed": False, "reasoning": "It <b>ignored</b> | the ask"},
]
RESULTS = [
    _row("dsi_pass", 1, passed=True, question="Where are my invoices?"),
    _row("dsi_fail", 1, passed=False, question=HOSTILE, scores=REASONED_FAILURE),
    _row(
        "dsi_error",
        1,
        passed=None,
        question=CONTROL,
        error={"code": "AGENT_TIMEOUT", "message": "no answer in 30 s"},
    ),
    _row("dsi_regressed", 1, passed=False, question="Reset my password"),
    _row("dsi_improved", 1, passed=True, question="Cancel my plan"),
    # Two trials under "all": the item fails on its second; the failing one is quoted.
    _row("dsi_flaky", 2, passed=False, question="Refund?", output="no refund"),
    _row("dsi_flaky", 1, passed=True, question="Refund?", output="yes refund"),
    # A deleted item's result: no item id, left out as the figures leave it out.
    {**_row("x", 1, passed=False), "dataset_item_id": None},
]
FLIPS = {"dsi_regressed": REGRESSED, "dsi_improved": IMPROVED}


def _run(**changes: Any) -> Run:
    body: dict[str, Any] = {
        "id": "evrun_cand000000000001",
        "eval_id": "eval_fixed0000000001",
        "agent_version": 2,
        "status": "completed",
        "baseline_run_id": "evrun_base000000000001",
        "passed": False,
        "errored_count": 1,
        "aggregate_scores": {
            "pass_rate": 0.4,
            "pass_rate_interval": {"low": 0.1176, "high": 0.7693, "level": 0.95},
            "scored_item_count": 5,
            "baseline": {
                "compared_item_count": 5,
                "pass_rate_delta": -0.2,
                "flipped": {"improved": 1, "regressed": 1},
                "p_value": 1.0,
            },
        },
        "verdict_reasons": [
            {
                "gate": "pass_threshold",
                "passed": False,
                "pass_rate": 0.4,
                "pass_threshold": 0.8,
                "scored_item_count": 5,
            }
        ],
    }
    return Run.model_validate({**body, **changes})


def _report(run: Run | None = None, note: str | None = None) -> CiReport:
    run = run or _run()
    base = "http://127.0.0.1:8000"
    return CiReport(
        eval_id=run.eval_id,
        eval_name=EVAL_NAME,
        comparison=build_comparison(run),
        items=item_reports(RESULTS, "all", FLIPS if run.baseline_run_id else {}),
        console_url=f"{base}/console/evals/{run.eval_id}/runs/{run.id}",
        compare_url=f"{base}/console/evals/{run.eval_id}/runs/{run.id}/compare"
        if run.baseline_run_id
        else None,
        baseline_note=note,
    )


# --- items ------------------------------------------------------------------------------------


def test_items_are_reduced_per_item_with_the_reasons_of_the_trial_shown() -> None:
    items = {item.dataset_item_id: item for item in item_reports(RESULTS, "all", FLIPS)}
    assert list(items) == [
        "dsi_pass",
        "dsi_fail",
        "dsi_error",
        "dsi_regressed",
        "dsi_improved",
        "dsi_flaky",
    ]
    assert items["dsi_pass"].outcome == PASSED and items["dsi_pass"].reason == ""
    failed = items["dsi_fail"]
    assert failed.outcome == FAILED and failed.question == HOSTILE
    assert failed.failures == ("judge: score 0.20: It <b>ignored</b> | the ask",)
    errored = items["dsi_error"]
    assert errored.outcome == ERRORED and errored.reason == "AGENT_TIMEOUT: no answer in 30 s"
    assert items["dsi_regressed"].flip == REGRESSED and items["dsi_improved"].flip == IMPROVED
    flaky = items["dsi_flaky"]
    assert flaky.outcome == FAILED and flaky.flaky and flaky.trial_count == 2
    assert flaky.output == "no refund"  # the failing trial, not the first one
    # "any" (pass@k): one passing trial is enough.
    by_any = {i.dataset_item_id: i for i in item_reports(RESULTS, "any")}
    assert by_any["dsi_flaky"].outcome == PASSED and by_any["dsi_flaky"].output == "yes refund"


def test_flipped_lists_regressions_first() -> None:
    assert [item.dataset_item_id for item in _report().flipped] == ["dsi_regressed", "dsi_improved"]


def test_a_label_is_the_id_and_one_line_of_the_question_cut_short() -> None:
    (item,) = item_reports([_row("dsi_long", 1, passed=True, question="word\n" * 40)])
    assert item.label.startswith("dsi_long word word") and item.label.endswith("…")
    assert "\n" not in item.label and len(item.label) <= len("dsi_long ") + 80


# --- JUnit ------------------------------------------------------------------------------------


def _junit(tmp_path: Path, report: CiReport) -> junitparser.JUnitXml:
    path = tmp_path / "pawl.xml"
    path.write_text(render_junit(report), encoding="utf-8")
    parsed = junitparser.JUnitXml.fromfile(str(path))
    assert isinstance(parsed, junitparser.JUnitXml)
    return parsed


def test_junit_has_one_case_per_item_with_failures_errors_and_flips(tmp_path: Path) -> None:
    (suite,) = list(_junit(tmp_path, _report()))
    assert suite.name == EVAL_NAME
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (6, 3, 1, 0)
    cases = {case.name.split()[0]: case for case in suite}
    assert {case.classname for case in suite} == {EVAL_NAME}
    assert (
        cases["dsi_pass"].is_passed and cases["dsi_pass"].name == "dsi_pass Where are my invoices?"
    )

    (failure,) = cases["dsi_fail"].result
    assert isinstance(failure, junitparser.Failure)
    assert failure.message == "judge: score 0.20: It <b>ignored</b> | the ask"
    assert failure.type == FAILED
    assert f"question: {HOSTILE}" in (failure.text or "")

    (error,) = cases["dsi_error"].result
    assert isinstance(error, junitparser.Error)
    assert error.type == "AGENT_TIMEOUT" and error.message == "AGENT_TIMEOUT: no answer in 30 s"

    (regression,) = cases["dsi_regressed"].result
    assert regression.type == REGRESSED and "passed in the baseline run" in (regression.text or "")
    assert cases["dsi_improved"].is_passed
    flips = {
        name: {p.get("name"): p.get("value") for p in case._elem.iter("property")}
        for name, case in cases.items()
    }
    assert flips["dsi_regressed"]["pawl.flip"] == REGRESSED
    assert flips["dsi_improved"]["pawl.flip"] == IMPROVED
    assert "pawl.flip" not in flips["dsi_fail"]
    assert "2 trials, flaky" in (cases["dsi_flaky"].result[0].text or "")


def test_junit_suite_properties_summarise_the_run(tmp_path: Path) -> None:
    (suite,) = list(_junit(tmp_path, _report()))
    properties = {p.name: p.value for p in suite.properties()}
    assert properties["pawl.run_id"] == "evrun_cand000000000001"
    assert properties["pawl.verdict"] == "FAILED"
    assert properties["pawl.pass_rate"] == "0.40"
    assert properties["pawl.pass_rate_interval"] == "[0.12, 0.77]"
    assert properties["pawl.pass_threshold"] == "0.80"
    assert properties["pawl.baseline_run_id"] == "evrun_base000000000001"
    assert properties["pawl.pass_rate_delta"] == "-0.20"
    assert properties["pawl.mcnemar_p"] == "1.00"
    assert (properties["pawl.improved"], properties["pawl.regressed"]) == ("1", "1")
    assert properties["pawl.gate.1"] == "failed: pass rate 0.40 < threshold 0.80 (5 items scored)"
    assert properties["pawl.console_url"].endswith("/runs/evrun_cand000000000001")
    assert properties["pawl.compare_url"].endswith("/runs/evrun_cand000000000001/compare")


def test_junit_carries_what_xml_cannot_as_a_replacement_character(tmp_path: Path) -> None:
    (suite,) = list(_junit(tmp_path, _report()))
    case = next(case for case in suite if case.name.startswith("dsi_error"))
    assert case.name == "dsi_error bell nul esc [31m"  # a name is one line of printable text
    (error,) = case.result
    assert "question: bell\ufffd nul\ufffd esc\ufffd[31m" in (error.text or "")
    assert xml_safe("tab\tnl\ncr\r") == "tab\tnl\ncr\r"


def test_junit_without_a_baseline_says_why(tmp_path: Path) -> None:
    run = _run(baseline_run_id=None, aggregate_scores={"pass_rate": 0.4, "scored_item_count": 5})
    note = "--baseline latest-or-none: no completed run yet"
    (suite,) = list(_junit(tmp_path, _report(run, note)))
    properties = {p.name: p.value for p in suite.properties()}
    assert properties["pawl.baseline_note"] == note
    assert "pawl.baseline_run_id" not in properties and "pawl.compare_url" not in properties
    assert all("pawl.flip" not in {p.get("name") for p in c._elem.iter("property")} for c in suite)


# --- Markdown ---------------------------------------------------------------------------------

PARSER = MarkdownIt("commonmark", {"html": True}).enable("table")


def _tables(tokens: list[Token]) -> list[list[list[str]]]:
    """Each table as rows of cell texts (the inline content, as a reader sees it)."""
    tables: list[list[list[str]]] = []
    for index, token in enumerate(tokens):
        if token.type == "table_open":
            tables.append([])
        elif token.type == "tr_open":
            tables[-1].append([])
        elif token.type == "inline" and tokens[index - 1].type in ("th_open", "td_open"):
            tables[-1][-1].append(_plain(token))
    return tables


def _plain(inline: Token) -> str:
    shown = ("text", "code_inline")
    return "".join(child.content for child in inline.children or [] if child.type in shown)


def test_markdown_keeps_hostile_text_as_text() -> None:
    markdown = render_markdown(_report())
    tokens = PARSER.parse(markdown)
    kinds = {token.type for token in tokens} | {
        child.type for token in tokens for child in token.children or []
    }
    # No HTML got through, no code span opened, and the only links are pawl's own.
    assert not kinds & {"html_inline", "html_block", "code_block", "fence"}
    links = [c.attrs["href"] for t in tokens for c in t.children or [] if c.type == "link_open"]
    assert links and all(str(href).startswith("http://127.0.0.1:8000/console/") for href in links)
    html = PARSER.render(markdown)
    assert "<script>" not in html and "<b>" not in html and 'evil.example"' not in html
    assert "&lt;script&gt;" in html


def test_markdown_tables_have_one_cell_per_column_whatever_the_labels() -> None:
    tables = _tables(PARSER.parse(render_markdown(_report())))
    figures, flipped, failing = tables
    assert figures[0] == ["", "candidate v2"] and figures[1][0] == "pass rate [95% interval]"
    assert figures[1][1] == "0.40 [0.12, 0.77]"
    assert all(len(row) == 5 for row in flipped)
    assert [row[0] for row in flipped[1:]] == ["dsi_regressed", "dsi_improved"]
    assert flipped[1][2] == "regressed (pass → fail)"
    assert all(len(row) == 4 for row in failing)
    rows = {row[0]: row for row in failing[1:]}
    assert set(rows) == {"dsi_fail", "dsi_error", "dsi_flaky"}
    # The hostile label reads as written (an @ keeps a word joiner so it mentions no one).
    joined = HOSTILE.replace("@", "@\u2060").replace("://", ":/\u2060/")
    assert rows["dsi_fail"][1] == joined
    assert rows["dsi_fail"][3] == "judge: score 0.20: It <b>ignored</b> | the ask"
    assert rows["dsi_error"][3] == "AGENT_TIMEOUT: no answer in 30 s"


def test_markdown_has_the_verdict_figures_and_gates() -> None:
    markdown = render_markdown(_report())
    assert markdown.startswith("## ❌ pawl: support \\| &lt;b&gt;faq&lt;/b&gt; failed\n")
    assert "**Δ pass rate -0.20** over the 5 items scored in both runs" in markdown
    assert "1 improved, 1 regressed; exact McNemar p = 1.00" in markdown
    assert "- ❌ failed: pass rate 0.40 &lt; threshold 0.80 (5 items scored)" in markdown
    assert "Threshold: pass rate ≥ 0.80." in markdown
    assert "[compare](http://127.0.0.1:8000/console/evals/" in markdown


def test_markdown_without_a_baseline_says_so_and_lists_no_flips() -> None:
    run = _run(baseline_run_id=None, passed=True, verdict_reasons=[])
    markdown = render_markdown(_report(run, "no completed run to compare with yet"))
    assert markdown.startswith("## ✅ pawl:")
    assert "> no completed run to compare with yet" in markdown
    assert "Flipped items" not in markdown and "against baseline" not in markdown
    assert "### Failing items (4)" in markdown and "Other failing" not in markdown


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("a|b", "a\\|b"),
        ("`x`", "\\`x\\`"),
        ("<i>", "&lt;i&gt;"),
        ("line\nbreak", "line break"),
        ("esc\x1b", "esc"),
        ("@me", "\\@\u2060me"),
        (
            "see http://x.example or www.x.example",
            "see http:/\u2060/x.example or www\u2060.x.example",
        ),
    ],
)
def test_md_text_escapes(text: str, escaped: str) -> None:
    assert md_text(text) == escaped


# --- GitHub -----------------------------------------------------------------------------------


def test_step_summary_is_appended_only_when_github_names_one(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    assert append_step_summary("## report", {"GITHUB_STEP_SUMMARY": str(summary)}) == summary
    assert summary.read_text(encoding="utf-8") == "earlier step\n## report\n"
    assert append_step_summary("## report", {}) is None


def _parse_github_output(text: str) -> dict[str, str]:
    """GitHub's reading of the file: ``name<<DELIM`` blocks (and ``name=value`` lines)."""
    outputs, lines = {}, iter(text.splitlines())
    for line in lines:
        if "<<" in line:
            name, delimiter = line.split("<<", 1)
            value = []
            for body in lines:
                if body == delimiter:
                    break
                value.append(body)
            outputs[name] = "\n".join(value)
        else:
            name, _, value_ = line.partition("=")
            outputs[name] = value_
    return outputs


def test_github_outputs_cannot_be_forged_by_a_value() -> None:
    forged = "x\npassed=true\nghadelimiter_guess"
    text = github_output_lines({"passed": "false", "console-url": forged})
    assert _parse_github_output(text) == {"passed": "false", "console-url": forged}
    with pytest.raises(ValueError, match="not a step output name"):
        github_output_lines({"a\nb": "x"})


def test_terminal_lines_show_tenant_text_as_written_without_escapes() -> None:
    rows = [
        _row("dsi_markup", 1, passed=False, question="[bold red]loud[/] \x1b[2J cleared?"),
        _row("dsi_bidi", 1, passed=False, question="abc\u202edef"),
    ]
    report = CiReport(
        "eval_x", "x", build_comparison(_run()), item_reports(rows), "http://x/run", None
    )
    console = Console(record=True, width=200, color_system=None)
    print_items(console, report)
    text = console.export_text()
    assert "Failed items (2):" in text
    assert "✗ dsi_markup [bold red]loud[/] [2J cleared?: contains: score 0.00" in text
    assert "✗ dsi_bidi abc def" in text and "\x1b" not in text and "\u202e" not in text


def test_the_action_wires_every_input_to_the_script_and_every_output_from_it() -> None:
    """action.yml, scripts/github_action.sh and `pawl run --github-output` agree on names."""
    root = Path(__file__).resolve().parents[2]
    action = yaml.safe_load((root / "action.yml").read_text(encoding="utf-8"))
    script = (root / "scripts" / "github_action.sh").read_text(encoding="utf-8")
    steps = action["runs"]["steps"]
    assert action["runs"]["using"] == "composite"
    env = {name: value for step in steps for name, value in (step.get("env") or {}).items()}
    used = {ref.split("inputs.", 1)[1].rstrip(" }") for ref in env.values()}
    install_if = next(step["if"] for step in steps if "if" in step)
    assert used | {install_if.split("inputs.", 1)[1].split()[0]} == set(action["inputs"])
    assert all(f"${{{name}" in script or f"${name}" in script for name in env)
    written = set(step_outputs(_run(), "http://x/run", ReportTargets(Path("j"), Path("m"))))
    written.add("exit-code")  # the script's own
    wired = {
        out["value"].split("steps.run.outputs.", 1)[1].rstrip(" }")
        for out in action["outputs"].values()
    }
    assert wired == set(action["outputs"]) == written


def test_every_report_shows_the_smallest_detectable_drop_beside_the_verdict(
    tmp_path: Path,
) -> None:
    """The max_regression gate's ``min_detectable_regression`` reaches the terminal, the
    Markdown and the JUnit file, in the gate's own line."""
    from pawl.demo.comparison import print_comparison

    gate = {
        "gate": "max_regression",
        "passed": True,
        "conclusion": "inconclusive",
        "pass_rate_delta": -0.2,
        "max_regression": 0.05,
        "p_value": 1.0,
        "alpha": 0.05,
        "compared_item_count": 5,
        "baseline_run_id": "evrun_base000000000001",
        "min_detectable_regression": None,
        "min_detectable_power": 0.8,
    }
    wide = {**gate, "compared_item_count": 400, "min_detectable_regression": 0.0431}
    for reason, clause in (
        (gate, "5 compared items detect no drop at 80% power"),
        (wide, "smallest detectable drop 0.043 at 80% power"),
    ):
        report = _report(_run(passed=True, verdict_reasons=[reason]))
        assert clause in render_markdown(report)
        (suite,) = list(_junit(tmp_path, report))
        properties = {p.name: p.value for p in suite.properties()}
        assert properties["pawl.gate.1"].endswith(clause)
        console = Console(width=200, record=True)
        print_comparison(console, report.comparison)
        assert clause in console.export_text()


# --- whether the results are read ---------------------------------------------------------


class _CountingClient:
    """What ``gather_report`` asks of a client, counted; every item passed."""

    def __init__(self) -> None:
        self.result_reads = 0

    def get_eval(self, eval_id: str) -> dict[str, Any]:
        return {"name": EVAL_NAME, "trial_reducer": "all"}

    def iter_results(self, eval_id: str, run_id: str) -> Any:
        self.result_reads += 1
        yield _row("dsi_pass", 1, passed=True)


def _all_passed(**changes: Any) -> Run:
    counts = {"item_count": 3, "passed_count": 3, "failed_count": 0, "errored_count": 0}
    return _run(**{"baseline_run_id": None, "passed": True, **counts, **changes})


def test_a_run_whose_every_item_passed_needs_no_results_in_the_terminal() -> None:
    assert not items_needed(_all_passed(), ReportTargets(), summary=False)


@pytest.mark.parametrize(
    ("changes", "targets", "summary"),
    [
        ({"failed_count": 1, "passed_count": 2}, ReportTargets(), False),
        ({"errored_count": 1, "passed_count": 2}, ReportTargets(), False),
        ({"passed_count": None, "failed_count": None}, ReportTargets(), False),  # an old run
        ({"passed_count": 2}, ReportTargets(), False),  # counts that do not add up
        ({"status": "failed"}, ReportTargets(), False),
        ({"baseline_run_id": "evrun_base000000000001"}, ReportTargets(), False),  # flips
        ({}, ReportTargets(junit=Path("j.xml")), False),
        ({}, ReportTargets(markdown=Path("m.md")), False),
        ({}, ReportTargets(github_output=Path("out")), False),
        ({}, ReportTargets(), True),  # the job summary lists the items
    ],
    ids=[
        "failed",
        "errored",
        "old-run",
        "short-count",
        "not-completed",
        "baseline",
        "junit",
        "markdown",
        "github-output",
        "job-summary",
    ],
)
def test_the_results_are_read_whenever_a_report_could_show_an_item(
    changes: dict[str, Any], targets: ReportTargets, summary: bool
) -> None:
    assert items_needed(_all_passed(**changes), targets, summary)


def test_gather_report_reads_the_results_only_when_asked() -> None:
    client = _CountingClient()
    skipped = gather_report(client, "http://x", _all_passed(), with_items=False)  # type: ignore[arg-type]
    assert client.result_reads == 0 and skipped.items == ()
    read = gather_report(client, "http://x", _all_passed())  # type: ignore[arg-type]
    assert client.result_reads == 1 and [i.outcome for i in read.items] == [PASSED]
