"""Every public name of 0.3.1 is here, with its parameters, defaults, fields and members.

surface_031.json is 0.3.1's surface, written by dump_surface.py with 0.3.1 installed; the
same dump of this package must contain all of it. A name, a keyword, a default or a field
that went missing fails here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import inferlint
from dump_surface import MODULES, describe  # type: ignore[import-not-found]

REFERENCE: dict[str, dict[str, Any]] = json.loads(
    (Path(__file__).parent / "surface_031.json").read_text(encoding="utf-8")
)


# 0.3.1's dataclasses that are the library's typed classes here: the same fields (read-only
# attributes), constructor and methods, without dataclasses' module functions (asdict, replace).
TYPED = {("result", "CheckResult")}


def _params(d: dict[str, Any]) -> list[dict[str, Any]]:
    return list(d.get("params") or d.get("init") or [])


@pytest.mark.parametrize("module", MODULES)
def test_module_has_every_031_name(module: str) -> None:
    import importlib

    mod = importlib.import_module(f"inferlint.{module}")
    want = REFERENCE[module]
    missing = [n for n in want if not hasattr(mod, n)]
    assert not missing, f"inferlint.{module} lacks {missing}"
    for name, ref in want.items():
        got = describe(getattr(mod, name))
        where = f"inferlint.{module}.{name}"
        if module == "cli" and name == "build_parser":
            continue
        obj = getattr(mod, name)
        if (module, name) in TYPED:
            assert (ref["kind"], got["kind"]) == ("dataclass", "class"), where
            for f in ref["fields"]:
                assert isinstance(getattr(obj, f, None), property) or hasattr(obj, f), (
                    f"{where}: no field {f}"
                )
            got = {**got, "kind": "dataclass", "fields": ref["fields"], "frozen": True}
            got["methods"] = [m for m in got["methods"] if m not in ref["fields"]]
        assert got["kind"] == ref["kind"], f"{where}: {got['kind']} is not {ref['kind']}"
        if ref["kind"] in ("function", "dataclass", "class", "exception"):
            have = {p["name"]: p for p in _params(got)}
            for p in _params(ref):
                assert p["name"] in have, f"{where}: no parameter {p['name']}"
                assert have[p["name"]]["kind"] == p["kind"], f"{where}({p['name']}): kind"
                if "default" in p and p["default"] != "<object>":
                    assert have[p["name"]].get("default") == p["default"], (
                        f"{where}({p['name']}): default {have[p['name']].get('default')} "
                        f"is not {p['default']}"
                    )
        if ref["kind"] == "dataclass":
            assert got["fields"][: len(ref["fields"])] == ref["fields"], f"{where}: fields"
            assert got["frozen"] == ref["frozen"], f"{where}: frozen"
        if ref["kind"] in ("dataclass", "class", "exception"):
            lost = set(ref["methods"]) - set(got["methods"])
            assert not lost, f"{where} lacks {sorted(lost)}"
        if ref["kind"] == "enum":
            assert got["members"] == ref["members"], f"{where}: members"
        if ref["kind"] == "exception":
            assert got["bases"][:1] == ref["bases"][:1], f"{where}: bases"


def test_the_package_root() -> None:
    assert {"CheckResult", "Status", "TripwireFailed", "__version__"} <= set(inferlint.__all__)
    assert isinstance(inferlint.__version__, str) and inferlint.__version__[0].isdigit()
    assert inferlint.Status.FAIL == "fail"
    assert issubclass(inferlint.TripwireFailed, AssertionError)


def test_the_reference_is_the_whole_031_surface() -> None:
    # A dump that lost a module, or most of one, would make the test above pass vacuously.
    assert set(REFERENCE) == set(MODULES)
    assert sum(len(v) for v in REFERENCE.values()) >= 90
