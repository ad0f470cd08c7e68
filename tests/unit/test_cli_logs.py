"""What ``pawl`` logs where: warnings on stderr unless asked for more, INFO in pawl.log."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from pawl.cli import logs
from pawl.cli import main as cli


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_warnings_unless_verbose_or_the_environment_asks() -> None:
    assert logs.console_level(False, {}) == logging.WARNING
    assert logs.console_level(True, {}) == logging.INFO
    assert logs.console_level(False, {"PAWL_LOG_LEVEL": "debug"}) == logging.DEBUG
    assert logs.console_level(False, {"PAWL_LOG_LEVEL": "ERROR"}) == logging.ERROR
    # the more verbose of the two wins
    assert logs.console_level(True, {"PAWL_LOG_LEVEL": "error"}) == logging.INFO
    assert logs.console_level(True, {"PAWL_LOG_LEVEL": "DEBUG"}) == logging.DEBUG
    with pytest.raises(ValueError, match="PAWL_LOG_LEVEL='loud' is not a level: give one of"):
        logs.console_level(False, {"PAWL_LOG_LEVEL": "loud"})


def test_a_bad_level_is_refused_before_anything_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PAWL_LOG_LEVEL", "chatty")
    with pytest.raises(SystemExit) as exited:
        cli.main(["list-evals", "--server", "http://127.0.0.1:9", "--api-key", "k"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "PAWL_LOG_LEVEL='chatty' is not a level" in err and "cannot reach" not in err


def test_info_goes_to_the_file_not_between_the_lines_for_a_person(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs.configure(logging.WARNING)
    engine = logging.getLogger("chalicelib.engine.test")
    state_dir = tmp_path / "state"
    with logs.file_log(state_dir) as log:
        engine.info("restored 1 project")  # before the runtime made its state dir: held
        assert not state_dir.exists()
        path = log.open()
        engine.info("queued for 0 webhook(s)")
        engine.warning("a sink failed")
        logging.getLogger("botocore.test").info("a request line")
    engine.info("after the file closed")
    err = capsys.readouterr().err
    assert "a sink failed" in err and "queued" not in err and "restored" not in err
    written = path.read_text(encoding="utf-8")
    assert path == state_dir / "pawl.log"
    assert written.index("INFO chalicelib.engine.test: restored 1 project") < written.index(
        "INFO chalicelib.engine.test: queued for 0 webhook(s)"
    )
    assert "WARNING chalicelib.engine.test: a sink failed" in written
    assert "a request line" not in written and "after the file closed" not in written
    assert logging.getLogger().level == logging.WARNING  # restored when the file closed
    assert (path.stat().st_mode & 0o777, state_dir.stat().st_mode & 0o777) == (0o600, 0o700)


def test_a_log_never_opened_leaves_no_state_dir(tmp_path: Path) -> None:
    """``pawl serve`` refused before its runtime made the state dir: nothing is made."""
    with logs.file_log(tmp_path / "state"):
        logging.getLogger("chalicelib.test").warning("refused")
    assert not (tmp_path / "state").exists()


def test_verbose_shows_info_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    logs.configure(logs.console_level(True, {}))
    logs.configure(logs.console_level(True, {}))  # configured twice: one line, not two
    logging.getLogger("chalicelib.engine.test").info("settled")
    assert capsys.readouterr().err.count("INFO chalicelib.engine.test: settled") == 1
