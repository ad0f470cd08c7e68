"""The ``/v2`` request bodies: closed objects (an unknown property is a 400)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StrictStr

from chalicelib.domain.base import RequestBody

EvalMode = Literal["golden", "rubric", "adversarial", "regression", "live-shadow"]
Text = Annotated[StrictStr, Field(min_length=1, max_length=500)]


class CreateRun(RequestBody):
    """``createRun`` (RFC 0081 §B, RFC 0251 §B): pawl runs eval runs only."""

    mode: Literal["eval"] | None = Field(None, description='"eval" (the only mode pawl runs)')
    evalSuiteRef: Text | None = Field(
        None, description="suiteId@version, a bare suiteId (its newest version) or a fixture id"
    )
    agentId: Text | None = Field(
        None, description="a pawl agent id of the caller's project, or conformance-eval-agent"
    )
    evalModes: list[EvalMode] | None = Field(None, min_length=1)
    baselineRunId: Text | None = None
    tags: list[Text] | None = Field(None, max_length=50)
    metadata: dict[str, Any] | None = None


class SuiteDocument(RequestBody):
    """Published shape only: the body is checked against ``agent-eval-suite.schema.json``."""

    model_config = {"extra": "allow"}
