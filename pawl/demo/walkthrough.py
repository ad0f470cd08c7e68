"""``pawl demo``: drive a running pawl through its HTTP API, the way a user would.

With the admin key it creates (or finds) the demo project and mints a project key; with
that key it creates the support agent (v1, then a PUT that makes v2), the dataset, and an
eval with deterministic scorers, a threshold, grouping and a regression gate. It runs v1,
then v2 against v1 as the baseline, following each with a progress bar, prints the
comparison and writes the HTML report. Everything goes over HTTP to ``runtime_url``, so
the demo works the same against ``pawl serve``, an embedded runtime or a deployment.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import track

from chalicelib.domain import console_links
from pawl.demo import judge, spend
from pawl.demo.cases import dataset_items, eval_scorers
from pawl.demo.comparison import make_console, print_comparison
from pawl.demo.flips import fetch_flips
from pawl.demo.progress import DEFAULT_RUN_TIMEOUT_S, follow_run
from pawl.demo.report import write_report
from pawl.demo.summary import build_comparison
from pawl.transport import ApiError, Json, PawlClient, Run, RunWaitTimeout, ServerUnreachable

DEMO_PROJECT = "pawl-demo"
#: The demo's python agent module: the runtime ``pawl demo`` starts allow-lists it (and only
#: it) in ``PAWL_PYTHON_AGENT_MODULES``; a server the demo is pointed at must list it too.
AGENT_MODULE = "pawl.demo.agent"
AGENT_V1 = f"{AGENT_MODULE}:answer_v1"
AGENT_V2 = f"{AGENT_MODULE}:answer_v2"
DEFAULT_REPORT = Path("pawl-report.html")
REPORT_TITLE = "pawl demo: support agent v1 → v2"
#: Cases in ``--quick`` mode (spread over every kind; see ``cases.sample_indices``).
QUICK_CASES = 12
PASS_THRESHOLD = 0.8
MAX_REGRESSION = 0.05
GROUP_BY = "kind"
#: Bounded retries of a name the API already has (a demo re-run on a kept state dir).
NAME_ATTEMPTS = 20


class DemoFailed(RuntimeError):
    """A demo step could not be done; the message says which and why."""


@dataclass(frozen=True)
class DemoOptions:
    report_path: Path = DEFAULT_REPORT
    quick: bool = False
    run_timeout_s: float = DEFAULT_RUN_TIMEOUT_S
    #: The demo judge's base URL (``demo.judge``): the eval adds an ``llm_judge`` scorer.
    judge_url: str | None = None


@dataclass(frozen=True)
class DemoResult:
    project: Json
    api_key: Json
    eval: Json
    baseline: Run
    candidate: Run
    report_path: Path


def _with_free_name(create: Callable[[Json], Json], body: Json) -> Json:
    """Create with ``body["name"]``, or ``name 2``, ``name 3``... when the name is taken."""
    base = body["name"]
    for attempt in range(1, NAME_ATTEMPTS + 1):
        name = base if attempt == 1 else f"{base} {attempt}"
        try:
            return create({**body, "name": name})
        except ApiError as exc:
            if exc.code != "NAME_CONFLICT":
                raise
    raise DemoFailed(f"no free name for {base!r} after {NAME_ATTEMPTS} attempts")


def _project_and_key(url: str, admin_key: str, console: Console) -> tuple[Json, Json]:
    with PawlClient(url, admin_key) as admin:
        admin.health()
        project = admin.ensure_project(DEMO_PROJECT)
        key = admin.create_api_key(project["id"], "demo")
    console.print(f"project   {project['id']}  ({project['name']})", highlight=False)
    console.print(f"api key   {key['id']}  secret {key['key']}  (shown once)", highlight=False)
    return project, key


def _agent(client: PawlClient, console: Console) -> Json:
    body = {"name": "support-agent", "type": "python", "config": {"callable": AGENT_V1}}
    agent = _with_free_name(client.create_agent, body)
    updated = client.update_agent(agent["id"], {"config": {"callable": AGENT_V2}})
    console.print(
        f"agent     {agent['id']}  v{agent['version']} {AGENT_V1} → "
        f"v{updated['version']} {AGENT_V2}",
        highlight=False,
    )
    return updated


def _dataset(client: PawlClient, console: Console, quick: bool) -> Json:
    items = dataset_items(QUICK_CASES if quick else None)
    dataset = _with_free_name(
        client.create_dataset,
        {"name": "support-cases", "description": "Acme support questions and the fact to name"},
    )
    for item in track(items, description="adding cases", console=console, transient=True):
        client.add_item(dataset["id"], item)
    kinds = Counter(item["metadata"][GROUP_BY] for item in items)
    spread = ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items()))
    console.print(f"dataset   {dataset['id']}  {len(items)} cases ({spread})", highlight=False)
    return dataset


def _tone_run(
    client: PawlClient, console: Console, agent: Json, dataset: Json, options: DemoOptions
) -> tuple[str, Run] | None:
    """A second eval grading v2's tone with the demo judge (``llm_judge``), run once.

    Its own eval, so the main eval needs nothing that lives only while the demo runs: the
    demo judge is served by ``pawl demo`` alone.
    """
    if options.judge_url is None:
        return None
    body = {"name": "demo-judge", "base_url": options.judge_url, "default_model": judge.MODEL}
    provider = _with_free_name(lambda b: client.send("POST", "/api/v1/ai-providers", body=b), body)
    scorer = {
        "type": "llm_judge",
        "prompt": judge.PROMPT,
        "ai_provider_id": provider["id"],
        "pass_threshold": judge.PASS_THRESHOLD,
    }
    tone = {"agent_id": agent["id"], "dataset_id": dataset["id"], "scorers": [scorer]}
    evaluation = _with_free_name(client.create_eval, {"name": "support-tone", **tone})
    console.print(
        f"eval      {evaluation['id']}  scorers llm_judge (the demo's tone judge)", highlight=False
    )
    return evaluation["id"], _run(client, console, evaluation["id"], 2, options.run_timeout_s)


def _eval(client: PawlClient, console: Console, agent: Json, dataset: Json) -> Json:
    body = {
        "name": "support-quality",
        "agent_id": agent["id"],
        "dataset_id": dataset["id"],
        "scorers": eval_scorers(),
        "pass_threshold": PASS_THRESHOLD,
        "group_by": GROUP_BY,
        "max_regression": MAX_REGRESSION,
    }
    evaluation = _with_free_name(client.create_eval, body)
    scorers = ", ".join(scorer["type"] for scorer in evaluation["scorers"])
    console.print(
        f"eval      {evaluation['id']}  scorers {scorers}; pass_threshold {PASS_THRESHOLD}, "
        f"group_by {GROUP_BY}, max_regression {MAX_REGRESSION}",
        highlight=False,
    )
    return evaluation


def _run(
    client: PawlClient, console: Console, eval_id: str, version: int, timeout_s: float, **start: Any
) -> Run:
    queued = client.start_run(eval_id, agent_version=version, **start)
    label = f"run v{version} {queued.id}"
    finished = follow_run(client, queued, console=console, label=label, timeout_s=timeout_s)
    if finished.status != "completed":
        reason = finished.failure_reason or "no reason given"
        raise DemoFailed(f"run {finished.id} (v{version}) ended {finished.status}: {reason}")
    return finished


def _walkthrough(
    url: str, project_key: str, options: DemoOptions, console: Console
) -> tuple[Json, Run, Run]:
    """The eval, its v1 (baseline) run and its v2 (candidate) run."""
    with PawlClient(url, project_key) as client:
        agent = _agent(client, console)
        dataset = _dataset(client, console, options.quick)
        evaluation = _eval(client, console, agent, dataset)
        eval_id, timeout_s = evaluation["id"], options.run_timeout_s
        baseline = _run(client, console, eval_id, 1, timeout_s)
        candidate = _run(client, console, eval_id, 2, timeout_s, baseline_run_id=baseline.id)
        runs_by_eval = {eval_id: [baseline, candidate]}
        tone = _tone_run(client, console, agent, dataset, options)
        if tone is not None:
            runs_by_eval[tone[0]] = [tone[1]]
        problems = spend.print_spend(client, console, runs_by_eval)
    if problems:
        raise DemoFailed(f"the usage API disagrees with the runs' usage: {'; '.join(problems)}")
    return evaluation, baseline, candidate


def run_demo(
    runtime_url: str,
    admin_key: str,
    options: DemoOptions | None = None,
    *,
    console: Console | None = None,
) -> DemoResult:
    """The whole walkthrough over HTTP; :class:`DemoFailed` names the step that failed."""
    options = options or DemoOptions()
    console = console or make_console()
    try:
        project, key = _project_and_key(runtime_url, admin_key, console)
        evaluation, baseline, candidate = _walkthrough(runtime_url, key["key"], options, console)
    except (ApiError, ServerUnreachable, RunWaitTimeout) as exc:
        raise DemoFailed(str(exc)) from exc
    console.print()
    comparison = build_comparison(candidate, baseline)
    print_comparison(console, comparison)
    try:
        with PawlClient(runtime_url, key["key"]) as client:
            flips = fetch_flips(client, candidate, baseline)
    except (ApiError, ServerUnreachable) as exc:
        raise DemoFailed(f"reading the runs' results for the report: {exc}") from exc
    report = write_report(options.report_path, comparison, title=REPORT_TITLE, flips=flips)
    console.print(f"\nreport    {report}", highlight=False, soft_wrap=True)
    return DemoResult(project, key, evaluation, baseline, candidate, report)


def demo_links(url: str, result: DemoResult) -> list[str]:
    """What ``pawl demo --keep-running`` prints while it serves: the console's comparison of
    the candidate with its baseline, the project key to sign in with, and the API's runs."""
    eval_id, key = result.eval["id"], result.api_key["key"]
    return [
        f"compare: {console_links.compare_url(url, eval_id, result.candidate.id)}",
        f"         (sign in at {url}/console/ with the project key {key})",
        f"try: curl -H 'Authorization: Bearer {key}' {url}/api/v1/evals/{eval_id}/runs",
    ]
