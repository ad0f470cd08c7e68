"""A Chalice stage's settings: what pawl's settings are inside that stage's Lambdas.

Chalice gives each function the environment of ``.chalice/config.json`` (top level, then
the stage), and imports the app under it while packaging. The generator reads the same
environment so the names it writes (tables, queues) are the ones the code will use.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from chalicelib.secrets_source import arn_variable
from chalicelib.settings import Settings, get_settings, reset_settings

PROJECT_DIR = Path(__file__).resolve().parents[2]
#: Settings the deployed stack sets itself (names, references); a caller's shell must not
#: leak into what the generator computes.
STACK_OWNED = [
    "PAWL_BUCKET",
    "PAWL_RUN_QUEUE",
    "PAWL_ITEM_QUEUE",
    "PAWL_WEBHOOK_QUEUE",
    "PAWL_ADMIN_KEY",
    arn_variable("PAWL_ADMIN_KEY"),
    "PAWL_SERVER_SECRET",
    arn_variable("PAWL_SERVER_SECRET"),
    "AWS_ENDPOINT_URL",
]


@dataclass(frozen=True)
class Stage:
    name: str
    environment: dict[str, str]
    settings: Settings


def stage_environment(stage: str, project_dir: Path = PROJECT_DIR) -> dict[str, str]:
    config = json.loads((project_dir / ".chalice" / "config.json").read_text())
    if stage not in config.get("stages", {}):
        raise ValueError(f"no stage {stage!r} in .chalice/config.json")
    environment = dict(config.get("environment_variables", {}))
    environment.update(config["stages"][stage].get("environment_variables", {}))
    return environment


@contextmanager
def stage_env(overrides: dict[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    try:
        for name in STACK_OWNED:
            os.environ.pop(name, None)
        os.environ.update(overrides)
        reset_settings()
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
        reset_settings()


def load_stage(stage: str, project_dir: Path = PROJECT_DIR) -> Stage:
    environment = stage_environment(stage, project_dir)
    with stage_env(environment):
        settings = get_settings()
    return Stage(stage, environment, settings)
