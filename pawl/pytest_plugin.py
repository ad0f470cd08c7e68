"""pawl's pytest plugin (entry point ``pawl`` in the ``pytest11`` group): gate a test on a run.

The ``pawl_eval`` fixture is :func:`pawl.evaluate` with the session's server settings
(``--pawl-server``, ``--pawl-api-key``, ``--pawl-project-id``, else ``$PAWL_SERVER``,
``$PAWL_API_KEY``, ``$PAWL_PROJECT_ID``)::

    def test_support_agent(pawl_eval):
        verdict = pawl_eval("support-faq", dataset="cases.jsonl", agent=URL,
                            scorers=[{"type": "contains", "value": "refund"}], threshold=0.8)
        assert verdict.passed, verdict.explain()

A failing verdict's message is :meth:`pawl.Verdict.explain`: the reasons, the figures and
the items that flipped against the baseline. Each test records the run it started as
``user_properties`` (``pawl_run_id``, ``pawl_console_url``), which ``--junitxml`` writes.

pytest loads this module in every session of an environment where pawl is installed, pawl's
own test run included, so it imports nothing but pytest until a test asks for the fixture.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import pytest

if TYPE_CHECKING:
    from pawl.evaluation import Verdict

#: The options, each with the environment variable :func:`pawl.evaluate` falls back to.
OPTIONS = {
    "server": "PAWL_SERVER",
    "api_key": "PAWL_API_KEY",
    "project_id": "PAWL_PROJECT_ID",
}


class Evaluate(Protocol):
    """The ``pawl_eval`` fixture: :func:`pawl.evaluate` with the session's settings."""

    def __call__(self, name: str, **arguments: Any) -> Verdict: ...


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pawl", "pawl evals (the pawl_eval fixture)")
    for setting, variable in OPTIONS.items():
        flag = "--pawl-" + setting.replace("_", "-")
        group.addoption(
            flag,
            dest=f"pawl_{setting}",
            default=None,
            metavar=setting.upper(),
            help=f"the pawl_eval fixture's {setting.replace('_', ' ')} (default: ${variable})",
        )


def session_settings(config: pytest.Config) -> dict[str, str]:
    """The settings given on the command line; unset ones are left to the environment."""
    given = {setting: config.getoption(f"pawl_{setting}") for setting in OPTIONS}
    return {setting: value for setting, value in given.items() if value}


@pytest.fixture
def pawl_eval(request: pytest.FixtureRequest) -> Evaluate:
    """Run an eval on the pawl server and answer its :class:`pawl.Verdict`."""
    settings = session_settings(request.config)

    def run(name: str, **arguments: Any) -> Verdict:
        from pawl.evaluation import evaluate

        verdict = evaluate(name, **{**settings, **arguments})
        request.node.user_properties.append(("pawl_run_id", verdict.run_id))
        request.node.user_properties.append(("pawl_console_url", verdict.console_url))
        return verdict

    return run
