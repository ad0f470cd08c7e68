"""What the console's browser tests share: Debian's Chromium under Playwright, the widths
they look at, and where screenshots go."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
WIDTHS = (1280, 420)


@pytest.fixture
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def screenshots_dir(tmp_path: Path) -> Path:
    """``PAWL_CONSOLE_SCREENSHOTS`` when set (how ``docs/console/`` is made), else ``tmp_path``."""
    target = Path(os.environ.get("PAWL_CONSOLE_SCREENSHOTS") or tmp_path)
    target.mkdir(parents=True, exist_ok=True)
    return target


def watch(page: Any, dialogs: list[str], script_errors: list[str]) -> None:
    """Record the page's dialogs (dismissed) and its script errors, console errors included."""
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.on("pageerror", lambda error: script_errors.append(str(error)))
    page.on(
        "console",
        lambda message: script_errors.append(message.text) if message.type == "error" else None,
    )


def sign_in(page: Any, base: str, key: str) -> None:
    """Sign in through the console's form, as a user types the key."""
    page.goto(f"{base}/console/")
    page.fill("#key", key)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/console")


def signed_in_page(
    chromium: Any, base: str, key: str, width: int = WIDTHS[0]
) -> tuple[Any, Any, list[str], list[str]]:
    """A new context's page at ``width``, watched and signed in with ``key``:
    ``(context, page, dialogs, script_errors)``."""
    context = chromium.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    dialogs: list[str] = []
    script_errors: list[str] = []
    watch(page, dialogs, script_errors)
    sign_in(page, base, key)
    return context, page, dialogs, script_errors
