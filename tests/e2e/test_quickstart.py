"""The README quickstart, run as written against a real ``pawl serve``: it stays true.

The commands are read out of README.md (the ``sh`` blocks after the ``quickstart:``
markers, and the environment the ``make serve`` line sets); the only change made to them
is the server's address (the test's ``pawl serve`` listens on a free port, not 8000).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_serve import REPO, ServeProcess

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("jq") is None, reason="`make test` installs jq"),
]
README = REPO / "README.md"
DOCUMENTED_SERVER = "http://127.0.0.1:8000"


def _section() -> str:
    text = README.read_text()
    start = text.index("## Quickstart")
    return text[start : text.index("\n## ", start + 1)]


def _block_after(marker: str) -> str:
    section = _section()
    found = re.search(re.escape(marker) + r".*?\n```sh\n(.*?)```", section, re.S)
    assert found, f"README quickstart has no ```sh block after {marker!r}"
    return found.group(1)


def _serve_env() -> dict[str, str]:
    """The variables the README's ``make serve`` line sets."""
    serve = re.search(r"```sh\n(.*make serve.*)\n```", _section())
    assert serve, "README quickstart does not start with `make serve`"
    words = shlex.split(serve.group(1))
    assert words[-2:] == ["make", "serve"]
    return dict(word.split("=", 1) for word in words[:-2])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    state_dir = tmp_path_factory.mktemp("quickstart-state")
    process = ServeProcess(state_dir, REPO, extra_env=_serve_env(), admin_key=None)
    yield process
    process.kill()


def _run_block(server: ServeProcess, marker: str) -> str:
    script = _block_after(marker)
    assert DOCUMENTED_SERVER in script
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAWL_")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script.replace(DOCUMENTED_SERVER, server.url)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{''.join(server.output)}"
    return done.stdout


def _verdict(stdout: str) -> dict[str, object]:
    """The ``{status, passed, aggregate_scores}`` object the block prints."""
    start = stdout.index('{\n  "status"')
    decoded, _ = json.JSONDecoder().raw_decode(stdout[start:])
    assert isinstance(decoded, dict)
    return decoded


def test_the_cli_quickstart_reaches_a_verdict(server: ServeProcess) -> None:
    block = _block_after("<!-- quickstart: cli")
    assert "$(" not in block.replace("$(pawl create-api-key", "")  # names, not ids, carried
    stdout = _run_block(server, "<!-- quickstart: cli")
    # `start-eval-run --output table`: the run, one field a line.
    assert re.search(r"^status\s+completed$", stdout, re.M), stdout
    assert re.search(r"^passed\s+true$", stdout, re.M)
    assert re.search(r"^pass rate\s+66\.7% \(", stdout, re.M)
    assert "Verdict: PASSED" in stdout  # `pawl run --baseline latest`, the block's last line
    # `list-eval-results --output table`: item, passed, the scorer's score.
    table_rows = re.findall(r"^dsit_\S+\s+(true|false)\s+[01]", stdout, re.M)
    assert sorted(table_rows) == ["false", "true", "true"]


def test_the_curl_quickstart_reaches_the_same_verdict(server: ServeProcess) -> None:
    stdout = _run_block(server, "<!-- quickstart: curl")
    verdict = _verdict(stdout)
    assert (verdict["status"], verdict["passed"]) == ("completed", True)
    assert stdout.count('"passed": false') == 1 and stdout.count('"passed": true') == 3


def test_the_import_example_adds_the_same_three_cases(server: ServeProcess, tmp_path: Path) -> None:
    """The file example, after the CLI block's first lines made a key and a dataset."""
    setup = f"""
    export PAWL_SERVER={server.url} PAWL_API_KEY=pawl-local-admin-key
    PROJECT=$(pawl create-project --name quickstart-import | jq -r .id)
    export PAWL_API_KEY=$(pawl create-api-key --project-id "$PROJECT" --name me | jq -r .key)
    DATASET=$(pawl create-dataset --name support-faq | jq -r .id)
    """
    listing = '\npawl list-dataset-items --dataset-id "$DATASET" | jq -c ".data[]"\n'
    script = setup + _block_after("<!-- quickstart: import") + listing
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAWL_")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert "imported 2 items" in done.stdout and "imported 1 item into" in done.stdout
    items = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [(i["input"], i["metadata"]["must_mention"]) for i in items] == [
        ([{"role": "user", "content": question}], mention)
        for question, mention in [
            ("How do I get a refund on my annual plan?", "prorated"),
            ("Where can I download my invoices?", "Settings > Billing"),
            ("Someone emailed me asking for my password. Is that you?", "security@acme"),
        ]
    ]
