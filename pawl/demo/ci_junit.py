"""A :class:`~pawl.demo.ci_items.CiReport` as a JUnit XML file, for a CI job's test tab.

One ``<testsuite>`` named after the eval; one ``<testcase>`` per dataset item (classname
the eval, name the item id and the start of its question). A failed item carries a
``<failure>`` whose message is its first failing scorer's reasoning (every failing scorer's
in the body), an errored item an ``<error>`` with the error's code and message. An item
whose verdict flipped against the baseline says so in a ``pawl.flip`` property (and a
regression's failure type is ``regressed``). The run's figures and gates are the suite's
``<properties>``.

Pure. Tenant text (questions, outputs, reasoning, the eval's name) goes through
ElementTree, which escapes it, after :func:`xml_safe` drops what XML 1.0 cannot carry at
all (most control characters): an agent's output can hold anything.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from pawl.demo.ci_items import ERRORED, FAILED, REGRESSED, CiReport, ItemReport, shorten
from pawl.demo.summary import (
    fmt_delta,
    fmt_interval,
    fmt_p,
    fmt_rate,
    fmt_signed_rank,
    verdict_word,
)

#: Characters XML 1.0 does not allow even escaped (C0 controls but tab/LF/CR, surrogates,
#: U+FFFE/U+FFFF): a document holding one is not well-formed, so they become U+FFFD.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
#: A failure's message attribute is a one-liner in every CI's UI; the body has it all.
MESSAGE_CHARS = 500


def xml_safe(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _property(parent: ET.Element, name: str, value: object) -> None:
    ET.SubElement(parent, "property", name=name, value=xml_safe(str(value)))


def suite_properties(report: CiReport) -> list[tuple[str, str]]:
    """The run-level summary: verdict, figures, gates, links (name, value) in order."""
    comparison, run = report.comparison, report.comparison.candidate
    pairs = [
        ("pawl.eval_id", report.eval_id),
        ("pawl.eval_name", report.eval_name),
        ("pawl.run_id", run.run_id),
        ("pawl.agent_version", str(run.agent_version)),
        ("pawl.status", run.status),
        ("pawl.verdict", verdict_word(run.passed)),
        ("pawl.pass_rate", fmt_rate(run.overall.rate)),
        ("pawl.pass_rate_interval", fmt_interval(run.overall)),
        ("pawl.pass_threshold", fmt_rate(comparison.pass_threshold)),
        ("pawl.items_scored", str(run.overall.scored)),
        ("pawl.items_errored", str(run.errored)),
    ]
    change = comparison.change
    if comparison.baseline_run_id and change is not None:
        pairs += [
            ("pawl.baseline_run_id", comparison.baseline_run_id),
            ("pawl.pass_rate_delta", fmt_delta(change.delta)),
            ("pawl.mcnemar_p", fmt_p(change.p_value)),
            ("pawl.improved", str(change.improved)),
            ("pawl.regressed", str(change.regressed)),
        ]
        pairs += [
            (f"pawl.scorer.{row.key}.{name}", value)
            for row in comparison.scorers
            if row.test is not None
            for name, value in (
                ("mean_delta", fmt_delta(row.mean_delta)),
                ("signed_rank", fmt_signed_rank(row.test)),
            )
        ]
    if report.baseline_note:
        pairs.append(("pawl.baseline_note", report.baseline_note))
    pairs += [(f"pawl.gate.{n}", reason) for n, reason in enumerate(run.reasons, start=1)]
    if run.failure_reason:
        pairs.append(("pawl.failure_reason", run.failure_reason))
    pairs.append(("pawl.console_url", report.console_url))
    if report.compare_url:
        pairs.append(("pawl.compare_url", report.compare_url))
    return pairs


def _details(item: ItemReport) -> str:
    lines = list(item.failures) or ([item.error] if item.error else [])
    if item.flip == REGRESSED:
        lines.append("regressed: this item passed in the baseline run")
    if item.trial_count > 1:
        flaky = ", flaky (its trials disagree)" if item.flaky else ""
        lines.append(f"{item.trial_count} trials{flaky}; the first with this outcome is shown")
    if item.question:
        lines.append(f"question: {item.question}")
    if item.output is not None:
        lines.append(f"output: {item.output}")
    return xml_safe("\n".join(lines))


def testcase(report: CiReport, item: ItemReport) -> ET.Element:
    case = ET.Element("testcase", classname=xml_safe(report.eval_name), name=xml_safe(item.label))
    if item.flip:  # only then: a case's name starts with its item id already
        _property(ET.SubElement(case, "properties"), "pawl.flip", item.flip)
    if item.outcome in (FAILED, ERRORED):
        tag = "failure" if item.outcome == FAILED else "error"
        kind = REGRESSED if item.flip == REGRESSED else item.outcome
        if item.outcome == ERRORED and item.error:
            kind = item.error.split(":", 1)[0]
        message = shorten(item.reason or item.outcome, MESSAGE_CHARS)
        result = ET.SubElement(case, tag, message=xml_safe(message), type=xml_safe(kind))
        result.text = _details(item)
    return case


def render_junit(report: CiReport) -> str:
    """The whole document, UTF-8 XML with its declaration."""
    failures, errors = len(report.with_outcome(FAILED)), len(report.with_outcome(ERRORED))
    counts = {"tests": str(len(report.items)), "failures": str(failures), "errors": str(errors)}
    root = ET.Element("testsuites", {"name": "pawl", **counts})
    suite_attributes = {"name": xml_safe(report.eval_name), **counts, "skipped": "0"}
    suite = ET.SubElement(root, "testsuite", suite_attributes)
    properties = ET.SubElement(suite, "properties")
    for name, value in suite_properties(report):
        _property(properties, name, value)
    for item in report.items:
        suite.append(testcase(report, item))
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'
