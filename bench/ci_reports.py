"""How long ``pawl run``'s reports take to build and how big they are, for a large run.

Pure work only (no server): ``N`` result rows shaped as ``list-eval-results`` returns them
(one trial each; a share failing with a reasoning, a share errored, a share flipped) are
reduced to items (:func:`pawl.demo.ci_items.item_reports`) and rendered as JUnit and
Markdown. Reading the rows is the API's cost, one request per 100 (docs/ci.md).

    python bench/ci_reports.py [N]      # default 100,000
"""

from __future__ import annotations

import sys
import time
from typing import Any

from pawl.demo.ci_items import IMPROVED, REGRESSED, CiReport, item_reports
from pawl.demo.ci_junit import render_junit
from pawl.demo.ci_markdown import render_markdown
from pawl.demo.summary import build_comparison
from pawl.transport import Run


def rows(count: int) -> list[dict[str, Any]]:
    """Every 3rd item fails (with a reasoning), every 100th errors."""
    made = []
    for n in range(count):
        errored, passed = n % 100 == 0, n % 3 != 0
        scores = (
            []
            if errored
            else [
                {
                    "scorer": "judge",
                    "score": 0.9 if passed else 0.1,
                    "passed": passed,
                    "reasoning": None if passed else f"answer {n} misses the <point> | `x`",
                },
            ]
        )
        made.append(
            {
                "dataset_item_id": f"dsit_{n:016d}",
                "trial": 1,
                "input": [
                    {"role": "user", "content": f"question number {n}: how do I do thing {n}?"}
                ],
                "output": f"an answer of about a hundred characters for item {n} " * 2,
                "scores": scores,
                "passed": None if errored else passed,
                "error": {"code": "AGENT_TIMEOUT", "message": "no answer"} if errored else None,
            }
        )
    return made


def _timed(label: str, work: Any, *args: Any) -> Any:
    started = time.perf_counter()
    result = work(*args)
    print(f"{label:<28} {time.perf_counter() - started:8.3f} s")
    return result


def main(count: int) -> None:
    results = rows(count)
    flips = {f"dsit_{n:016d}": (REGRESSED if n % 3 == 0 else IMPROVED) for n in range(0, count, 50)}
    run = Run.model_validate(
        {
            "id": "evrun_bench",
            "eval_id": "eval_bench",
            "agent_version": 2,
            "status": "completed",
            "baseline_run_id": "evrun_base",
            "passed": False,
        }
    )
    print(f"{count:,} items, {len(flips):,} flipped")
    items = _timed("item_reports", item_reports, results, "all", flips)
    report = CiReport("eval_bench", "bench", build_comparison(run), items, "http://x/run", None)
    junit = _timed("render_junit", render_junit, report)
    markdown = _timed("render_markdown", render_markdown, report)
    print(f"{'JUnit size':<28} {len(junit.encode()) / 1e6:8.1f} MB")
    print(f"{'Markdown size':<28} {len(markdown.encode()) / 1e3:8.1f} kB")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
