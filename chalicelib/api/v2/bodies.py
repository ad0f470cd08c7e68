"""The ``/v2`` request bodies: closed objects (an unknown property is a 400)."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import Field, StrictStr, field_validator

from chalicelib.domain.base import RequestBody
from chalicelib.iam.references import INVOKE_AGENT, Reference, reads

EvalMode = Literal["golden", "rubric", "adversarial", "regression", "live-shadow"]
Text = Annotated[StrictStr, Field(min_length=1, max_length=500)]
MAX_METADATA_BYTES = 16 * 1024
BASELINE_REFUSED = (
    "baselineRunId must name a completed eval run of this suite that this caller can read"
)
#: What a run names, authorized as the caller (docs/iam.md); denied, each answers what a
#: missing one gets. /v2 suites and runs have no SRN type: they are read as the project.
RunAgent = Annotated[
    Text, reads("agent", INVOKE_AGENT, message="agentId names no agent of this project")
]
RunSuite = Annotated[
    Text,
    Reference(
        "project",
        ("openwop:GetSuite",),
        message="evalSuiteRef names no suite of this caller",
        scope="project",
    ),
]
RunBaseline = Annotated[
    Text,
    Reference(
        "project", ("openwop:GetRun",), message=BASELINE_REFUSED, scope="project", names_field=False
    ),
]


class CreateRun(RequestBody):
    """``createRun`` (RFC 0081 §B, RFC 0251 §B): pawl runs eval runs only."""

    mode: Literal["eval"] | None = Field(None, description='"eval" (the only mode pawl runs)')
    evalSuiteRef: RunSuite | None = Field(
        None, description="suiteId@version, a bare suiteId (its newest version) or a fixture id"
    )
    agentId: RunAgent | None = Field(
        None, description="a pawl agent id of the caller's project, or conformance-eval-agent"
    )
    evalModes: list[EvalMode] | None = Field(None, min_length=1)
    baselineRunId: RunBaseline | None = None
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
