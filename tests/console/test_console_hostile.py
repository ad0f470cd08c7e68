"""Tenant data is text: a hostile corpus in names, inputs and outputs renders escaped."""

from __future__ import annotations

from typing import Any

from markupsafe import escape

from chalicelib.console.figures import as_text
from tests.support.console import HOSTILE, LIVE_MARKUP, Browser
from tests.support.runs import Plugins, make_suite


def test_hostile_names_inputs_and_outputs_render_as_escaped_text(
    api: Any, project: Any, project_key: str, plugins: Plugins
) -> None:
    suite = make_suite(api, project, [(f"echo:{text}", text) for text in HOSTILE], name=HOSTILE[0])
    run = api.post(suite.runs_path, {"wait": True}).json
    assert run["status"] == "completed", run
    browser = Browser(api.client)
    browser.sign_in(project_key)
    eval_id = suite.eval["id"]
    pages = {
        path: browser.get(path)
        for path in [
            "/console",
            f"/console/evals/{eval_id}",
            f"/console/evals/{eval_id}/runs/{run['id']}",
        ]
    }
    for path, page in pages.items():
        assert page.status == 200, path
        for markup in LIVE_MARKUP:
            assert markup not in page.text, (path, markup)
        assert str(escape(HOSTILE[0])) in page.text, path  # the eval's name
    run_page = pages[f"/console/evals/{eval_id}/runs/{run['id']}"].text
    for text in HOSTILE:
        assert str(escape(as_text(text))) in run_page, text[:40]
    for item, text in zip(suite.items, HOSTILE, strict=True):
        page = browser.get(f"/console/evals/{eval_id}/runs/{run['id']}/items/{item['id']}")
        assert page.status == 200
        for markup in LIVE_MARKUP:
            assert markup not in page.text, (text[:40], markup)
        assert f'<pre class="text">{escape(text)}</pre>' in page.text, text[:40]  # whole
