"""``make demo-formations``: the demo's suite as code, planned and applied with the CLI.

Starts an embedded runtime on a temporary state dir, makes a project and key, then runs
``pawl plan`` / ``pawl apply`` of ``examples/support-suite.yaml`` (every resource a
create), plans and applies it again with the v2 agent (one update), and runs the suite
once through the eval the formation made. Everything goes over HTTP, as from CI.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from chalicelib.client import PawlClient
from chalicelib.demo import formation_cli
from chalicelib.local.demo import AGENT_MODULE

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "support-suite.yaml"
V2 = f"agent_callable={AGENT_MODULE}:answer_v2"


def _pawl(url: str, key: str, *args: str) -> int:
    parser = argparse.ArgumentParser(prog="pawl")
    formation_cli.add_parsers(parser.add_subparsers(dest="command", required=True))
    print(f"\n$ pawl {' '.join(args)}", flush=True)
    parsed = parser.parse_args([*args, "--server", url, "--api-key", key])
    code: int = parsed.func(parsed)
    return code


def walkthrough(url: str, key: str) -> int:
    """plan, apply, plan v2, apply v2, then one run of the formation's eval; the exit code."""
    example = str(EXAMPLE)
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


def main() -> int:
    from chalicelib.local.runtime import LocalRuntime, RuntimeConfig

    with tempfile.TemporaryDirectory(prefix="pawl-formations-") as state_dir:
        config = RuntimeConfig(
            port=0,
            state_dir=Path(state_dir),
            python_agent_modules=(AGENT_MODULE,),
            snapshot_interval_s=0,
            run_schedules=False,
        )
        with LocalRuntime(config) as runtime:
            with PawlClient(runtime.url, runtime.admin_key) as admin:
                project = admin.create_project("pawl-formations-demo")
                key = str(admin.create_api_key(project["id"], "demo")["key"])
            print(f"pawl formations demo: runtime on {runtime.url}", flush=True)
            return walkthrough(runtime.url, key)


if __name__ == "__main__":
    sys.exit(main())
