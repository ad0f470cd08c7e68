"""``PAWL_PUBLIC_URL``: what it accepts, the clear error a bad value stops pawl with, and the
console URL shapes other surfaces link to."""

from __future__ import annotations

from pathlib import Path

import pytest

from chalicelib.domain import console_links
from chalicelib.settings import InvalidSetting, get_settings, public_url_from, reset_settings
from pawl.cli import main as cli
from pawl.demo.walkthrough import DemoResult, demo_links
from pawl.transport import Run

API = "https://abc123.execute-api.us-east-1.amazonaws.com/api"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, None),
        ("", None),
        ("   ", None),
        (API, API),
        (f"{API}/", API),
        (f" {API} ", API),
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("https://evals.example.com/", "https://evals.example.com"),
        ("http://[::1]:8000", "http://[::1]:8000"),
    ],
)
def test_accepted_values_lose_only_their_trailing_slash(
    raw: str | None, expected: str | None
) -> None:
    assert public_url_from(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "evals.example.com",
        "ftp://evals.example.com",
        "javascript:alert(1)",
        "https://",
        "https:///path",
        "https://user:pw@evals.example.com",
        "https://evals.example.com/?next=1",
        "https://evals.example.com/#top",
        "https://evals.example.com:99999",
        "https://evals example.com",
        "http://::1:8000",
    ],
)
def test_anything_but_an_http_url_is_refused_with_what_to_set(raw: str) -> None:
    with pytest.raises(InvalidSetting, match=r"PAWL_PUBLIC_URL is not valid: .*http\(s\) URL"):
        public_url_from(raw)


def test_get_settings_refuses_a_bad_public_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAWL_PUBLIC_URL", "evals.example.com")
    reset_settings()
    try:
        with pytest.raises(InvalidSetting, match="PAWL_PUBLIC_URL"):
            get_settings()
        monkeypatch.setenv("PAWL_PUBLIC_URL", "https://evals.example.com/")
        reset_settings()
        assert get_settings().public_url == "https://evals.example.com"
    finally:
        monkeypatch.delenv("PAWL_PUBLIC_URL")
        reset_settings()


def test_pawl_serve_will_not_start_with_a_bad_public_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PAWL_PUBLIC_URL", "ftp://evals.example.com")
    state_dir = tmp_path / "state"
    try:
        code = cli.main(["serve", "--port", "0", "--state-dir", str(state_dir)])
    finally:
        monkeypatch.delenv("PAWL_PUBLIC_URL")
        reset_settings()
    err = capsys.readouterr().err
    assert code == 1
    assert "pawl serve: PAWL_PUBLIC_URL is not valid: 'ftp://evals.example.com'" in err
    assert not state_dir.exists()  # refused before the state dir was touched


def test_console_url_shapes() -> None:
    base = "https://abc.execute-api.eu-west-1.amazonaws.com/api/"
    assert console_links.run_url(base, "eval_1", "evrun_2") == (
        "https://abc.execute-api.eu-west-1.amazonaws.com/api/console/evals/eval_1/runs/evrun_2"
    )
    assert console_links.compare_url("http://127.0.0.1:8000", "eval_1", "evrun_2") == (
        "http://127.0.0.1:8000/console/evals/eval_1/runs/evrun_2/compare"
    )
    # An id is one path segment whatever it holds.
    assert console_links.run_path("a/b", "c?d") == "/console/evals/a%2Fb/runs/c%3Fd"


def test_demo_keep_running_links_the_candidates_comparison() -> None:
    def run(run_id: str, version: int, baseline: str | None = None) -> Run:
        return Run(
            id=run_id,
            eval_id="eval_e",
            agent_version=version,
            status="completed",
            baseline_run_id=baseline,
        )

    result = DemoResult(
        project={"id": "proj_p"},
        api_key={"key": "pawl.key_k"},
        eval={"id": "eval_e"},
        baseline=run("evrun_v1", 1),
        candidate=run("evrun_v2", 2, "evrun_v1"),
        report_path=Path("report.html"),
    )
    compare, sign_in, curl = demo_links("http://127.0.0.1:8123", result)
    assert compare == "compare: http://127.0.0.1:8123/console/evals/eval_e/runs/evrun_v2/compare"
    assert "http://127.0.0.1:8123/console/ with the project key pawl.key_k" in sign_in
    assert curl.endswith("http://127.0.0.1:8123/api/v1/evals/eval_e/runs")
