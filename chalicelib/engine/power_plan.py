"""The planner: how many compared items an eval needs, and what its dataset can detect.

It reads one page of the eval's newest runs (``by_eval``, newest first, one Query) and the
dataset's size (a COUNT Query), picks the figures the plan starts from, and hands them to
the pure :mod:`chalicelib.stats.power`. Where the figures come from, newest first:

1. ``comparison``: the newest completed run with a baseline comparison that compared
   items. Its noise is the share of compared items that flipped either way, or, when the
   run carries the trials' noise floor (``aggregate_scores.trials.noise_floor.flip_rate``),
   that flip rate over the eval's trials.
2. ``run``: the newest completed run without one. Its noise floor if it has one, else the
   discordance two independent runs at its pass rate ``p`` would show, ``2p(1 - p)``: an
   upper bound for an agent whose outcomes are not independent of the item, so the plan
   errs towards more items.
3. ``assumption``: no completed run yet. ``p = 0.5``, the largest discordance
   (``2p(1 - p) = 0.5``): the most items any eval of this size could need.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chalicelib.domain.catalog import Eval
from chalicelib.domain.runs import EvalRun
from chalicelib.stats import power as stats_power
from chalicelib.store import datasets
from chalicelib.store.pagination import Window
from chalicelib.store.run_lists import list_runs

#: How many of the eval's newest runs are looked at for a completed one.
RUNS_READ = 20
DEFAULT_MARGIN = 0.05
DEFAULT_ALPHA = 0.05
DEFAULT_POWER = 0.8
#: The conservative pass rate with nothing to go on (the largest discordance 2p(1-p)).
ASSUMED_PASS_RATE = 0.5


@dataclass(frozen=True)
class PlanInputs:
    """What the plan was computed from, as the answer reports it."""

    source: str  # comparison | run | assumption
    noise_discordance: float
    noise_from: str  # discordance | noise_floor | independent_outcomes | assumption
    trials: int
    runs_considered: int
    run_id: str | None = None
    baseline_run_id: str | None = None
    pass_rate: float | None = None
    discordance: float | None = None
    flip_rate: float | None = None
    compared_item_count: int | None = None


def _flip_rate(aggregate: dict[str, Any]) -> float | None:
    """The trials' noise floor, where the run reports one (another part adds it)."""
    trials = aggregate.get("trials")
    floor = trials.get("noise_floor") if isinstance(trials, dict) else None
    rate = floor.get("flip_rate") if isinstance(floor, dict) else None
    if isinstance(rate, int | float) and not isinstance(rate, bool) and 0 <= rate <= 1:
        return float(rate)
    return None


def _compared(aggregate: dict[str, Any]) -> int:
    baseline = aggregate.get("baseline")
    if not isinstance(baseline, dict):
        return 0
    return int(baseline.get("compared_item_count") or 0)


def inputs_from_run(run: EvalRun, trials: int, considered: int) -> PlanInputs:
    aggregate = run.aggregate_scores or {}
    pass_rate = aggregate.get("pass_rate")
    flip_rate = _flip_rate(aggregate)
    compared = _compared(aggregate)
    common: dict[str, Any] = {
        "trials": trials,
        "runs_considered": considered,
        "run_id": run.id,
        "pass_rate": pass_rate,
        "flip_rate": flip_rate,
    }
    discordance = None
    if compared:
        baseline = aggregate["baseline"]
        flipped = baseline.get("flipped") or {}
        flips = int(flipped.get("improved", 0)) + int(flipped.get("regressed", 0))
        discordance = flips / compared
        common |= {
            "source": "comparison",
            "baseline_run_id": run.baseline_run_id,
            "discordance": discordance,
            "compared_item_count": compared,
        }
    else:
        common["source"] = "run"
    if flip_rate is not None and trials > 1:
        noise, noise_from = stats_power.noise_from_trials(flip_rate, trials), "noise_floor"
    elif discordance is not None:
        noise, noise_from = discordance, "discordance"
    else:
        rate = float(pass_rate) if pass_rate is not None else ASSUMED_PASS_RATE
        noise, noise_from = 2 * rate * (1 - rate), "independent_outcomes"
    return PlanInputs(noise_discordance=noise, noise_from=noise_from, **common)


def plan_inputs(evaluation: Eval) -> PlanInputs:
    """The figures of the eval's newest usable run (module docstring), or the assumption."""
    newest = list_runs(evaluation.id, Window(limit=RUNS_READ)).items
    completed = [run for run in newest if run.status == "completed"]
    for run in completed:
        if _compared(run.aggregate_scores or {}):
            return inputs_from_run(run, evaluation.trials, len(completed))
    if completed:
        return inputs_from_run(completed[0], evaluation.trials, len(completed))
    noise = 2 * ASSUMED_PASS_RATE * (1 - ASSUMED_PASS_RATE)
    return PlanInputs(
        source="assumption",
        noise_discordance=noise,
        noise_from="assumption",
        trials=evaluation.trials,
        runs_considered=0,
        pass_rate=ASSUMED_PASS_RATE,
    )


@dataclass(frozen=True)
class Plan:
    margin: float
    margin_from: str  # query | eval.max_regression | default
    alpha: float
    power: float
    inputs: PlanInputs
    items_needed: int | None
    dataset_item_count: int
    min_detectable_regression: float | None
    method: str
    explanation: str


def _explain(plan_needed: int | None, mdr: float | None, n: int, **f: Any) -> str:
    noise = f"{f['noise']:.3f}"
    needed = (
        f"{plan_needed} compared items detect a pass-rate drop of {f['margin']:g}"
        if plan_needed is not None
        else f"no practical number of items detects a drop of {f['margin']:g}"
    )
    items = f"{n} item" if n == 1 else f"{n} items"
    detects = (
        f"the dataset's {items} detect drops of {mdr:.4f} or more"
        if mdr is not None
        else f"the dataset's {items} detect no drop"
    )
    return (
        f"With noise discordance {noise} ({f['noise_from']}, source: {f['source']}), "
        f"{needed} with a two-sided McNemar test at alpha {f['alpha']:g} and power "
        f"{f['power']:g}; {detects} (Connor 1987)."
    )


def plan(evaluation: Eval, margin: float | None, alpha: float | None, power: float | None) -> Plan:
    """The planner's answer for ``evaluation`` (defaults: the module's constants)."""
    if margin is not None:
        chosen, margin_from = margin, "query"
    elif evaluation.max_regression is not None and 0 < evaluation.max_regression < 1:
        chosen, margin_from = float(evaluation.max_regression), "eval.max_regression"
    else:
        chosen, margin_from = DEFAULT_MARGIN, "default"
    alpha = DEFAULT_ALPHA if alpha is None else alpha
    power = DEFAULT_POWER if power is None else power
    inputs = plan_inputs(evaluation)
    noise = inputs.noise_discordance
    needed = stats_power.items_needed(chosen, noise, alpha, power)
    size = datasets.dataset_size(evaluation.dataset_id)
    mdr = stats_power.min_detectable_regression(size, noise, alpha, power)
    method = stats_power.METHOD
    if inputs.noise_from == "noise_floor":
        method = stats_power.TRIALS_METHOD
    explanation = _explain(
        needed,
        mdr,
        size,
        noise=noise,
        noise_from=inputs.noise_from,
        source=inputs.source,
        margin=chosen,
        alpha=alpha,
        power=power,
    )
    return Plan(chosen, margin_from, alpha, power, inputs, needed, size, mdr, method, explanation)
