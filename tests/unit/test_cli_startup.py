"""What ``pawl`` loads before its request, and how it ends when its reader goes away.

Each case runs the entry point in a fresh interpreter and reads its ``sys.modules``: the
fast paths (``pawl --help``, ``pawl <api-command> --help``, an API command answered by a
server on 127.0.0.1) must not import the service, the AWS stack, the stand-in, torch, or the
libraries whose import alone costs more than the start-up budget (httpx, pydantic, rich).
The CPU figures themselves are bench/cli_startup.py's; nothing here reads a clock.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.servers import Reply, Request, Server, serve

ROOT = Path(__file__).resolve().parents[2]
#: Top-level packages (and pawl/chalicelib modules) a fast path never imports.
EXCLUDED = (
    "moto",
    "boto3",
    "botocore",
    "pynamodb",
    "torch",
    "rich",
    "httpx",
    "pydantic",
    "yaml",
    "jinja2",
    "pawl.local",
    "pawl.demo.walkthrough",
    "chalicelib.api",
    "chalicelib.wiring",
    "chalicelib.engine",
)
#: Runs the entry point, then writes the names of every module it imported.
PROBE = """
import json, sys
from pawl.cli.main import main
try:
    code = main(sys.argv[2:])
except SystemExit as exc:
    code = exc.code
with open(sys.argv[1], "w") as out:
    json.dump({"code": code, "modules": sorted(sys.modules)}, out)
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAWL_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return {**env, **extra}


def _imported(tmp_path: Path, *argv: str) -> tuple[int, list[str]]:
    report = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(report), *argv],
        env=_env(PAWL_API_KEY="pawl.key"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert report.exists(), done.stderr
    found = json.loads(report.read_text())
    return found["code"], found["modules"]


def _forbidden(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == x or m.startswith(x + ".") for x in EXCLUDED)]


def _listing(request: Request) -> Reply:
    rows = [{"id": f"eval_{i:026d}", "name": f"eval {i}", "status": "ok"} for i in range(4000)]
    return Reply(body={"data": rows, "next_cursor": None, "total": len(rows)})


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with serve(_listing) as started:
        yield started


@pytest.mark.parametrize(
    "argv",
    [("--help",), ("list-evals", "--help"), ("lst-evals",)],
    ids=["help", "cmd-help", "typo"],
)
def test_help_and_mistakes_load_no_heavy_module(tmp_path: Path, argv: tuple[str, ...]) -> None:
    code, modules = _imported(tmp_path, *argv)
    assert code == (2 if argv == ("lst-evals",) else 0)
    assert _forbidden(modules) == []
    assert "http.client" not in modules  # nothing is sent: no HTTP client either


def test_an_api_command_loads_no_heavy_module_before_or_after_its_request(
    tmp_path: Path, server: Server
) -> None:
    code, modules = _imported(tmp_path, "list-evals", "--server", server.url, "--output", "json")
    assert code == 0
    assert _forbidden(modules) == []
    assert "pawl.cli.sender" in modules and server.requests  # it did send the request


def test_the_probe_sees_a_heavy_import_when_there_is_one(tmp_path: Path) -> None:
    """The check can fail: ``pawl plan`` of a file reads YAML, so yaml is imported."""
    template = tmp_path / "suite.yaml"
    template.write_text("resources: {}\n")
    _, modules = _imported(tmp_path, "plan", str(template), "--server", "http://127.0.0.1:9")
    assert "yaml" in _forbidden(modules)


def test_a_closed_pipe_ends_the_command_quietly_with_141(server: Server) -> None:
    """The reader is gone before the first write: deterministic, whatever the timing."""
    command = [sys.executable, "-m", "pawl.cli", "list-evals", "--server", server.url]
    process = subprocess.Popen(
        [*command, "--output", "json"],
        env=_env(PAWL_API_KEY="pawl.key"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    err = process.stderr.read().decode()
    assert process.wait(timeout=60) == 141
    assert err == ""


def test_pawl_list_evals_into_head_shows_no_traceback(server: Server, tmp_path: Path) -> None:
    """As a person types it: ``| head -n 1`` reads one line of about 300 KB and leaves."""
    script = (
        f'"{sys.executable}" -m pawl.cli list-evals --server {server.url} --output json '
        '| head -n 1; echo "status ${PIPESTATUS[0]}" >&2'
    )
    done = subprocess.run(
        ["bash", "-c", script],
        env=_env(PAWL_API_KEY="pawl.key"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout == "{\n"
    assert done.stderr == "status 141\n"


#: ``pawl run`` up to its start request: the probe stops it there and lists what it loaded.
RUN_PROBE = """
import json, sys
from pawl.cli import sender

def send(self, method, path, **kwargs):
    if method == "POST" and path.endswith("/runs"):
        with open(sys.argv[1], "w") as out:
            json.dump({"code": 0, "modules": sorted(sys.modules)}, out)
        raise SystemExit(0)
    raise AssertionError(f"{method} {path} before the start")

sender.StdlibClient.send = send
from pawl.cli.main import main
main(sys.argv[2:])
"""
#: What ``pawl run`` loads only after its start request, while the run executes: httpx
#: (and the rich it imports), pydantic, the progress bar and the report's modules; and
#: never the service, its settings or the AWS stack.
AFTER_THE_START = (
    "httpx",
    "pydantic",
    "rich",
    "moto",
    "boto3",
    "botocore",
    "pynamodb",
    "pawl.local",
    "pawl.demo.ci_report",
    "pawl.demo.progress",
    "pawl.demo.comparison",
    "chalicelib.settings",
    "chalicelib.api",
    "chalicelib.engine",
)


def test_pawl_run_loads_only_the_client_before_its_start_request(tmp_path: Path) -> None:
    """The command's start-up counts in its time, the imports after the start do not: the
    run executes meanwhile. The start goes through the standard library's client, as an
    API command's request does."""
    report = tmp_path / "modules.json"
    eval_id = "eval_" + "0" * 26  # an id: no name to resolve, so no request before the start
    argv = ["run", "--eval", eval_id, "--server", "http://127.0.0.1:9"]
    done = subprocess.run(
        [sys.executable, "-c", RUN_PROBE, str(report), *argv],
        env=_env(PAWL_API_KEY="pawl.key"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert report.exists(), done.stderr
    modules = json.loads(report.read_text())["modules"]
    early = [m for m in modules if any(m == x or m.startswith(x + ".") for x in AFTER_THE_START)]
    assert early == []
    assert "pawl.demo.ci" in modules  # the probe did stop `pawl run` at its start request
