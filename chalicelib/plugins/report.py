"""What the plugin host found: each loaded plugin (its hooks, and the scorer types, agent
types and sinks it adds, and the built-ins it replaces) and each one that failed; and the
report as the lines ``pawl plugins`` prints (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict


class LoadedPlugin(TypedDict):
    name: str
    version: str
    source: str
    hooks: list[str]
    #: What the plugin adds: scorer types, agent types, event sinks (by name), and the
    #: built-in scorer or agent types it replaces.
    scorers: list[str]
    agents: list[str]
    sinks: list[str]
    overrides: list[str]


class FailedPlugin(TypedDict):
    name: str
    error: str


@dataclass
class PluginReport:
    loaded: list[LoadedPlugin] = field(default_factory=list)
    failed: list[FailedPlugin] = field(default_factory=list)


def _listed(label: str, names: list[str]) -> list[str]:
    return [f"      {label}: {', '.join(names)}"] if names else []


def report_lines(report: PluginReport) -> list[str]:
    """``pawl plugins``' output: per plugin, where it came from, its hooks, what it adds."""
    lines = ["loaded:"]
    for entry in report.loaded:
        lines.append(f"  {entry['name']}  {entry['version']}  from {entry['source']}")
        lines.append(f"      hooks: {', '.join(entry['hooks']) or '(no hooks)'}")
        lines += _listed("scorers", entry["scorers"])
        lines += _listed("agents", entry["agents"])
        lines += _listed("sinks", entry["sinks"])
        lines += _listed("overrides built-in", entry["overrides"])
    if report.failed:
        lines.append("failed to load:")
        lines += [f"  {failure['name']}: {failure['error']}" for failure in report.failed]
    return lines
