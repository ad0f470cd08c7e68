"""Where ``pawl run`` puts its reports: the ``--junit`` and ``--markdown`` files, the GitHub
job summary (``$GITHUB_STEP_SUMMARY``, appended to) and step outputs (``--github-output``,
GitHub's ``$GITHUB_OUTPUT`` file format).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


@dataclass(frozen=True)
class ReportTargets:
    """Where a report goes besides the terminal (None: not asked for)."""

    junit: Path | None = None
    markdown: Path | None = None
    #: A ``$GITHUB_OUTPUT`` file to append step outputs to.
    github_output: Path | None = None

    @property
    def asked(self) -> bool:
        return any(p is not None for p in (self.junit, self.markdown, self.github_output))


def step_summary_asked(environ: Mapping[str, str] | None = None) -> bool:
    """Whether GitHub names a job summary for the report to go to."""
    return bool((environ if environ is not None else os.environ).get(STEP_SUMMARY_ENV))


def write_report(path: Path, text: str) -> None:
    """Write one report file, making its folder (CI paths such as ``reports/pawl.xml``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def append_step_summary(markdown: str, environ: Mapping[str, str] | None = None) -> Path | None:
    """Append to the job summary when GitHub names one; the path written, or None."""
    target = (environ if environ is not None else os.environ).get(STEP_SUMMARY_ENV)
    if not target:
        return None
    path = Path(target)
    with path.open("a", encoding="utf-8") as summary:
        summary.write(markdown if markdown.endswith("\n") else markdown + "\n")
    return path


def github_output_lines(outputs: Mapping[str, str]) -> str:
    """``outputs`` in GitHub's multiline form (``name<<DELIMITER`` … ``DELIMITER``), which
    carries any value: a value holding a newline cannot forge another output. The
    delimiter is random, as GitHub's own toolkit makes it, and checked against the value."""
    blocks = []
    for name, value in outputs.items():
        if not name or any(char in name for char in "\r\n<=") or name != name.strip():
            raise ValueError(f"not a step output name: {name!r}")
        delimiter = f"ghadelimiter_{uuid.uuid4()}"
        if delimiter in value:  # a 122-bit random collision: never, but never silently
            raise ValueError("output value contains its delimiter")
        blocks.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    return "".join(blocks)


def append_github_outputs(path: Path, outputs: Mapping[str, str]) -> None:
    with path.open("a", encoding="utf-8") as target:
        target.write(github_output_lines(outputs))
