"""The demo's spend step: the usage API's rollup of the eval, checked against the runs.

``GET /api/v1/usage/aggregate?group_by=source&eval_id=…`` must say what the runs' own
``aggregate_scores.usage`` says, source by source: the events are written with the results.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import Console

from pawl.transport import PawlClient, Run

#: Each run's and each rollup's cost is rounded to a millionth of a dollar.
COST_TOLERANCE = 5e-6


def runs_usage(runs: Iterable[Run]) -> dict[str, dict[str, float]]:
    """The runs' ``aggregate_scores.usage.by_source``, summed over the runs."""
    summed: dict[str, dict[str, float]] = {}
    for run in runs:
        by_source = ((run.aggregate_scores or {}).get("usage") or {}).get("by_source") or {}
        for source, figures in by_source.items():
            into = summed.setdefault(source, {"calls": 0, "cost_usd": 0.0})
            into["calls"] += figures["calls"]
            into["cost_usd"] += figures["cost_usd"]
    return summed


def mismatches(groups: list[dict[str, Any]], expected: dict[str, dict[str, float]]) -> list[str]:
    """What differs between the rollup's groups and the runs' usage (empty: they agree)."""
    found = {str(g["key"]): g for g in groups}
    problems = []
    for source in sorted(set(found) | set(expected)):
        group, runs = found.get(source), expected.get(source)
        if group is None or runs is None:
            problems.append(f"{source}: only in the {'runs' if group is None else 'usage API'}")
        elif group["event_count"] != runs["calls"]:
            problems.append(f"{source}: {group['event_count']} events, {runs['calls']} calls")
        elif abs(group["cost_usd"] - runs["cost_usd"]) > COST_TOLERANCE:
            problems.append(f"{source}: ${group['cost_usd']} != ${runs['cost_usd']:.6f}")
    return problems


def rolled_up(client: PawlClient, eval_ids: Iterable[str]) -> list[dict[str, Any]]:
    """``/usage/aggregate?group_by=source`` of each eval, the groups summed over the evals."""
    summed: dict[str, dict[str, Any]] = {}
    for eval_id in eval_ids:
        params = {"group_by": "source", "eval_id": eval_id}
        for group in client.send("GET", "/api/v1/usage/aggregate", params=params)["groups"]:
            into = summed.setdefault(str(group["key"]), {"key": group["key"]})
            for figure in ("event_count", "input_tokens", "output_tokens", "cost_usd"):
                into[figure] = into.get(figure, 0) + group[figure]
    return [summed[key] for key in sorted(summed)]


def print_spend(
    client: PawlClient, console: Console, runs_by_eval: dict[str, list[Run]]
) -> list[str]:
    """Print the demo's spend by source from the usage API; returns any disagreement with
    the runs' own usage."""
    groups = rolled_up(client, runs_by_eval)
    for group in groups:
        console.print(
            f"spend     {group['key']}: ${group['cost_usd']:.6f} over {group['event_count']} "
            f"calls ({group['input_tokens']} tokens in, {group['output_tokens']} out)",
            highlight=False,
        )
    every_run = [run for runs in runs_by_eval.values() for run in runs]
    problems = mismatches(groups, runs_usage(every_run))
    verdict = "equals the runs' own usage" if not problems else "; ".join(problems)
    console.print(f"spend     /usage/aggregate?group_by=source {verdict}", highlight=False)
    return problems
