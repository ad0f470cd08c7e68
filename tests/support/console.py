"""A browser-shaped client for the console over ``chalice.test.Client``: it keeps the
cookies the console sets (as a browser would, by name) and fills in forms' CSRF tokens."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

FORM = {"Content-Type": "application/x-www-form-urlencoded"}
CSRF_FIELD = re.compile(r'name="csrf" value="([^"]+)"')


@dataclass
class Page:
    status: int
    headers: dict[str, Any]
    text: str

    @property
    def location(self) -> str | None:
        return self.headers.get("location") or self.headers.get("Location")

    @property
    def csrf(self) -> str:
        found = CSRF_FIELD.search(self.text)
        assert found, self.text[:500]
        return found.group(1)

    def set_cookies(self) -> list[str]:
        value = self.headers.get("set-cookie") or self.headers.get("Set-Cookie") or []
        return value if isinstance(value, list) else [value]


@dataclass
class Browser:
    client: Any
    cookies: dict[str, str] = field(default_factory=dict)
    https: bool = False

    def _headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        headers = dict(extra or {})
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if self.https:
            headers["X-Forwarded-Proto"] = "https"
        return headers

    def _keep(self, page: Page) -> Page:
        for cookie in page.set_cookies():
            name, _, rest = cookie.partition("=")
            value = rest.split(";", 1)[0]
            if "Max-Age=0" in cookie or not value:
                self.cookies.pop(name, None)
            else:
                self.cookies[name] = value
        return page

    def get(self, path: str) -> Page:
        response = self.client.http.get(path, headers=self._headers())
        return self._keep(
            Page(response.status_code, dict(response.headers), response.body.decode())
        )

    def post(self, path: str, fields: dict[str, str]) -> Page:
        response = self.client.http.post(
            path, headers=self._headers(FORM), body=urlencode(fields).encode()
        )
        return self._keep(
            Page(response.status_code, dict(response.headers), response.body.decode())
        )

    def sign_in(self, key: str) -> Page:
        form = self.get("/console")
        return self.post("/console/sign-in", {"key": key, "csrf": form.csrf})


#: Tenant text that would be live markup if a page ever rendered it as HTML.
HOSTILE = [
    "<script>alert('xss')</script>",
    '<img src=x onerror="alert(1)">',
    '<a href="javascript:alert(1)">click me</a>',
    '<svg onload="alert(1)"><script>alert(2)</script></svg>',
    '"><iframe src="javascript:alert(1)"></iframe>',
    "{{ 7*7 }} {% if true %}jinja{% endif %}",
    "مرحبا بالعالم \u202eevil.exe\u202c right-to-left",
    "emoji 🦊🔥👩‍👩‍👧 and zero\u200bwidth",
    "L" * 4000,
]
#: What must never appear in a page that shows :data:`HOSTILE` (live markup). The console's
#: own charts are inline ``<svg>`` it draws from numbers, so the SVG looked for is the corpus's.
LIVE_MARKUP = [
    "<script>alert",
    "<img src=x",
    "<svg onload",
    "<iframe",
    'href="javascript:',
    "49 jinja",
]
