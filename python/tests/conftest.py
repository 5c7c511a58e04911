"""The recorded evidence, found as the Rust tests find it: INFERLINT_EVIDENCE, else the
repository's tests/fixtures. Absent, the evidence tests skip, except under CI=true or
INFERLINT_REQUIRE_EVIDENCE=1, where that is a failure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _required() -> bool:
    return os.environ.get("CI") in ("true", "1") or os.environ.get(
        "INFERLINT_REQUIRE_EVIDENCE"
    ) in ("1", "true", "yes")


def evidence_root() -> Path:
    env = os.environ.get("INFERLINT_EVIDENCE")
    return Path(env) if env else REPO / "tests" / "fixtures"


@pytest.fixture(scope="session")
def evidence() -> Path:
    root = evidence_root()
    if root.is_dir():
        return root
    if _required():
        pytest.fail(
            f"the recorded evidence is missing at {root} (set INFERLINT_EVIDENCE); under "
            "CI=true or INFERLINT_REQUIRE_EVIDENCE=1 a skipped evidence test is a failure"
        )
    pytest.skip(f"no recorded evidence at {root}")
