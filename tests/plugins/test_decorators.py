"""``@scorer`` and friends: the config a signature derives, the return rule, the refusals at
decoration time, and how a decorated module registers in a real plugin host."""

from __future__ import annotations

import math
import types
from typing import Annotated, Any

import pytest
from pydantic import Field, ValidationError

from chalicelib.domain.events import LifecycleEvent
from chalicelib.plugins.adapter_contract import AgentAdapter
from chalicelib.plugins.manager import PluginHost
from chalicelib.plugins.scorer_contract import Scorer
from chalicelib.plugins.signature import PluginDefinitionError
from chalicelib.scoring import plugin as builtin_scorers
from pawl.plugins import (
    AdapterFailed,
    AgentReply,
    AgentRequest,
    ItemContext,
    ScoreOutcome,
    ScorerFailed,
    ScoringEnv,
    ValidationEnv,
    ValidationFailed,
    agent_adapter,
    baseline_validator,
    event_sink,
    hookimpl,
    scorer,
)

ENV = ScoringEnv(project_id="proj_test")


def item(output: str | None, expected: str | None = None) -> ItemContext:
    return ItemContext(input=[], output=output, expected=expected, item_metadata={})


class CheckEnv:
    project_id = "proj_test"
    phase = "create"
    agent_output_schema: dict[str, Any] | None = None

    def lookup(self, kind: str, resource_id: str) -> Any:
        return None

    def project_default(self, setting: str) -> Any:
        return None


@scorer
def shouts(item: ItemContext, min_bangs: Annotated[int, Field(ge=1)] = 1) -> bool:
    return (item.output or "").count("!") >= min_bangs


def score(obj: Any, output: str | None, **config: Any) -> ScoreOutcome:
    parsed = obj.config_model.model_validate({"type": obj.type, **config})
    outcome: ScoreOutcome = obj.score(parsed, item(output), ENV)
    return outcome


# --- the derived config -------------------------------------------------------------------


def test_type_comes_from_the_function_and_the_parameters_are_the_config() -> None:
    assert isinstance(shouts, Scorer)
    assert (shouts.type, shouts.named, shouts.calls_out) == ("shouts", False, True)
    schema = shouts.config_model.model_json_schema()
    assert schema["properties"]["type"]["const"] == "shouts"
    assert schema["properties"]["min_bangs"] == {
        "default": 1,
        "minimum": 1,
        "title": "Min Bangs",
        "type": "integer",
    }
    assert schema["additionalProperties"] is False


@pytest.mark.parametrize(
    ("config", "where"),
    [
        ({"min_bangs": "2"}, "min_bangs"),  # strict: no "2" -> 2
        ({"min_bangs": 0}, "min_bangs"),  # Field(ge=1) holds
        ({"loud": True}, "loud"),  # unknown key refused
        ({"type": "other"}, "type"),
    ],
)
def test_the_derived_config_is_strict(config: dict[str, Any], where: str) -> None:
    with pytest.raises(ValidationError) as refused:
        shouts.config_model.model_validate({"type": "shouts", **config})
    assert refused.value.errors()[0]["loc"][0] == where


def test_the_decorator_names_the_type_and_named_adds_a_name_key() -> None:
    @scorer("length_cap", named=True, calls_out=False)
    def _cap(item: ItemContext, limit: int) -> bool:
        return len(item.output or "") <= limit

    assert (_cap.type, _cap.named, _cap.calls_out) == ("length_cap", True, False)
    assert set(_cap.config_model.model_fields) == {"type", "name", "limit"}
    with pytest.raises(ValidationError):  # name and limit are both required
        _cap.config_model.model_validate({"type": "length_cap"})
    with pytest.raises(ValidationError):  # a name is a safe key
        _cap.config_model.model_validate({"type": "length_cap", "name": "a b", "limit": 1})
    assert score(_cap, "abc", name="short", limit=3).passed is True


def test_the_function_stays_callable() -> None:
    assert shouts(item("hey!!"), min_bangs=2) is True


# --- the return rule ----------------------------------------------------------------------


def test_a_bool_is_one_or_zero() -> None:
    assert score(shouts, "yes!") == ScoreOutcome(score=1.0, passed=True)
    assert score(shouts, "no") == ScoreOutcome(score=0.0, passed=False)


def test_a_number_passes_at_the_decorator_threshold_or_the_configs() -> None:
    @scorer(pass_threshold=0.5)
    def overlap(item: ItemContext) -> float:
        return 0.5 if item.output else 0.25

    assert score(overlap, "x") == ScoreOutcome(score=0.5, passed=True)
    assert score(overlap, None) == ScoreOutcome(score=0.25, passed=False)

    @scorer
    def graded(item: ItemContext, pass_threshold: float | None = None) -> float:
        return 0.75

    assert score(graded, "x").passed is False  # default bar: only a perfect score passes
    assert score(graded, "x", pass_threshold=0.7).passed is True


@pytest.mark.parametrize("bad", [1.5, -0.1, math.nan, "0.5", None])
def test_anything_else_errors_the_item(bad: Any) -> None:
    @scorer
    def broken(item: ItemContext) -> float:
        return bad  # type: ignore[no-any-return]

    with pytest.raises(ScorerFailed) as failed:
        score(broken, "x")
    assert failed.value.code == "SCORER_RESULT_INVALID"
    assert failed.value.meta["scorer"] == "broken"


def test_a_score_outcome_is_used_as_it_is() -> None:
    @scorer
    def reasoned(item: ItemContext, env: ScoringEnv) -> ScoreOutcome:
        return ScoreOutcome(score=0.2, passed=True, reasoning=f"for {env.project_id}")

    assert score(reasoned, "x") == ScoreOutcome(0.2, True, reasoning="for proj_test")


# --- check -------------------------------------------------------------------------------


def test_check_gets_only_what_it_asks_for() -> None:
    seen: list[dict[str, Any]] = []

    def no_empty_word(word: str, env: ValidationEnv) -> None:
        seen.append({"word": word, "phase": env.phase})
        if not word.strip():
            raise ValidationFailed("word is blank", field="word")

    @scorer(check=no_empty_word)
    def says(item: ItemContext, word: str, case_sensitive: bool = False) -> bool:
        return word in (item.output or "")

    says.check(says.config_model.model_validate({"type": "says", "word": "hi"}), CheckEnv())
    assert seen == [{"word": "hi", "phase": "create"}]
    with pytest.raises(ValidationFailed) as refused:
        says.check(says.config_model.model_validate({"type": "says", "word": " "}), CheckEnv())
    assert refused.value.meta["field"] == "word"


def test_a_scorer_without_check_accepts_any_valid_config() -> None:
    assert shouts.check(shouts.config_model.model_validate({"type": "shouts"}), CheckEnv()) is None


# --- refusals at decoration ----------------------------------------------------------------


def test_definitions_pawl_cannot_use_are_refused_when_decorated() -> None:
    with pytest.raises(PluginDefinitionError, match="needs a type annotation"):
        scorer("untyped")(lambda item, pattern: True)
    with pytest.raises(PluginDefinitionError, match="ordinary named parameter"):

        @scorer
        def _star(item: ItemContext, *words: str) -> bool:
            return True

    with pytest.raises(PluginDefinitionError, match="asks for colour"):

        def _check(colour: str) -> None: ...

        @scorer(check=_check)
        def _plain(item: ItemContext, size: int) -> bool:
            return True

    with pytest.raises(PluginDefinitionError, match="cannot be config keys too"):

        @scorer
        def _both(config: builtin_scorers.configs.ContainsConfig, extra: int) -> bool:
            return True

    with pytest.raises(PluginDefinitionError, match="must start with a letter"):
        scorer("has space")(lambda item: True)
    with pytest.raises(PluginDefinitionError, match="exactly one parameter"):
        event_sink(lambda event, other: None)
    with pytest.raises(PluginDefinitionError, match="may take eval, candidate, baseline"):
        baseline_validator(lambda run: None)


# --- agent adapters ------------------------------------------------------------------------


@agent_adapter("reverse", check=lambda suffix: None if suffix != "!" else _refuse_bang())
def reverse(request: AgentRequest, suffix: str = "") -> str:
    return "".join(reversed(str(request.input[-1]["content"]))) + suffix


def _refuse_bang() -> None:
    raise ValidationFailed("suffix may not be '!'", field="config.suffix")


def test_an_adapter_returns_text_or_a_reply() -> None:
    assert isinstance(reverse, AgentAdapter)
    request = AgentRequest(
        input=[{"role": "user", "content": "abc"}], agent_id="a", agent_version=1
    )
    config = reverse.config_model.model_validate({"suffix": "?"})
    assert reverse.invoke(config, request) == AgentReply(status="completed", output="cba?")
    with pytest.raises(ValidationError):  # strict and closed, like a scorer's
        reverse.config_model.model_validate({"suffix": 1})
    with pytest.raises(ValidationFailed):
        reverse.check(reverse.config_model.model_validate({"suffix": "!"}))

    @agent_adapter
    def mute(request: AgentRequest) -> str:
        return None  # type: ignore[return-value]

    with pytest.raises(AdapterFailed, match="returned NoneType"):
        mute.invoke(mute.config_model.model_validate({}), request)


# --- registration through the host --------------------------------------------------------


def _event(event_id: str) -> LifecycleEvent:
    return LifecycleEvent(
        id=event_id,
        event="eval_run.completed",
        project_id="proj_test",
        resource_type="eval_run",
        resource_id="evrun_x",
        data={},
        timestamp="2026-01-01T00:00:00Z",
    )


def decorated_module() -> tuple[types.ModuleType, list[str]]:
    """A plugin module with one of each decorated kind, a hand-written hook beside them,
    and a sink that raises: no ``@hookimpl`` written for the decorated ones."""
    module = types.ModuleType("decorated_plugin")
    delivered: list[str] = []

    @event_sink
    def broken_sink(event: LifecycleEvent) -> None:
        raise RuntimeError("down")

    @event_sink("recorder")
    def _record(event: LifecycleEvent) -> None:
        delivered.append(event.id)

    @baseline_validator
    def same_agent(candidate: Any, baseline: Any) -> str | None:
        return None if candidate.agent_id == baseline.agent_id else "another agent"

    @hookimpl
    def pawl_register_builtin_tools() -> dict[str, Any]:
        return {"noop": lambda payload: {}}

    module.__dict__.update(
        shouts=shouts,
        reverse=reverse,
        broken_sink=broken_sink,
        record=_record,
        same_agent=same_agent,
        pawl_register_builtin_tools=pawl_register_builtin_tools,
    )
    return module, delivered


def test_a_decorated_module_registers_without_hookimpls() -> None:
    module, delivered = decorated_module()
    host = PluginHost([builtin_scorers, module], load_entry_points=False)
    assert host.scorer("shouts") is shouts and host.adapter("reverse") is reverse
    assert "noop" in host.builtin_tools()  # the hand-written hook still counts
    (entry,) = [e for e in host.report.loaded if e["name"] == "decorated_plugin"]
    assert entry["scorers"] == ["shouts"] and entry["agents"] == ["reverse"]
    assert entry["sinks"] == ["broken_sink", "recorder"]
    assert entry["hooks"] == [
        "pawl_deliver_event",
        "pawl_register_agent_adapters",
        "pawl_register_builtin_tools",
        "pawl_register_scorers",
        "pawl_validate_baseline",
    ]
    # One sink of the module raising does not stop the other; the plugin is named failed.
    assert host.deliver_event(_event("evt_1")) == ["decorated_plugin"]
    assert delivered == ["evt_1"]


def test_importing_a_decorated_module_changes_nothing() -> None:
    host = PluginHost([builtin_scorers], load_entry_points=False)
    assert "shouts" not in host.scorer_types()  # decorated here, never loaded as a plugin


def test_the_builtins_are_decorated_scorers_in_their_documented_order() -> None:
    host = PluginHost([builtin_scorers], load_entry_points=False)
    assert host.scorer_types() == [
        "exact_match",
        "contains",
        "json_logic",
        "output_schema",
        "embedding_similarity",
        "llm_judge",
        "tool",
        "decider",
        "openwop_expected",
    ]
    assert {t for t in host.scorer_types() if not host.scorer(t).calls_out} == {  # type: ignore[attr-defined]
        "exact_match",
        "contains",
        "json_logic",
        "output_schema",
    }
    assert hasattr(host.scorer("llm_judge"), "project_fallbacks")
