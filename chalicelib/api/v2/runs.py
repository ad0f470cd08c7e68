"""``createRun`` on ``/v2``: every refusal first (reads only), then the writes.

Refusals (RFC 0251 §B, §C): all ``400 validation_error``. An unusable baseline — unknown,
another tenant's, not a ``/v2`` eval run, another ``suiteId``, not completed — gets one
identical answer that never echoes the id (:data:`BASELINE_REFUSED`).

Then, in order: the ``Idempotency-Key`` claim, the fixture suite / conformance agent /
eval this run needs (each created once per project and reused), the v2 run record, and
the ordinary pawl run (``engine.start``), queued like any other.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from chalicelib import clock, ids
from chalicelib.api.auth import Caller
from chalicelib.api.v2 import suites
from chalicelib.api.v2.bodies import BASELINE_REFUSED, CreateRun
from chalicelib.domain.catalog import Eval
from chalicelib.domain.runs import COMPLETED
from chalicelib.engine import agents as engine_agents
from chalicelib.engine import evals as engine_evals
from chalicelib.engine.start import StartOptions, start_run
from chalicelib.errors import NotFound, ValidationFailed
from chalicelib.iam.references import READ_ACTIONS
from chalicelib.iam.srn import srn
from chalicelib.openwop import errors, fixtures
from chalicelib.store import agents, ai_providers, evals, runs, tenancy
from chalicelib.store import openwop as records

IDEMPOTENCY_WINDOW = timedelta(hours=24)
ALWAYS_MODES = ("golden", "regression")


@dataclass(frozen=True)
class Plan:
    """A createRun that passed every rule."""

    project_id: str
    suite: suites.Suite
    agent_id: str
    modes: list[str]
    body: CreateRun


def judge_configured(caller: Caller, project_id: str) -> bool:
    """Whether rubric tasks can be graded for ``caller``: the project has a default judge
    provider, and the caller may read it (a rubric run makes pawl call it; denied, the
    project reads as having no judge, as if the provider were missing: docs/iam.md)."""
    provider_id = tenancy.get_project(project_id).default_ai_provider_id
    if not provider_id:
        return False
    if not caller.allows(READ_ACTIONS["ai-provider"], srn(project_id, "ai-provider", provider_id)):
        return False
    return ai_providers.find_provider(project_id, provider_id) is not None


def host_modes(caller: Caller, project_id: str) -> list[str]:
    """The modes pawl gates for this caller (``rubric`` only with a judge it may use)."""
    modes = list(ALWAYS_MODES)
    if judge_configured(caller, project_id):
        modes.insert(1, "rubric")
    return modes


def _modes(body: CreateRun, suite: suites.Suite, host: list[str]) -> list[str]:
    if body.evalModes is None:
        chosen = [m for m in suite.modes if m in host and m != "regression"]
        if body.baselineRunId is not None:
            chosen.append("regression")
        if not chosen:
            raise ValidationFailed(
                "the suite declares no mode this host runs without evalModes", field="evalModes"
            )
        return chosen
    if len(set(body.evalModes)) != len(body.evalModes):
        raise ValidationFailed("evalModes must not repeat a mode", field="evalModes")
    outside = [m for m in body.evalModes if m not in suite.modes or m not in host]
    if outside:
        raise ValidationFailed(
            f"evalModes {outside} are not both declared by the suite {suite.modes} "
            f"and run by this host {host}",
            field="evalModes",
        )
    return list(body.evalModes)


def _check_agent(project_id: str, agent_id: str) -> None:
    if agent_id == fixtures.CONFORMANCE_AGENT_ID:
        return
    try:
        agent = agents.get_agent(agent_id) if ids.is_id("agent", agent_id) else None
    except NotFound:
        agent = None
    if agent is None or agent.project_id != project_id:
        raise ValidationFailed("agentId names no agent of this project", field="agentId")


def check_baseline(project_id: str, baseline_run_id: str, suite_id: str) -> None:
    """§C: one answer for every baseline this caller cannot use."""
    found = records.project_of(records.run_key(baseline_run_id))
    usable = False
    if found is not None and found[0] == project_id and found[1]["suiteId"] == suite_id:
        state = runs.find_run(baseline_run_id)
        usable = state is not None and state.status == COMPLETED
    if not usable:
        raise ValidationFailed(BASELINE_REFUSED)


def plan(caller: Caller, project_id: str, body: CreateRun) -> Plan:
    """Every createRun rule, reads only."""
    if body.mode != "eval":
        raise ValidationFailed(
            'pawl runs eval runs only: mode must be "eval" (evalModes and baselineRunId '
            'are meaningful only with mode "eval")',
            field="mode",
        )
    if body.evalSuiteRef is None or body.agentId is None:
        raise ValidationFailed("an eval run needs evalSuiteRef and agentId", field="body")
    suite = suites.resolve(project_id, body.evalSuiteRef)
    if suite is None:
        raise ValidationFailed("evalSuiteRef names no suite of this caller", field="evalSuiteRef")
    if suite.task_count > suites.MAX_TASKS_PER_SUITE:
        raise ValidationFailed(
            f"the suite has {suite.task_count} tasks; this host runs at most "
            f"{suites.MAX_TASKS_PER_SUITE} (maxTasksPerSuite)",
            field="evalSuiteRef",
        )
    host = host_modes(caller, project_id)
    modes = _modes(body, suite, host)
    if ("regression" in modes) != (body.baselineRunId is not None):
        raise ValidationFailed(
            "baselineRunId and the regression mode go together: give both or neither",
            field="baselineRunId",
        )
    if suite.has_rubric and "rubric" not in host:
        raise ValidationFailed(
            "the suite has rubric tasks and this project has no judge "
            "(set the project's default_ai_provider_id)",
            field="evalSuiteRef",
        )
    _check_agent(project_id, body.agentId)
    if body.baselineRunId is not None:
        check_baseline(project_id, body.baselineRunId, suite.suite_id)
    return Plan(project_id, suite, body.agentId, modes, body)


# --- idempotency ------------------------------------------------------------------------------


def body_hash(raw: dict[str, Any]) -> str:
    canonical = json.dumps(raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _live(record: dict[str, Any]) -> bool:
    return str(record["expiresAt"]) > clock.now_iso()


def replay_or_claim(project_id: str, key: str, digest: str) -> str | None:
    """The run an earlier identical request started, or None after claiming ``key``."""
    pk = records.idempotency_key(project_id, key)
    claim = {"hash": digest, "runId": None, "expiresAt": _expiry()}
    existing = records.get(pk)
    if existing is not None and not _live(existing):
        previous = records.written_at(pk)
        if previous and records.replace(pk, records.NO_SORT, project_id, claim, previous):
            return None
        existing = records.get(pk)
    elif existing is None and records.put_new(pk, records.NO_SORT, project_id, claim):
        return None
    existing = existing or records.get(pk)
    assert existing is not None
    if existing["hash"] != digest:
        raise errors.idempotency_mismatch()
    if existing["runId"] is None:
        raise errors.idempotency_in_flight()
    return str(existing["runId"])


def _expiry() -> str:
    return clock.iso(clock.now() + IDEMPOTENCY_WINDOW)


def settle_claim(project_id: str, key: str, digest: str, run_id: str | None) -> None:
    """Record the started run on the claim, or (``None``) withdraw the claim."""
    pk = records.idempotency_key(project_id, key)
    if run_id is None:
        records.delete(pk)
        return
    previous = records.written_at(pk)
    done = {"hash": digest, "runId": run_id, "expiresAt": _expiry()}
    if previous is not None:
        records.replace(pk, records.NO_SORT, project_id, done, previous)


# --- the writes -------------------------------------------------------------------------------


def conformance_agent(project_id: str) -> str:
    """This project's echo agent behind ``conformance-eval-agent`` (created on first use)."""
    pk, sk = records.agent_key(project_id), fixtures.CONFORMANCE_AGENT_ID
    existing = records.get(pk, sk)
    if existing is not None:
        try:
            return agents.get_agent(existing["agentId"]).id
        except NotFound:
            records.delete(pk, sk)
    name = f"{fixtures.CONFORMANCE_AGENT_ID} {secrets.token_hex(4)}"
    agent = engine_agents.create_agent(project_id, name, "echo", {}, None)
    if records.put_new(pk, sk, project_id, {"agentId": agent.id}):
        return agent.id
    engine_agents.delete_agent(agent)
    winner = records.get(pk, sk)
    assert winner is not None
    return str(winner["agentId"])


def _new_eval(project_id: str, record: dict[str, Any], agent_id: str) -> Eval:
    """Through the engine's catalog rules, as ``POST /api/v1/evals`` would create it."""
    bar = float(record["thresholds"].get("passScore", 1.0))
    fields = {
        "name": f"openwop {record['suiteId'][:100]}@{record['version']} {secrets.token_hex(4)}",
        "agent_id": agent_id,
        "dataset_id": record["datasetId"],
    }
    scorers = [{"type": "openwop_expected", "rubric_pass_score": bar}]
    return engine_evals.create_eval(project_id, fields, scorers)


def suite_eval(project_id: str, record: dict[str, Any], agent_id: str) -> Eval:
    """The eval that runs this suite version on this agent (created on first use)."""
    pk, sk = records.eval_key(project_id, record["suiteId"], record["version"]), agent_id
    existing = records.get(pk, sk)
    if existing is not None:
        try:
            return evals.get_eval(existing["evalId"])
        except NotFound:
            records.delete(pk, sk)
    created = _new_eval(project_id, record, agent_id)
    if records.put_new(pk, sk, project_id, {"evalId": created.id}):
        return created
    evals.delete_eval(created)
    winner = records.get(pk, sk)
    assert winner is not None
    return evals.get_eval(winner["evalId"])


def start(plan: Plan) -> dict[str, Any]:
    """Write what the run needs, its v2 record, then start the pawl run."""
    project_id, body = plan.project_id, plan.body
    record = suites.registered(project_id, plan.suite)
    agent_id = plan.agent_id
    if agent_id == fixtures.CONFORMANCE_AGENT_ID:
        agent_id = conformance_agent(project_id)
    evaluation = suite_eval(project_id, record, agent_id)
    run_id = ids.new_id("eval_run")
    v2 = {
        "runId": run_id,
        "suiteId": record["suiteId"],
        "suiteVersion": record["version"],
        "evalSuiteRef": body.evalSuiteRef,
        "agentId": plan.agent_id,
        "modes": plan.modes,
        "baselineRunId": body.baselineRunId,
        "tags": list(body.tags or []),
        "metadata": dict(body.metadata or {}),
        "evalId": evaluation.id,
        "createdAt": clock.now_iso(),
    }
    records.put_new(records.run_key(run_id), records.NO_SORT, project_id, v2)
    try:
        start_run(evaluation, StartOptions(metadata=dict(body.metadata or {}), run_id=run_id))
    except Exception:
        records.delete(records.run_key(run_id))
        raise
    return v2
