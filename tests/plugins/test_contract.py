"""The plugin contract as written: every hook spec states ``firstresult``, and the
baseline hook hands a plugin pawl's domain types (copies) and honours its refusal."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import pytest

from chalicelib import wiring
from chalicelib.domain.catalog import Eval
from chalicelib.domain.runs import EvalRun
from chalicelib.plugins import hookspecs
from chalicelib.plugins.markers import hookimpl
from tests.support.runs import EventLog, HostWith, ProbePlugin, make_suite

STOPS_AT_FIRST = "Stops at first non-None result"
NOT_FIRSTRESULT = "Not ``firstresult``"


def _specs() -> dict[str, Any]:
    return {
        name: function
        for name, function in inspect.getmembers(hookspecs, inspect.isfunction)
        if hasattr(function, "pawl_spec")
    }


def test_every_hook_spec_says_whether_firstresult_applies() -> None:
    specs = _specs()
    assert set(specs) == {
        "pawl_register_scorers",
        "pawl_register_agent_adapters",
        "pawl_register_embedding_backends",
        "pawl_register_builtin_tools",
        "pawl_validate_baseline",
        "pawl_deliver_event",
    }
    for name, function in specs.items():
        doc = inspect.getdoc(function) or ""
        stated = STOPS_AT_FIRST if function.pawl_spec["firstresult"] else NOT_FIRSTRESULT
        assert stated in doc, f"{name}: the docstring must say {stated!r}"


class BaselineRule:
    """Refuses a baseline whose metadata says ``stale``; records what it was handed."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, Any, Any]] = []

    @hookimpl
    def pawl_validate_baseline(
        self, eval: Eval, candidate: EvalRun, baseline: EvalRun
    ) -> str | None:
        self.calls.append((eval, candidate, baseline))
        candidate.metadata["tampered"] = True  # a copy: the run written must not show it
        return "stale baseline" if baseline.metadata.get("stale") else None


@pytest.fixture
def rule(api: Any) -> Iterator[BaselineRule]:
    rule = BaselineRule()
    wiring.install_plugins(HostWith(EventLog(), ProbePlugin(), rule))
    yield rule
    wiring.install_plugins()


def test_baseline_hook_gets_domain_types_and_its_refusal_refuses(
    api: Any, project: Any, rule: BaselineRule
) -> None:
    suite = make_suite(api, project, [("echo:a", "a")])
    runs_path = f"/api/v1/evals/{suite.eval['id']}/runs"
    fresh = api.post(runs_path, {"wait": True}).json
    stale = api.post(runs_path, {"wait": True, "metadata": {"stale": True}}).json
    assert rule.calls == []  # no baseline named, no call

    accepted = api.post(runs_path, {"wait": True, "baseline_run_id": fresh["id"]})
    assert accepted.status == 201, accepted
    [(evaluation, candidate, baseline)] = rule.calls
    assert isinstance(evaluation, Eval) and evaluation.id == suite.eval["id"]
    assert isinstance(candidate, EvalRun) and candidate.id == accepted.json["id"]
    assert isinstance(baseline, EvalRun) and baseline.id == fresh["id"]
    assert "tampered" not in accepted.json["metadata"]

    refused = api.post(runs_path, {"wait": True, "baseline_run_id": stale["id"]})
    assert refused.status == 400 and refused.json["error"]["meta"]["field"] == "baseline_run_id"
    assert "stale" not in refused.json["error"]["message"]  # the reason stays in the log
    assert len(api.get(runs_path).json["data"]) == 3
