"""The console's HTTP answers: HTML with its security headers, redirects, static files.

Every answer carries :data:`SECURITY_HEADERS`: a Content-Security-Policy that allows only
the console's own script file (no inline script), same-origin styles, forms and fetches,
no framing, no MIME sniffing and no Referer (a console URL names tenant resources).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from chalice import Response

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    ]
)

SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}

#: The files under ``static/`` the console serves, with their media types.
STATIC_FILES = {
    "console.css": "text/css; charset=utf-8",
    "run_progress.js": "text/javascript; charset=utf-8",
}


def html(body: str, status: int = 200, cookies: list[str] | None = None) -> Response:
    headers: dict[str, str | list[str]] = {
        **SECURITY_HEADERS,
        "Content-Type": "text/html; charset=utf-8",
    }
    if cookies:
        headers["Set-Cookie"] = cookies
    return Response(body=body, status_code=status, headers=headers)


def json_answer(body: Any, status: int = 200) -> Response:
    """A console JSON answer (``progress.json``): the same security headers as a page."""
    headers: dict[str, str | list[str]] = {
        **SECURITY_HEADERS,
        "Content-Type": "application/json",
    }
    return Response(body=json.dumps(body), status_code=status, headers=headers)


def redirect(location: str, cookies: list[str] | None = None) -> Response:
    """303 See Other: after a form, the browser GETs ``location``."""
    headers: dict[str, str | list[str]] = {**SECURITY_HEADERS, "Location": location}
    if cookies:
        headers["Set-Cookie"] = cookies
    return Response(body="", status_code=303, headers=headers)


def static(name: str) -> Response | None:
    """A packaged static file; None for a name the console does not serve."""
    media_type = STATIC_FILES.get(name)
    if media_type is None:
        return None
    text = resources.files("chalicelib.console").joinpath("static", name).read_text("utf-8")
    headers: dict[str, str | list[str]] = {
        **SECURITY_HEADERS,
        "Content-Type": media_type,
        "Cache-Control": "max-age=3600",
    }
    return Response(body=text, status_code=200, headers=headers)
