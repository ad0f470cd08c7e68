"""``@event_sink`` and ``@baseline_validator``: an event sink or a baseline rule as one
decorated function (see :mod:`chalicelib.plugins.decorators` for how a decorated object
registers)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Generic, ParamSpec, overload

from chalicelib.domain.catalog import Eval
from chalicelib.domain.events import LifecycleEvent
from chalicelib.domain.runs import EvalRun
from chalicelib.plugins.decorators import PluginObject, name_of
from chalicelib.plugins.signature import PluginDefinitionError, accepted, call_with

P = ParamSpec("P")


class FunctionSink(PluginObject, Generic[P]):
    """An event sink made from ``fn(event: LifecycleEvent) -> None`` (``@event_sink``)."""

    kind = "event_sink"

    def __init__(self, fn: Callable[P, None], name: str) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        #: The function called with keywords the signature was read for (untyped on purpose:
        #: ``P`` describes how a caller calls it, not how pawl assembles the arguments).
        self._call: Callable[..., object] = fn
        self.type = name
        if accepted(fn) != {"event"}:
            raise PluginDefinitionError(f"event sink {name!r} takes exactly one parameter, event")

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> None:
        self.fn(*args, **kwargs)

    def deliver(self, event: LifecycleEvent) -> None:
        self._call(event=event)


class FunctionValidator(PluginObject, Generic[P]):
    """A baseline rule made from ``fn(eval, candidate, baseline) -> str | None``
    (``@baseline_validator``); it may declare fewer of the three."""

    kind = "baseline_validator"
    ARGUMENTS = frozenset({"eval", "candidate", "baseline"})

    def __init__(self, fn: Callable[P, str | None], name: str) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        #: The function called with keywords the signature was read for (untyped on purpose:
        #: ``P`` describes how a caller calls it, not how pawl assembles the arguments).
        self._call: Callable[..., object] = fn
        self.type = name
        unknown = sorted(accepted(fn) - self.ARGUMENTS)
        if unknown:
            raise PluginDefinitionError(
                f"baseline validator {name!r} asks for {', '.join(unknown)}; it may take "
                "eval, candidate, baseline"
            )

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> str | None:
        return self.fn(*args, **kwargs)

    def refusal(self, eval: Eval, candidate: EvalRun, baseline: EvalRun) -> str | None:
        reason = call_with(self.fn, {"eval": eval, "candidate": candidate, "baseline": baseline})
        return None if reason is None else str(reason)


@overload
def event_sink(fn: Callable[P, None], /) -> FunctionSink[P]: ...
@overload
def event_sink(name: str | None = None, /) -> Callable[[Callable[P, None]], FunctionSink[P]]: ...
def event_sink(name: Any = None, /) -> Any:
    """Make an event sink of ``fn(event: LifecycleEvent) -> None`` (named for reports)."""
    if callable(name):
        return FunctionSink(name, name_of(name))

    def decorate(fn: Callable[P, None]) -> FunctionSink[P]:
        return FunctionSink(fn, name or name_of(fn))

    return decorate


@overload
def baseline_validator(fn: Callable[P, str | None], /) -> FunctionValidator[P]: ...
@overload
def baseline_validator(
    name: str | None = None, /
) -> Callable[[Callable[P, str | None]], FunctionValidator[P]]: ...
def baseline_validator(name: Any = None, /) -> Any:
    """Make a baseline rule of ``fn(eval, candidate, baseline) -> str | None`` (a reason
    refuses the baseline)."""
    if callable(name):
        return FunctionValidator(name, name_of(name))

    def decorate(fn: Callable[P, str | None]) -> FunctionValidator[P]:
        return FunctionValidator(fn, name or name_of(fn))

    return decorate
