"""Where the console shows a run: the URL shapes other surfaces link to.

``pawl run``, ``pawl demo --keep-running`` and webhook payloads print or carry these; the
console's pages serve them (``chalicelib/console/pages.py``). Pure: a base URL in, a URL out.
"""

from __future__ import annotations

from urllib.parse import quote

CONSOLE_ROOT = "/console"


def _segment(value: str) -> str:
    return quote(value, safe="")


def run_path(eval_id: str, run_id: str) -> str:
    """The run page's path: ``/console/evals/{eval_id}/runs/{run_id}``."""
    return f"{CONSOLE_ROOT}/evals/{_segment(eval_id)}/runs/{_segment(run_id)}"


def compare_path(eval_id: str, run_id: str) -> str:
    """The compare page of a run against its baseline: ``…/runs/{run_id}/compare``."""
    return f"{run_path(eval_id, run_id)}/compare"


def under(base_url: str, path: str) -> str:
    """``path`` below ``base_url`` (which may end in a stage path such as ``/api``)."""
    return base_url.rstrip("/") + path


def run_url(base_url: str, eval_id: str, run_id: str) -> str:
    return under(base_url, run_path(eval_id, run_id))


def compare_url(base_url: str, eval_id: str, run_id: str) -> str:
    return under(base_url, compare_path(eval_id, run_id))
