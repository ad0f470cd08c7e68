"""The console's templates: Jinja2 with autoescape on for every template.

Tenant data (names, inputs, outputs, metadata, reasoning) only ever reaches a page as a
template variable, so it is escaped; no template marks tenant data ``|safe``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined


@lru_cache(maxsize=1)
def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("chalicelib.console", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def page(template: str, **context: Any) -> str:
    return _environment().get_template(template).render(**context)
