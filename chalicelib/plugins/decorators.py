"""``@scorer`` and ``@agent_adapter``: a plugin as one decorated function (``@event_sink``
and ``@baseline_validator`` are in :mod:`chalicelib.plugins.event_decorators`).

A decorated function becomes an object implementing the matching contract (``Scorer``,
``AgentAdapter``, a sink, a baseline rule) and stays callable as the function it was, so
a plugin's tests can call it directly. Nothing registers at decoration time: the plugin
host finds the decorated objects in a module's namespace when it loads that module as a
plugin (:mod:`chalicelib.plugins.collect`), so importing a module never changes pawl.

The config of a scorer or adapter is the function's parameters after its context ones
(``item``/``env`` for a scorer, ``request`` for an adapter), turned into a strict pydantic
model (:mod:`chalicelib.plugins.signature`); or, for rules a signature cannot express, one
parameter ``config: SomeModel`` naming an explicit model (pawl's own built-ins do this).

What a scorer function may return (the rule the engine applies):

- a :class:`ScoreOutcome`, used as it is;
- a ``bool``: score 1.0 and passed, or score 0.0 and failed;
- a number from 0 to 1: that score, passed when it reaches the config's
  ``pass_threshold`` (when the scorer has that key and it is set), else the decorator's
  ``pass_threshold`` (default 1.0: only a perfect score passes).

Anything else (a number outside 0..1, NaN, a string) errors the item with
``SCORER_RESULT_INVALID``: a plugin's bug is never recorded as a score.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from typing import Any, Generic, Literal, ParamSpec, TypeVar, overload

from chalicelib.plugins.adapter_contract import (
    AdapterConfig,
    AdapterFailed,
    AgentReply,
    AgentRequest,
)
from chalicelib.plugins.scorer_contract import (
    ItemContext,
    ProjectSetting,
    ScoreOutcome,
    ScorerConfig,
    ScorerFailed,
    ScorerName,
    ScoringEnv,
    ValidationEnv,
)
from chalicelib.plugins.signature import (
    STRICT,
    PluginDefinitionError,
    accepted,
    as_model,
    call_with,
    config_values,
    derive_model,
    read_signature,
)

P = ParamSpec("P")
ScoreResult = ScoreOutcome | float | bool
R = TypeVar("R", bound=ScoreOutcome | float | bool)
A = TypeVar("A", bound=AgentReply | str)

SCORER_CONTEXT = frozenset({"item", "env"})
ADAPTER_CONTEXT = frozenset({"request"})
RESULT_INVALID = "SCORER_RESULT_INVALID"
#: ``project_fallbacks(config)`` -> the project settings a stored config falls back on.
FallbacksFn = Callable[[dict[str, Any]], tuple[ProjectSetting, ...]]


class StrictScorerConfig(ScorerConfig):
    """Base of a derived scorer config: unknown keys refused, nothing coerced."""

    model_config = STRICT


class StrictAdapterConfig(AdapterConfig):
    """Base of a derived adapter config: unknown keys refused, nothing coerced."""

    model_config = STRICT


class PluginObject:
    """What the plugin host collects from a module: every decorated object is one."""

    kind: Literal["scorer", "agent_adapter", "event_sink", "baseline_validator"]
    #: The type (scorers, adapters) or name (sinks, validators) reports show.
    type: str


#: What a scorer or agent type may be called (it is a JSON value and a results key).
TYPE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")


def checked_type(type_name: str, what: str) -> str:
    """``type_name`` when it is a usable type name; refused at decoration otherwise."""
    if not TYPE_NAME.match(type_name):
        raise PluginDefinitionError(
            f"{what} type {type_name!r} must start with a letter and hold at most 64 letters, "
            "digits, '_' or '-'"
        )
    return type_name


def _checked_check(
    check: Callable[..., object] | None, allowed: frozenset[str], owner: str
) -> Callable[..., object] | None:
    """Refuse, at decoration, a ``check`` asking for something it will never be given."""
    if check is not None:
        unknown = sorted(accepted(check) - allowed)
        if unknown:
            raise PluginDefinitionError(
                f"{owner}: check {check.__qualname__} asks for {', '.join(unknown)}; it may "
                f"take {', '.join(sorted(allowed))}"
            )
    return check


def outcome_of(type_name: str, result: object, threshold: float) -> ScoreOutcome:
    """A scorer function's return value as a :class:`ScoreOutcome` (the module's rule)."""
    if isinstance(result, ScoreOutcome):
        return result
    if isinstance(result, bool):
        return ScoreOutcome(score=1.0 if result else 0.0, passed=result)
    if isinstance(result, int | float) and math.isfinite(result) and 0 <= result <= 1:
        return ScoreOutcome(score=float(result), passed=result >= threshold)
    raise ScorerFailed(
        f"scorer {type_name!r} returned {result!r}: a scorer returns a ScoreOutcome, a bool, "
        "or a number from 0 to 1",
        code=RESULT_INVALID,
        scorer=type_name,
    )


class FunctionScorer(PluginObject, Generic[P, R]):
    """A scorer made from one function (``@scorer``); implements the ``Scorer`` protocol."""

    kind = "scorer"

    def __init__(
        self,
        fn: Callable[P, R],
        type_name: str,
        *,
        check: Callable[..., object] | None = None,
        named: bool = False,
        calls_out: bool = True,
        pass_threshold: float = 1.0,
        project_fallbacks: FallbacksFn | None = None,
    ) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        #: The function called with keywords the signature was read for (untyped on purpose:
        #: ``P`` describes how a caller calls it, not how pawl assembles the arguments).
        self._call: Callable[..., object] = fn
        self.type = checked_type(type_name, "scorer")
        self.named = named
        self.calls_out = calls_out
        self.pass_threshold = pass_threshold
        signature = read_signature(fn, SCORER_CONTEXT, ScorerConfig)
        self._context = signature.context
        self._fields = frozenset(signature.fields)
        self._explicit = signature.model is not None
        if signature.model is not None:
            self.config_model: type[ScorerConfig] = signature.model  # type: ignore[assignment]
        else:
            extra: dict[str, Any] = {"type": (Literal[type_name], ...)}
            if named and "name" not in signature.fields:
                extra["name"] = (ScorerName, ...)
            self.config_model = derive_model(
                f"{type_name}_config", StrictScorerConfig, signature.fields, extra
            )
        self._threshold_key = "pass_threshold" in self.config_model.model_fields
        allowed = frozenset({"env", "config"}) | self._fields
        self._check = _checked_check(check, allowed, f"scorer {type_name!r}")
        if project_fallbacks is not None:
            self.project_fallbacks = project_fallbacks

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(*args, **kwargs)

    def _parsed(self, config: ScorerConfig) -> ScorerConfig:
        return as_model(self.config_model, config)

    def check(self, config: ScorerConfig, env: ValidationEnv) -> None:
        if self._check is None:
            return
        parsed = self._parsed(config)
        offered = {"env": env, "config": parsed, **config_values(parsed, self._fields)}
        call_with(self._check, offered)

    def score(self, config: ScorerConfig, item: ItemContext, env: ScoringEnv) -> ScoreOutcome:
        parsed = self._parsed(config)
        context: dict[str, object] = {"item": item, "env": env}
        kwargs: dict[str, Any] = {name: context[name] for name in self._context}
        if self._explicit:
            kwargs["config"] = parsed
        kwargs.update(config_values(parsed, self._fields))
        # Read only when the model has the key: a missing attribute on a pydantic model
        # costs an exception per item.
        configured = parsed.pass_threshold if self._threshold_key else None  # type: ignore[attr-defined]
        threshold = self.pass_threshold if configured is None else float(configured)
        return outcome_of(self.type, self._call(**kwargs), threshold)

    def __repr__(self) -> str:
        return f"<scorer {self.type!r} from {self.fn.__module__}.{self.fn.__qualname__}>"


class FunctionAdapter(PluginObject, Generic[P, A]):
    """An agent adapter made from one function (``@agent_adapter``); an ``AgentAdapter``.

    The function gets the ``request`` (if it asks) and its config keys; it returns an
    :class:`AgentReply`, or a string (a completed reply with that output). It raises
    :class:`AdapterFailed` for a failed generation.
    """

    kind = "agent_adapter"

    def __init__(
        self, fn: Callable[P, A], type_name: str, *, check: Callable[..., object] | None = None
    ) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        #: The function called with keywords the signature was read for (untyped on purpose:
        #: ``P`` describes how a caller calls it, not how pawl assembles the arguments).
        self._call: Callable[..., object] = fn
        self.type = checked_type(type_name, "agent")
        signature = read_signature(fn, ADAPTER_CONTEXT, AdapterConfig)
        self._context = signature.context
        self._fields = frozenset(signature.fields)
        self._explicit = signature.model is not None
        if signature.model is not None:
            self.config_model: type[AdapterConfig] = signature.model  # type: ignore[assignment]
        else:
            self.config_model = derive_model(
                f"{type_name}_config", StrictAdapterConfig, signature.fields, {}
            )
        allowed = frozenset({"config"}) | self._fields
        self._check = _checked_check(check, allowed, f"agent adapter {type_name!r}")

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> A:
        return self.fn(*args, **kwargs)

    def check(self, config: AdapterConfig) -> None:
        if self._check is not None:
            parsed = as_model(self.config_model, config)
            call_with(self._check, {"config": parsed, **config_values(parsed, self._fields)})

    def invoke(self, config: AdapterConfig, request: AgentRequest) -> AgentReply:
        parsed = as_model(self.config_model, config)
        kwargs: dict[str, Any] = {"request": request} if self._context else {}
        if self._explicit:
            kwargs["config"] = parsed
        kwargs.update(config_values(parsed, self._fields))
        result = self._call(**kwargs)
        if isinstance(result, AgentReply):
            return result
        if isinstance(result, str):
            return AgentReply(status="completed", output=result)
        raise AdapterFailed(
            f"agent adapter {self.type!r} returned {type(result).__name__}: an adapter "
            "returns an AgentReply or the output text"
        )


def name_of(fn: Callable[..., object]) -> str:
    return fn.__name__.strip("_")


@overload
def scorer(fn: Callable[P, R], /) -> FunctionScorer[P, R]: ...
@overload
def scorer(
    name: str | None = None,
    /,
    *,
    check: Callable[..., object] | None = None,
    named: bool = False,
    calls_out: bool = True,
    pass_threshold: float = 1.0,
    project_fallbacks: FallbacksFn | None = None,
) -> Callable[[Callable[P, R]], FunctionScorer[P, R]]: ...
def scorer(
    name: Any = None,
    /,
    *,
    check: Callable[..., object] | None = None,
    named: bool = False,
    calls_out: bool = True,
    pass_threshold: float = 1.0,
    project_fallbacks: FallbacksFn | None = None,
) -> Any:
    """Make a scorer of one function; its type is the function's name or ``name``.

    ``check(env, config, <config keys>)`` (any subset) runs the rules the config's shape
    cannot express and raises ``ValidationFailed(message, field=...)``. ``named``: several
    may coexist in an eval under distinct ``name``s (a ``name`` key is added when the
    function has none). ``calls_out=False``: the function makes no outbound call, so pawl
    still runs it once a run is cancelled. ``pass_threshold``: see the module's rule.
    """
    options = {
        "check": check,
        "named": named,
        "calls_out": calls_out,
        "pass_threshold": pass_threshold,
        "project_fallbacks": project_fallbacks,
    }
    if callable(name):
        return FunctionScorer(name, name_of(name), **options)  # type: ignore[arg-type]

    def decorate(fn: Callable[P, R]) -> FunctionScorer[P, R]:
        return FunctionScorer(fn, name or name_of(fn), **options)  # type: ignore[arg-type]

    return decorate


@overload
def agent_adapter(fn: Callable[P, A], /) -> FunctionAdapter[P, A]: ...
@overload
def agent_adapter(
    name: str | None = None, /, *, check: Callable[..., object] | None = None
) -> Callable[[Callable[P, A]], FunctionAdapter[P, A]]: ...
def agent_adapter(name: Any = None, /, *, check: Callable[..., object] | None = None) -> Any:
    """Make an agent adapter of one function; an agent's ``type`` names it (the function's
    name or ``name``). ``check(config, <config keys>)`` raises ``ValidationFailed`` for a
    config this deployment refuses."""
    if callable(name):
        return FunctionAdapter(name, name_of(name), check=check)

    def decorate(fn: Callable[P, A]) -> FunctionAdapter[P, A]:
        return FunctionAdapter(fn, name or name_of(fn), check=check)

    return decorate


__all__ = [
    "FunctionAdapter",
    "FunctionScorer",
    "PluginDefinitionError",
    "PluginObject",
    "ScoreResult",
    "StrictAdapterConfig",
    "StrictScorerConfig",
    "agent_adapter",
    "outcome_of",
    "scorer",
]
