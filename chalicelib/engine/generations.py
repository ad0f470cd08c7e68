"""Generations outside a run: call an agent on its own, curate a turn into a dataset, purge.

- :func:`generate` is the eval's agent call (:func:`~chalicelib.engine.execute_item.call_agent`)
  with no scoring and no ``source`` (ordinary traffic, not eval spend).
- :func:`curate` copies a completed generation into a dataset item: a copy, so a later
  purge of the generation leaves the item whole.
- :func:`purge_content` erases a generation's input, output and object, and the copy of
  the output on every result that links it — nothing else (scores, verdicts and frozen
  inputs survive; dataset items are never touched).
"""

from __future__ import annotations

from typing import Any

from chalicelib.domain.catalog import Agent, Dataset, DatasetItem
from chalicelib.domain.runs import GENERATION_COMPLETED, Generation
from chalicelib.engine import releases
from chalicelib.engine.context import bind_agent
from chalicelib.engine.execute_item import call_agent
from chalicelib.engine.start import clean_tool_context
from chalicelib.errors import Conflict
from chalicelib.store import agents, blobs, datasets, generations, results


class _Omitted:
    """Marks ``expected_output`` as not given (``None`` means "store no reference answer")."""


OMITTED: Any = _Omitted()


def generate(
    agent: Agent,
    messages: list[dict[str, Any]],
    tool_context: dict[str, str],
    assignment_key: str | None = None,
) -> Generation:
    """Run the agent once on ``messages`` and store the generation: its live version, or
    during a staged rollout the side ``assignment_key`` (an actor or session id) is on."""
    serving = releases.serving_version(agent, assignment_key)
    version = agents.get_agent_version(agent.id, serving)
    generation = call_agent(
        bind_agent(version), agent.project_id, messages, clean_tool_context(tool_context)
    )
    return generations.create(generation)


def curate(
    dataset: Dataset,
    generation: Generation,
    expected_output: Any = OMITTED,
    metadata: dict[str, Any] | None = None,
) -> DatasetItem:
    """A new dataset item copied from a completed generation whose content is still stored."""
    if generation.status != GENERATION_COMPLETED:
        raise Conflict(
            f"generation {generation.id} did not complete (status {generation.status!r}); "
            "only a completed generation can become a dataset item",
            code="GENERATION_NOT_COMPLETED",
            status=generation.status,
        )
    if generation.content_purged or generation.input is None:
        raise Conflict(
            f"generation {generation.id} no longer holds its content (it was purged or "
            "never stored)",
            code="GENERATION_CONTENT_UNAVAILABLE",
        )
    expected = generation.output if expected_output is OMITTED else expected_output
    return datasets.create_item(
        dataset.id,
        dataset.project_id,
        list(generation.input),
        expected,
        metadata or {},
        source_generation_id=generation.id,
    )


def purge_content(generation: Generation) -> None:
    """Erase the generation's content and the output copies on its results."""
    blob_keys = generations.purge_content(generation.id)
    results.clear_output_for_generation(generation.id)
    blobs.delete(blob_keys)  # last: until now a reader could still follow a row's key
