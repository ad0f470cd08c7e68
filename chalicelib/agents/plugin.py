"""The built-in agent adapters, registered through the same hook a plugin uses."""

from __future__ import annotations

from typing import Any

from chalicelib import openai_http, outbound
from chalicelib.agents import configs, http_agent, lambda_agent, model_agent, python_agent
from chalicelib.agents.contract import AdapterConfig, AgentAdapter, AgentReply, AgentRequest
from chalicelib.errors import ValidationFailed
from chalicelib.plugins.markers import hookimpl
from chalicelib.settings import CREDENTIAL_ENV_ALLOW


def _refuse_unsafe_url(url: str, field: str) -> None:
    """Refuse at config time a URL the outbound policy would refuse at call time."""
    try:
        outbound.check_url(url)
    except outbound.OutboundRefused as exc:
        raise ValidationFailed(str(exc), field=field) from None


def _refuse_unlisted_env(env_name: str | None, field: str) -> None:
    """Refuse an ``api_key_env`` the operator did not list (the same answer whether or not
    the variable exists); the call refuses it again (``openai_http.api_key``)."""
    if env_name is not None and not openai_http.is_listed_env(env_name):
        raise ValidationFailed(
            openai_http.UNLISTED_ENV_MESSAGE, field=field, setting=CREDENTIAL_ENV_ALLOW
        )


class _Adapter:
    config_model: type[AdapterConfig] = AdapterConfig
    type = ""
    _invoke: Any = None

    def check(self, config: AdapterConfig) -> None:
        return None

    def invoke(self, config: AdapterConfig, request: AgentRequest) -> AgentReply:
        result: AgentReply = self.__class__._invoke(config, request)
        return result


class HttpAdapter(_Adapter):
    type = "http"
    config_model = configs.HttpAgentConfig
    _invoke = staticmethod(http_agent.invoke)

    def check(self, config: AdapterConfig) -> None:
        if isinstance(config, configs.HttpAgentConfig):
            _refuse_unsafe_url(str(config.url), "config.url")


class ModelAdapter(_Adapter):
    type = "model"
    config_model = configs.ModelAgentConfig
    _invoke = staticmethod(model_agent.invoke)

    def check(self, config: AdapterConfig) -> None:
        if isinstance(config, configs.ModelAgentConfig):
            _refuse_unsafe_url(str(config.base_url), "config.base_url")
            _refuse_unlisted_env(config.api_key_env, "config.api_key_env")


class LambdaAdapter(_Adapter):
    type = "lambda"
    config_model = configs.LambdaAgentConfig
    _invoke = staticmethod(lambda_agent.invoke)


class PythonAdapter(_Adapter):
    type = "python"
    config_model = configs.PythonAgentConfig
    _invoke = staticmethod(python_agent.invoke)

    def check(self, config: AdapterConfig) -> None:
        if not isinstance(config, configs.PythonAgentConfig):
            return
        try:
            python_agent.check_allowed(config.callable)
        except python_agent.CallableRefused as exc:
            raise ValidationFailed(
                str(exc), field="config.callable", variable=python_agent.ALLOW_LIST_VARIABLE
            ) from None


class EchoConfig(AdapterConfig):
    """An echo agent takes no configuration."""


class EchoAdapter(_Adapter):
    """Answers the last user message unchanged, with no call anywhere.

    The agent behind ``/v2``'s ``conformance-eval-agent`` (the RFC 0251 fixtures are
    written for it); deterministic and free, so any project may use it.
    """

    type = "echo"
    config_model = EchoConfig

    def invoke(self, config: AdapterConfig, request: AgentRequest) -> AgentReply:
        users = [m for m in request.input if m.get("role") == "user"]
        text = str(users[-1].get("content", "")) if users else ""
        return AgentReply(status="completed", output=text)


@hookimpl
def pawl_register_agent_adapters() -> list[AgentAdapter]:
    return [HttpAdapter(), ModelAdapter(), LambdaAdapter(), PythonAdapter(), EchoAdapter()]
