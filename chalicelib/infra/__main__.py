"""``python -m chalicelib.infra {generate,package} --stage dev``: write or package the infra.

``generate`` writes ``.chalice/policy-<stage>.json`` (the functions' IAM policy, which
``chalice package`` embeds) and ``<out>/merge-template.json``; ``package`` then runs
``chalice package --merge-template`` into ``<out>`` (default ``dist/<stage>``), leaving
``sam.json`` and ``deployment.zip`` there, and adds the Lambda part of ``pawl`` to the zip
(:mod:`chalicelib.infra.lambda_pawl`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from chalice import Chalice

from chalicelib.infra import lambda_pawl
from chalicelib.infra.definitions import queue_specs, table_specs
from chalicelib.infra.merge import link_event_sources, merge_template
from chalicelib.infra.policy import policy_document
from chalicelib.infra.stage import PROJECT_DIR, Stage, load_stage, stage_env
from chalicelib.infra.template import Options

MERGE_TEMPLATE = "merge-template.json"


def render(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True) + "\n"


def policy_path(stage: str, project_dir: Path = PROJECT_DIR) -> Path:
    return project_dir / ".chalice" / f"policy-{stage}.json"


def stage_policy(stage: Stage, options: Options) -> dict[str, Any]:
    settings = stage.settings
    return policy_document(table_specs(settings), queue_specs(settings), options.invoke_functions)


def stage_app(stage: Stage) -> Chalice:
    """The app as `chalice package` imports it: under the stage's environment (its handlers'
    queue names are read from settings at import time)."""
    with stage_env(stage.environment):
        from app import app

        return app


def generate(stage: Stage, out: Path, options: Options) -> Path:
    policy_path(stage.name).write_text(render(stage_policy(stage, options)))
    out.mkdir(parents=True, exist_ok=True)
    target = out / MERGE_TEMPLATE
    target.write_text(render(merge_template(stage, stage_app(stage), options)))
    return target


def package(stage_name: str, out: Path, options: Options) -> None:
    stage = load_stage(stage_name)  # an unknown stage fails here, before chalice runs
    merge = generate(stage, out, options)
    # pip (run by chalice over requirements.txt) resolves a plugin's `pawl` to this wheel.
    lambda_pawl.build_wheel(PROJECT_DIR, PROJECT_DIR / lambda_pawl.WHEEL_DIR)
    lambda_pawl.drop_stale_caches(PROJECT_DIR, lambda_pawl.read_version(PROJECT_DIR / "pawl"))
    env = dict(os.environ)
    env.setdefault("AWS_DEFAULT_REGION", env.get("AWS_REGION", "us-east-1"))
    chalice = Path(sys.executable).with_name("chalice")
    subprocess.run(
        [str(chalice), "package", "--stage", stage_name, "--merge-template", str(merge), str(out)],
        cwd=PROJECT_DIR,
        env=env,
        check=True,
    )
    lambda_pawl.add_to_zip(out / "deployment.zip", PROJECT_DIR)
    packaged = out / "sam.json"
    template = json.loads(packaged.read_text())
    link_event_sources(template, stage, stage_app(stage))
    packaged.write_text(render(template))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m chalicelib.infra", description=__doc__)
    parser.add_argument("command", choices=["generate", "package"])
    parser.add_argument("--stage", default="dev")
    parser.add_argument("--out", type=Path, help="output directory (default dist/<stage>)")
    parser.add_argument(
        "--invoke-function",
        action="append",
        default=[],
        help="a Lambda (name or ARN) agents/tools may invoke; repeat for more",
    )
    parser.add_argument(
        "--retain-data",
        choices=["yes", "no"],
        help="keep tables and bucket on stack deletion (default: yes except for dev)",
    )
    args = parser.parse_args(argv)
    retain = args.retain_data == "yes" if args.retain_data else args.stage != "dev"
    options = Options(invoke_functions=args.invoke_function, retain_data=retain)
    out = args.out or PROJECT_DIR / "dist" / args.stage
    if args.command == "generate":
        print(generate(load_stage(args.stage), out, options))
    else:
        try:
            package(args.stage, out, options)
        except lambda_pawl.LambdaPawlError as exc:
            parser.exit(2, f"{parser.prog}: {exc}\n")
        print(out / "sam.json")


if __name__ == "__main__":
    main()
