"""Why a tool call produced no usable answer. Messages never hold header or context values."""

from __future__ import annotations

TOOL_CALL_FAILED = "TOOL_CALL_FAILED"
TOOL_ANSWER_INVALID = "TOOL_ANSWER_INVALID"
TOOL_NOT_CALLABLE = "TOOL_NOT_CALLABLE"


class ToolFailed(Exception):
    """The call failed or its answer was not a JSON object; ``code`` says which."""

    def __init__(self, message: str, code: str = TOOL_CALL_FAILED) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
