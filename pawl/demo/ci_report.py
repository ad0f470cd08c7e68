"""``pawl run``'s report of a finished run: read through the API (the eval, every result,
the flipped items from the comparison endpoint), printed as the items that did not pass,
and written as ``--junit`` / ``--markdown`` files, the GitHub job summary and step outputs.
"""

from __future__ import annotations

from collections.abc import Iterator

from rich.console import Console
from rich.text import Text

from chalicelib.domain import console_links
from chalicelib.domain.runs import COMPLETED
from pawl.demo.ci_items import (
    ERRORED,
    FAILED,
    IMPROVED,
    REGRESSED,
    CiReport,
    ItemReport,
    item_reports,
)
from pawl.demo.ci_junit import render_junit
from pawl.demo.ci_markdown import render_markdown
from pawl.demo.ci_outputs import ReportTargets as ReportTargets
from pawl.demo.ci_outputs import append_github_outputs, append_step_summary, write_report
from pawl.demo.summary import build_comparison
from pawl.transport import PawlClient, Run

#: Items per page of list-eval-results and of the comparison's items (the API's most).
PAGE = 100
#: Lines each list prints in a terminal before it says how many more there are.
MAX_LINES = 20


def iter_flips(client: PawlClient, run: Run) -> Iterator[tuple[str, str]]:
    """(item id, REGRESSED or IMPROVED) for each item whose verdict moved, from the API's
    comparison of the run with its baseline (the same reduction the figures use)."""
    path = f"/api/v1/evals/{run.eval_id}/runs/{run.id}/comparison"
    cursor: str | None = None
    while True:
        params: dict[str, str | int] = {"changed": "true", "limit": PAGE}
        if cursor:
            params["cursor"] = cursor
        page = client.send("GET", path, params=params)["items"]
        for item in page["data"]:
            if item["kind"] in (REGRESSED, IMPROVED):
                yield item["dataset_item_id"], item["kind"]
        cursor = page.get("next_cursor")
        if not cursor:
            return


def every_item_passed(run: Run) -> bool:
    """Whether the run's counters say every result row passed (no failed or errored trial,
    so no item to name, whatever the trial reducer); False when it cannot tell."""
    return (
        run.status == COMPLETED
        and run.failed_count == 0
        and run.errored_count == 0
        and run.passed_count == run.item_count
    )


def items_needed(run: Run, targets: ReportTargets, summary: bool) -> bool:
    """Whether the report must read the run's results: a file or job summary lists every
    item, a baseline may have flipped some, and an item that did not pass is named. A run
    whose every item passed, reported in the terminal only, has nothing to list (reading
    1,000 results to print no line took most of the command's time after the run)."""
    return targets.asked or summary or bool(run.baseline_run_id) or not every_item_passed(run)


def gather_report(
    client: PawlClient,
    server: str,
    run: Run,
    baseline_note: str | None = None,
    *,
    with_items: bool = True,
) -> CiReport:
    """Everything a report shows about ``run``, read through the API (its items only
    ``with_items``: see :func:`items_needed`)."""
    evaluation = client.get_eval(run.eval_id)
    flips = dict(iter_flips(client, run)) if run.baseline_run_id else {}
    reducer = str(evaluation.get("trial_reducer") or "all")
    items = (
        item_reports(client.iter_results(run.eval_id, run.id), reducer, flips) if with_items else ()
    )
    compare = console_links.compare_url(server, run.eval_id, run.id)
    baseline = client.get_run(run.eval_id, run.baseline_run_id) if run.baseline_run_id else None
    return CiReport(
        eval_id=run.eval_id,
        eval_name=str(evaluation.get("name") or run.eval_id),
        comparison=build_comparison(run, baseline),
        items=items,
        console_url=console_links.run_url(server, run.eval_id, run.id),
        compare_url=compare if run.baseline_run_id else None,
        baseline_note=baseline_note,
    )


def _item_line(item: ItemReport) -> Text:
    mark = {FAILED: "✗", ERRORED: "!"}.get(item.outcome, "✓")
    flip = f" [{item.flip}]" if item.flip else ""
    reason = f": {item.reason}" if item.reason else ""
    return Text(f"  {mark} {item.label}{flip}{reason}", no_wrap=False)


def _print_list(console: Console, title: str, items: list[ItemReport]) -> None:
    if not items:
        return
    console.print()
    console.print(Text(f"{title} ({len(items)}):"))
    for item in items[:MAX_LINES]:
        console.print(_item_line(item), soft_wrap=True)
    if len(items) > MAX_LINES:
        console.print(Text(f"  …and {len(items) - MAX_LINES} more: see the run's page"))


def print_items(console: Console, report: CiReport) -> None:
    """The flipped items, then the other items that failed or errored, by name. Each line
    is a ``Text``: questions and reasoning are tenant text, never console markup."""
    _print_list(console, "Flipped items", report.flipped)
    others = [item for item in report.items if item.flip is None]
    _print_list(console, "Failed items", [i for i in others if i.outcome == FAILED])
    _print_list(console, "Errored items", [i for i in others if i.outcome == ERRORED])


def step_outputs(run: Run, console_url: str, targets: ReportTargets) -> dict[str, str]:
    """The action's outputs: ``passed`` is ``true``/``false``, empty when there is no
    verdict (the run did not complete, or no gate applies)."""
    verdict = run.passed if run.status == COMPLETED else None
    outputs = {
        "passed": {True: "true", False: "false", None: ""}[verdict],
        "status": run.status,
        "run-id": run.id,
        "console-url": console_url,
    }
    if targets.junit is not None:
        outputs["junit"] = str(targets.junit)
    if targets.markdown is not None:
        outputs["markdown"] = str(targets.markdown)
    return outputs


def write_reports(console: Console, report: CiReport, run: Run, targets: ReportTargets) -> None:
    """The files asked for, the job summary when GitHub names one, and step outputs."""
    if targets.junit is not None:
        write_report(targets.junit, render_junit(report))
        console.print(Text(f"junit {targets.junit}"))
    markdown = render_markdown(report)
    if targets.markdown is not None:
        write_report(targets.markdown, markdown)
        console.print(Text(f"markdown {targets.markdown}"))
    summary = append_step_summary(markdown)
    if summary is not None:
        console.print(Text(f"job summary appended to {summary}"))
    if targets.github_output is not None:
        append_github_outputs(targets.github_output, step_outputs(run, report.console_url, targets))
