"""The HTML report as Chromium lays it out: no sideways overflow at 420 px, a visible zero.

Debian's Chromium (``/usr/bin/chromium``; ``make test`` installs it when missing, and no
browser is ever downloaded) loads a page that frames the report twice, 420 px and 1280 px
wide, and measures each frame on load; ``--dump-dom`` hands the measurements back in the
page's title. The report itself stays script-free: the probe lives in the framing page.
"""

from __future__ import annotations

import copy
import html
import json
import os
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pawl.demo.report import render_report
from pawl.demo.summary import build_comparison
from pawl.transport import Run
from tests.unit.test_report import BASELINE_BODY, CANDIDATE_BODY

CHROMIUM = Path(os.environ.get("PAWL_CHROMIUM", "/usr/bin/chromium"))
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="`make test` installs Debian's chromium"),
]
#: The flags this machine's Chromium needs headless (no sandbox as root, no network chatter).
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
WIDTHS = (420, 1280)
PROBE = """
window.addEventListener('load', function () {
  var found = {};
  document.querySelectorAll('iframe').forEach(function (frame) {
    var doc = frame.contentDocument, bars = [];
    doc.querySelectorAll('svg g').forEach(function (g) {
      var rect = g.querySelector('rect'), value = g.querySelector('text.value');
      if (rect && value) {
        bars.push({side: rect.getAttribute('class'), label: value.textContent,
                   height: rect.getBoundingClientRect().height});
      }
    });
    var title = doc.querySelector('svg text.axis-title');
    found[frame.id] = {
      viewport: frame.contentWindow.innerWidth,
      scroll_width: doc.documentElement.scrollWidth,
      svg_width: doc.querySelector('svg').getBoundingClientRect().width,
      bars: bars,
      axis_title: title ? title.textContent : null,
      axis_title_height: title ? title.getBoundingClientRect().height : 0
    };
  });
  document.title = JSON.stringify(found);
});
"""


def _report_with_a_zero_rate() -> str:
    baseline = copy.deepcopy(BASELINE_BODY)
    billing = baseline["aggregate_scores"]["grouping"]["groups"]["billing"]
    billing.update(pass_rate=0.0, pass_rate_interval={"low": 0.0, "high": 0.3244, "level": 0.95})
    comparison = build_comparison(Run.model_validate(CANDIDATE_BODY), Run.model_validate(baseline))
    return render_report(comparison, generated_at="2026-12-01T00:00:00Z")


def _framing_page(report: str) -> str:
    frames = "".join(
        f'<iframe id="w{width}" style="width:{width}px;height:1600px;border:0;display:block" '
        f'srcdoc="{html.escape(report, quote=True)}"></iframe>'
        for width in WIDTHS
    )
    head = "<html><head><title>probe</title></head><body style='margin:0'>"
    return f"{head}{frames}<script>{PROBE}</script></body></html>"


def _chromium(tmp_path: Path, *args: str) -> str:
    done = subprocess.run(
        [str(CHROMIUM), *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _measure(tmp_path: Path) -> tuple[dict[str, Any], Path]:
    page = tmp_path / "probe.html"
    page.write_text(_framing_page(_report_with_a_zero_rate()))
    window = f"--window-size={max(WIDTHS) + 20},1700"
    dom = _chromium(tmp_path, window, "--dump-dom", page.as_uri())
    start, end = dom.index("<title>") + len("<title>"), dom.index("</title>")
    screenshot = tmp_path / "report.png"
    _chromium(tmp_path, window, f"--screenshot={screenshot}", page.as_uri())
    return json.loads(html.unescape(dom[start:end])), screenshot


def test_the_report_reflows_at_420_px_and_draws_a_zero_as_a_bar(tmp_path: Path) -> None:
    measured, screenshot = _measure(tmp_path)
    narrow, wide = measured["w420"], measured["w1280"]

    assert narrow["viewport"] == 420
    assert narrow["scroll_width"] <= narrow["viewport"]  # nothing sticks out sideways
    assert narrow["svg_width"] <= narrow["viewport"]  # the plot scales down to fit
    assert wide["scroll_width"] <= wide["viewport"] and wide["svg_width"] == 760

    for frame in (narrow, wide):
        zero = [bar for bar in frame["bars"] if bar["label"] == "0.00"]
        assert [bar["side"] for bar in zero] == ["baseline"]
        assert zero[0]["height"] > 0  # drawn: a measured zero, not missing data
        assert len(frame["bars"]) == 4 and all(bar["height"] > 0 for bar in frame["bars"])
        assert frame["axis_title"] == "pass rate (95% interval)"
        assert frame["axis_title_height"] > 0

    png = screenshot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, _ = struct.unpack(">II", png[16:24])
    assert width == max(WIDTHS) + 20
