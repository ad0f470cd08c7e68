"""The built-in embedding backends, registered through the hook a plugin uses to add one."""

from __future__ import annotations

from typing import Any

from chalicelib.embeddings.local import LocalEmbeddings
from chalicelib.embeddings.openai_compatible import OpenAIEmbeddings
from chalicelib.plugins.markers import hookimpl


@hookimpl
def pawl_register_embedding_backends() -> dict[str, Any]:
    # The classes are the factories: constructing one is cheap (no I/O, no heavy import).
    return {OpenAIEmbeddings.name: OpenAIEmbeddings, LocalEmbeddings.name: LocalEmbeddings}
