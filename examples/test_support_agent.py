"""Gate a test suite on a pawl eval: ``pytest examples/test_support_agent.py``.

Needs a pawl server and key (``--pawl-server``/``--pawl-api-key``, or ``$PAWL_SERVER`` and
``$PAWL_API_KEY``) and the agent under test (``$SUPPORT_AGENT_URL``; try
``python examples/support_agent.py``). The first run gates on the threshold; every later one
also against the latest completed run, and a failure lists the items that regressed.
"""

from __future__ import annotations

import os
from pathlib import Path

from pawl.pytest_plugin import Evaluate

HERE = Path(__file__).parent
AGENT_URL = os.environ.get("SUPPORT_AGENT_URL", "http://127.0.0.1:8100/")
# An item passes when the answer holds the fact its metadata names.
MENTIONS_THE_FACT = {
    "type": "json_logic",
    "expression": {"in": [{"var": "item.metadata.must_mention"}, {"var": "output"}]},
}


def test_support_agent_answers_the_faq(pawl_eval: Evaluate) -> None:
    verdict = pawl_eval(
        "support-faq",
        dataset=HERE / "support_faq.jsonl",
        agent=AGENT_URL,
        scorers=[MENTIONS_THE_FACT],
        threshold=0.8,
        baseline="latest",
        max_regression=0.1,
        group_by="kind",
    )
    assert verdict.passed, verdict.explain()
