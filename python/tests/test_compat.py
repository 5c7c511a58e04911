"""This package against 0.3.1 on the recorded evidence: the same calls (compat_cases.py) give
the same tripwire and status, and every evidence key 0.3.1 gave is there.

results_031.json is 0.3.1's answers, written by compat_cases.py with 0.3.1 installed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compat_cases import cases, outcome  # type: ignore[import-not-found]

REFERENCE: dict[str, Any] = json.loads(
    (Path(__file__).parent / "results_031.json").read_text(encoding="utf-8")
)

# Evidence keys 0.3.1 wrote that this project's checks name otherwise, each with its new name.
RENAMED: dict[str, str] = {}


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_same_verdict_and_evidence_keys_as_031(name: str, evidence: Path) -> None:
    got = outcome(cases()[name]())
    want = REFERENCE[name]
    pairs = list(zip(got, want, strict=True)) if isinstance(want, list) else [(got, want)]
    for g, w in pairs:
        assert (g["tripwire"], g["status"]) == (w["tripwire"], w["status"]), name
        missing = {RENAMED.get(k, k) for k in w["evidence_keys"]} - set(g["evidence_keys"])
        assert not missing, f"{name}: evidence lacks {sorted(missing)}"
