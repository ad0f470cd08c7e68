"""The `pawl` command line: plugins report, and serve's refusal of a state dir in use."""

from __future__ import annotations

import fcntl
import socket
from pathlib import Path

import pytest

from chalicelib import wiring
from chalicelib.plugins.manager import plugins
from pawl.cli import main as cli
from pawl.local.compaction import CompactionPolicy


def test_plugins_lists_what_was_loaded_with_its_hooks(capsys: pytest.CaptureFixture[str]) -> None:
    wiring.install_plugins()
    code = cli.main(["plugins"])
    out = capsys.readouterr().out
    host = plugins()
    assert code == (1 if host.report.failed else 0)
    for entry in host.report.loaded:
        assert entry["name"] in out
    assert "chalicelib.scoring.plugin" in out
    assert "pawl_register_scorers" in out
    for failure in host.report.failed:
        assert failure["error"] in out


def test_serve_refuses_a_state_dir_another_runtime_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tmp_path.mkdir(exist_ok=True)
    with open(tmp_path / ".lock", "wb") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        code = cli.main(["serve", "--port", "0", "--state-dir", str(tmp_path)])
    assert code == 1
    assert "in use by another pawl runtime" in capsys.readouterr().err


def test_worker_counts_parse_per_queue() -> None:
    args = cli.build_parser().parse_args(
        ["serve", "--workers", "pawl-runs=3", "--workers", "pawl-webhooks=2", "--item-workers", "4"]
    )
    config = cli._runtime_config(args, Path("state"))
    assert config.workers == {"pawl-runs": 3, "pawl-webhooks": 2}
    assert config.item_workers == 4
    assert config.port == 8000 and config.host == "127.0.0.1"


def test_the_snapshot_policy_flags_and_their_defaults(
    capsys: pytest.CaptureFixture[str],
) -> None:
    defaults = cli._runtime_config(cli.build_parser().parse_args(["serve"]), Path("state"))
    assert defaults.snapshot_interval_s == 1.0
    assert defaults.compaction == CompactionPolicy()
    args = cli.build_parser().parse_args(
        ["serve", "--snapshot-min-journal-mb", "0.5", "--snapshot-journal-ratio", "2"]
    )
    config = cli._runtime_config(args, Path("state"))
    assert config.compaction == CompactionPolicy(min_journal_bytes=512 * 1024, journal_ratio=2)
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["serve", "--snapshot-journal-ratio", "-1"])
    assert "-1 is negative" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["serve", "demo"])
def test_a_taken_port_is_named_with_the_flag_that_picks_another(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = cli.main([command, "--port", str(port), "--state-dir", str(tmp_path)])
    assert code == 1
    err = capsys.readouterr().err
    assert f"pawl {command}: port {port} on 127.0.0.1 is already in use" in err
    assert f"choose another port with --port (e.g. --port {port + 1})" in err
