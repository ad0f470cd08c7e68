"""The reference material is found beside the repository, never at one machine's path."""

from __future__ import annotations

import os
import re
from pathlib import Path

from tests.support import soat_spec

ROOT = Path(__file__).resolve().parents[2]
#: An absolute path into one machine's layout (where the coordinator happens to keep things).
MACHINE_PATH = re.compile(r"""["']/work/""")
SEARCHED = ("tests", "bench", "chalicelib", "plugins", "pawl", "app.py", "Makefile")


def test_the_spec_is_looked_up_beside_the_repository() -> None:
    if os.environ.get("PAWL_SPEC_DIR"):
        assert Path(os.environ["PAWL_SPEC_DIR"]) == soat_spec.SPEC_DIR
    else:
        assert ROOT.parent / "shared" / "spec" == soat_spec.SPEC_DIR
    assert soat_spec.spec_path("soat/evaluations.json").parent == soat_spec.SPEC_DIR / "soat"


def test_no_source_names_a_machine_path() -> None:
    offenders = []
    for name in SEARCHED:
        base = ROOT / name
        files = [base] if base.is_file() else sorted(base.rglob("*.py")) if base.exists() else []
        for path in files:
            text = path.read_text(encoding="utf-8", errors="replace")
            offenders += [
                f"{path.relative_to(ROOT)}:{n}"
                for n, line in enumerate(text.splitlines(), 1)
                if MACHINE_PATH.search(line)
            ]
    assert offenders == []
