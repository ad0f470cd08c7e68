"""Re-export of :mod:`chalicelib.plugins.adapter_contract` (the adapter contract's old home)."""

from chalicelib.plugins.adapter_contract import (
    AdapterConfig,
    AdapterFailed,
    AgentAdapter,
    AgentReply,
    AgentRequest,
    Usage,
)

__all__ = ["AdapterConfig", "AdapterFailed", "AgentAdapter", "AgentReply", "AgentRequest", "Usage"]
