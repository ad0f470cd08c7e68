"""The parts of an OpenAI-compatible call that need no server: the key and error excerpts."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.openai_http import (
    SNIPPET_CHARS,
    UNLISTED_ENV_MESSAGE,
    EndpointFailed,
    api_key,
    snippet,
)
from chalicelib.settings import credential_env_names


def test_the_key_comes_from_the_named_variable(
    monkeypatch: pytest.MonkeyPatch, credential_env: Any
) -> None:
    credential_env("TEST_KEY")
    monkeypatch.setenv("TEST_KEY", "sk-1")
    assert api_key("TEST_KEY", "its api_key_env") == "sk-1"
    assert api_key(None, "its api_key_env") is None


def test_an_unset_listed_variable_names_itself_and_its_setting(
    monkeypatch: pytest.MonkeyPatch, credential_env: Any
) -> None:
    credential_env("TEST_KEY")
    monkeypatch.delenv("TEST_KEY", raising=False)
    with pytest.raises(EndpointFailed) as failed:
        api_key("TEST_KEY", "the provider's api_key_env")
    assert failed.value.message == (
        "environment variable TEST_KEY (the provider's api_key_env) "
        "is not set in pawl's environment"
    )
    assert failed.value.status is None


def test_an_unlisted_variable_is_refused_the_same_whether_set_or_not(
    monkeypatch: pytest.MonkeyPatch, credential_env: Any
) -> None:
    credential_env("OTHER_KEY")
    monkeypatch.setenv("TEST_SET_KEY", "sk-set")
    monkeypatch.delenv("TEST_UNSET_KEY", raising=False)
    answers = []
    for name in ("TEST_SET_KEY", "TEST_UNSET_KEY"):
        with pytest.raises(EndpointFailed) as failed:
            api_key(name, "its api_key_env")
        answers.append(failed.value.message)
    assert answers[0] == answers[1] == UNLISTED_ENV_MESSAGE


def test_pawl_and_aws_variables_can_never_be_listed(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    names = "PAWL_ADMIN_KEY,pawl_server_secret,AWS_SECRET_ACCESS_KEY,Aws_Session_Token,OK_KEY,1BAD"
    with caplog.at_level("WARNING"):
        assert credential_env_names(names) == ("OK_KEY",)
    assert sum("PAWL_CREDENTIAL_ENV_ALLOW" in r.message for r in caplog.records) == 5


def test_excerpts_are_one_line_and_scrub_the_key_before_cutting() -> None:
    assert snippet('{"error":\n  "bad key sk-secret"}', "sk-secret") == '{"error": "bad key ***"}'
    # The key straddles the cut: scrubbing first leaves no part of it.
    text = "x" * (SNIPPET_CHARS - 3) + "sk-secret"
    assert "sk-" not in snippet(text, "sk-secret")
    assert snippet("y" * (SNIPPET_CHARS + 10), None) == "y" * SNIPPET_CHARS + "..."
    assert snippet(" \n ", None) == "(empty body)"
