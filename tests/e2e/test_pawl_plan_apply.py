"""`pawl plan` / `pawl apply` of the example suite against an embedded runtime over HTTP."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from pawl.cli import main as cli
from pawl.transport import PawlClient
from tests.support.runtime import runtime_with_project

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "support-suite.yaml"
V2 = "agent_callable=pawl.demo.agent:answer_v2"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    state_dir: Path = tmp_path_factory.mktemp("pawl-apply-state")
    with runtime_with_project(state_dir, "pawl-apply-tests") as (runtime, key):
        yield runtime.url, key


def _pawl(server: tuple[str, str], *args: str) -> list[str]:
    return [*args, "--server", server[0], "--api-key", server[1]]


def test_plan_apply_update_and_a_failed_deploy(
    server: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(_pawl(server, "plan", str(EXAMPLE))) == 0
    planned = capsys.readouterr().out
    assert "support-suite does not exist yet" in planned and "7 to create" in planned
    assert "+ create    SupportEval (eval)" in planned

    assert cli.main(_pawl(server, "apply", str(EXAMPLE))) == 0
    applied = capsys.readouterr().out
    assert "support-suite" in applied and "active" in applied and "output eval_id" in applied

    assert cli.main(_pawl(server, "plan", str(EXAMPLE), "--param", V2)) == 0
    diff = capsys.readouterr().out
    assert "~ update    SupportAgent (agent)" in diff and "answer_v2" in diff
    assert "1 to update, 0 to delete, 6 unchanged" in diff
    assert cli.main(_pawl(server, "apply", str(EXAMPLE), "--param", V2)) == 0
    updated = capsys.readouterr().out
    assert "apply (update)" in updated
    assert re.search(r"SupportAgent \(agent\) agt_\w+ updated", updated)
    assert re.search(r"SupportCases \(dataset\) dset_\w+ unchanged", updated)
    assert " created" not in updated  # an update applies no create here

    # A deploy the platform refuses part-way: exit 1, the reason on stderr.
    broken = yaml.safe_load(EXAMPLE.read_text())
    broken["resources"]["Other"] = {"type": "dataset", "properties": {"name": "other-cases"}}
    broken["resources"]["Outage"]["properties"]["dataset_id"] = {"ref": "Other"}
    path = tmp_path / "support-suite.json"
    path.write_text(yaml.safe_dump(broken))
    assert cli.main(_pawl(server, "apply", str(path), "--param", V2)) == 1
    captured = capsys.readouterr()
    assert "failed" in captured.out
    assert "failed at resource 'Outage'" in captured.err and "immutable" in captured.err


def test_refusals_exit_2(
    server: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(_pawl(server, "plan", str(tmp_path / "missing.yaml"))) == 2
    assert "cannot read" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("resources: {A: {type: memory}}\n")
    assert cli.main(_pawl(server, "apply", str(bad))) == 2
    assert "unknown resource type 'memory'" in capsys.readouterr().err
    with PawlClient(*server) as client:
        assert client.find_formation("bad") is None
