"""``pawl demo --formations``: the demo's suite as code, planned and applied with the CLI.

Given a running server and its admin key, it makes a project and key, then runs
``pawl plan`` / ``pawl apply`` of ``examples/support-suite.yaml`` (every resource a
create), plans and applies it again with the v2 agent (one update), and runs the suite
once through the eval the formation made. Everything goes over HTTP, as from CI.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pawl.demo import formation_cli
from pawl.demo.walkthrough import AGENT_MODULE
from pawl.transport import PawlClient

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "support-suite.yaml"
V2 = f"agent_callable={AGENT_MODULE}:answer_v2"
PROJECT = "pawl-formations-demo"


def _pawl(url: str, key: str, *args: str) -> int:
    parser = argparse.ArgumentParser(prog="pawl")
    formation_cli.add_parsers(parser.add_subparsers(dest="command", required=True))
    print(f"\n$ pawl {' '.join(args)}", flush=True)
    parsed = parser.parse_args([*args, "--server", url, "--api-key", key])
    code: int = parsed.func(parsed)
    return code


def walkthrough(url: str, admin_key: str) -> int:
    """plan, apply, plan v2, apply v2, then one run of the formation's eval; the exit code."""
    with PawlClient(url, admin_key) as admin:
        project = admin.ensure_project(PROJECT)
        key = str(admin.create_api_key(project["id"], "formations-demo")["key"])
    example = str(
        EXAMPLE.relative_to(Path.cwd()) if EXAMPLE.is_relative_to(Path.cwd()) else EXAMPLE
    )
    for args in (
        ("plan", example),
        ("apply", example),
        ("plan", example, "--param", V2),
        ("apply", example, "--param", V2),
    ):
        code = _pawl(url, key, *args)
        if code != 0:
            return code
    with PawlClient(url, key) as client:
        formation = client.find_formation(EXAMPLE.stem)
        assert formation is not None
        run = client.start_run(formation["outputs"]["eval_id"], wait=True)
    scores = run.aggregate_scores or {}
    print(f"\nrun {run.id}: {run.status}, pass rate {scores.get('pass_rate')}, passed {run.passed}")
    return 0
