"""The parts of an OpenAI-compatible call that need no server: the key and error excerpts."""

from __future__ import annotations

import pytest

from chalicelib.openai_http import SNIPPET_CHARS, EndpointFailed, api_key, snippet


def test_the_key_comes_from_the_named_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAWL_TEST_KEY", "sk-1")
    assert api_key("PAWL_TEST_KEY", "its api_key_env") == "sk-1"
    assert api_key(None, "its api_key_env") is None


def test_an_unset_key_variable_names_itself_and_its_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PAWL_TEST_KEY", raising=False)
    with pytest.raises(EndpointFailed) as failed:
        api_key("PAWL_TEST_KEY", "the provider's api_key_env")
    assert failed.value.message == (
        "environment variable PAWL_TEST_KEY (the provider's api_key_env) "
        "is not set in pawl's environment"
    )
    assert failed.value.status is None


def test_excerpts_are_one_line_and_scrub_the_key_before_cutting() -> None:
    assert snippet('{"error":\n  "bad key sk-secret"}', "sk-secret") == '{"error": "bad key ***"}'
    # The key straddles the cut: scrubbing first leaves no part of it.
    text = "x" * (SNIPPET_CHARS - 3) + "sk-secret"
    assert "sk-" not in snippet(text, "sk-secret")
    assert snippet("y" * (SNIPPET_CHARS + 10), None) == "y" * SNIPPET_CHARS + "..."
    assert snippet(" \n ", None) == "(empty body)"
