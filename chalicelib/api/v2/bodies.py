"""The ``/v2`` request bodies: closed objects (an unknown property is a 400)."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import Field, StrictStr, field_validator

from chalicelib.domain.base import RequestBody

EvalMode = Literal["golden", "rubric", "adversarial", "regression", "live-shadow"]
Text = Annotated[StrictStr, Field(min_length=1, max_length=500)]
MAX_METADATA_BYTES = 16 * 1024


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
    metadata: dict[str, Any] | None = Field(None, description="at most 16 KB as JSON")

    @field_validator("metadata")
    @classmethod
    def _small_metadata(cls, metadata: dict[str, Any] | None) -> dict[str, Any] | None:
        # It is copied onto the run rows: keep them far from DynamoDB's 400 KB.
        if metadata is not None and len(json.dumps(metadata).encode()) > MAX_METADATA_BYTES:
            raise ValueError(f"metadata is larger than {MAX_METADATA_BYTES} bytes as JSON")
        return metadata


class SuiteDocument(RequestBody):
    """Published shape only: the body is checked against ``agent-eval-suite.schema.json``."""

    model_config = {"extra": "allow"}
