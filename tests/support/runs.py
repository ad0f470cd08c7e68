"""Building blocks for run-engine tests: an eval over a scripted dataset, real test plugins.

Everything goes through the real API and real plugins: ``EventLog`` is a sink plugin and
``ProbeScorer`` a scorer plugin, registered on a real :class:`PluginHost` and installed
with ``wiring.install_plugins(host)``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Literal

from chalicelib import wiring
from chalicelib.domain.events import LifecycleEvent
from chalicelib.plugins.manager import PluginHost
from chalicelib.plugins.markers import hookimpl
from chalicelib.scoring.contract import (
    ItemContext,
    ScoreOutcome,
    ScorerConfig,
    ScorerFailed,
    ScoringEnv,
)

SCRIPTED = "tests.support.agents:scripted"
PROBE = [{"type": "probe"}]


# --- plugins ---------------------------------------------------------------------------------


class EventLog:
    """A sink plugin that keeps every lifecycle event it is handed."""

    def __init__(self) -> None:
        self.events: list[LifecycleEvent] = []
        self._lock = threading.Lock()

    @hookimpl
    def pawl_deliver_event(self, event: LifecycleEvent) -> None:
        with self._lock:
            self.events.append(event)

    def of(self, run_id: str) -> list[str]:
        with self._lock:
            return [e.event for e in self.events if e.resource_id == run_id]


class ProbeConfig(ScorerConfig):
    type: Literal["probe"] = "probe"


class ProbeScorer:
    """Passes when the output equals the expected output. Its failure modes, by output:

    - contains ``unscorable``: raises :class:`ScorerFailed` (code ``PROBE_UNDECIDED``);
    - contains ``crash-once``: raises ``RuntimeError`` the first time per (run, item);
    - contains ``crash-always``: raises ``RuntimeError`` every time.
    """

    type = "probe"
    config_model = ProbeConfig
    named = False
    calls_out = False  # scores in-process: a cancelled run's in-flight items are scored

    def __init__(self) -> None:
        self.crashed: set[tuple[str | None, str | None]] = set()
        self._lock = threading.Lock()

    def check(self, config: ScorerConfig, env: Any) -> None:
        return None

    def score(self, config: ScorerConfig, item: ItemContext, env: ScoringEnv) -> ScoreOutcome:
        output = item.output or ""
        if "unscorable" in output:
            raise ScorerFailed("the probe cannot decide", code="PROBE_UNDECIDED")
        if "crash-always" in output:
            raise RuntimeError("probe crashed")
        if "crash-once" in output:
            with self._lock:
                key = (env.run_id, env.dataset_item_id)
                first = key not in self.crashed
                self.crashed.add(key)
            if first:
                raise RuntimeError("probe crashed (transient)")
        passed = output == item.expected
        return ScoreOutcome(score=1.0 if passed else 0.0, passed=passed)


class ProbePlugin:
    def __init__(self) -> None:
        self.scorer = ProbeScorer()

    @hookimpl
    def pawl_register_scorers(self) -> list[Any]:
        return [self.scorer]


class HostWith(PluginHost):
    """A real plugin host whose "installed" plugins are the given objects.

    It takes the place of entry-point discovery (which would find whatever happens to be
    pip-installed), so the extra plugins register exactly where an installed one would:
    after the built-ins, before the scorer and adapter tables are collected.
    """

    def __init__(self, *extra: object) -> None:
        self._extra = extra
        super().__init__(wiring.builtin_plugins(), load_entry_points=True)

    def _load_entry_points(self) -> None:
        for plugin in self._extra:
            self.pm.register(plugin)


@dataclass
class Plugins:
    events: EventLog
    probe: ProbePlugin


def install_test_plugins() -> Plugins:
    """Install a plugin host with an event log and the probe scorer; returns both."""
    events, probe = EventLog(), ProbePlugin()
    wiring.install_plugins(HostWith(events, probe))
    return Plugins(events, probe)


# --- resources through the API ------------------------------------------------------------


@dataclass
class Suite:
    project: dict[str, Any]
    agent: dict[str, Any]
    dataset: dict[str, Any]
    eval: dict[str, Any]
    items: list[dict[str, Any]] = field(default_factory=list)

    @property
    def runs_path(self) -> str:
        return f"/api/v1/evals/{self.eval['id']}/runs"

    def run_path(self, run_id: str) -> str:
        return f"{self.runs_path}/{run_id}"


def _ok(response: Any, status: int = 201) -> Any:
    assert response.status == status, response
    return response.json


def make_agent(api: Any, project: dict[str, Any], name: str = "scripted", **extra: Any) -> Any:
    body = {"project_id": project["id"], "name": name, "type": "python"}
    body["config"] = extra.pop("config", {"callable": SCRIPTED})
    return _ok(api.post("/api/v1/agents", {**body, **extra}))


def make_item(
    api: Any, dataset_id: str, text: str, expected: str | None = None, **extra: Any
) -> Any:
    body = {"input": [{"role": "user", "content": text}], "expected_output": expected, **extra}
    return _ok(api.post(f"/api/v1/datasets/{dataset_id}/items", body))


def make_suite(
    api: Any,
    project: dict[str, Any],
    cases: list[tuple[str, str | None] | tuple[str, str | None, dict[str, Any]]],
    name: str = "suite",
    **eval_fields: Any,
) -> Suite:
    """An agent, a dataset with one item per ``(text, expected[, metadata])`` case, an eval."""
    agent = make_agent(api, project, name=f"{name}-agent")
    dataset = _ok(api.post("/api/v1/datasets", {"project_id": project["id"], "name": name}))
    items = []
    for case in cases:
        metadata = case[2] if len(case) > 2 else {}  # type: ignore[misc]
        items.append(make_item(api, dataset["id"], case[0], case[1], metadata=metadata))
    body = {
        "project_id": project["id"],
        "name": name,
        "agent_id": agent["id"],
        "dataset_id": dataset["id"],
        "scorers": eval_fields.pop("scorers", PROBE),
        **eval_fields,
    }
    evaluation = _ok(api.post("/api/v1/evals", body))
    return Suite(project, agent, dataset, evaluation, items)


def all_results(api: Any, suite: Suite, run_id: str, limit: int = 100) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    cursor = None
    for _ in range(1000):
        url = f"{suite.run_path(run_id)}/results?limit={limit}"
        page = _ok(api.get(url + (f"&cursor={cursor}" if cursor else "")), 200)
        found += page["data"]
        cursor = page["next_cursor"]
        if cursor is None:
            return found
    raise AssertionError("results never ended")


def result_row_count(run_id: str) -> int:
    from chalicelib.store import results

    return sum(1 for _ in results.iter_result_keys(run_id))


def assert_counters_match_rows(run: dict[str, Any]) -> None:
    assert run["completed_count"] + run["errored_count"] == result_row_count(run["id"]), run
