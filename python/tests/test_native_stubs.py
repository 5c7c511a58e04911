"""The extension module's stubs (``_native.pyi``) against the module itself: every name the
module exports is typed in the stubs, every stubbed name exists, and each stubbed function's
keyword-only and positional parameter names are the module's own (pyo3 writes them into the
text signature), so the types users and pyright see are the Rust side's."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from inferlint import _native

STUBS = Path(__file__).resolve().parent.parent / "inferlint" / "_native.pyi"


def _stubbed() -> dict[str, ast.stmt]:
    tree = ast.parse(STUBS.read_text(encoding="utf-8"))
    out: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
    return out


def _exported() -> set[str]:
    return {n for n in dir(_native) if not n.startswith("_")}


def test_every_export_is_stubbed_and_every_stub_exists() -> None:
    # Type aliases of the stubs (``Row = tuple[...]``) are plain assignments, not collected.
    stubbed = _stubbed()
    missing = sorted(_exported() - set(stubbed))
    assert missing == [], f"exported by _native but not in _native.pyi: {missing}"
    absent = sorted(set(stubbed) - _exported())
    assert absent == [], f"in _native.pyi but not exported by _native: {absent}"


def test_stubbed_functions_take_the_modules_parameters() -> None:
    checked = 0
    for name, node in _stubbed().items():
        if not isinstance(node, ast.FunctionDef):
            continue
        try:
            sig = inspect.signature(getattr(_native, name))
        except (TypeError, ValueError):
            continue  # no text signature to compare
        stub = [a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)]
        real = [p for p in sig.parameters if p not in ("py",)]
        assert stub == real, f"{name}: stub {stub} != module {real}"
        checked += 1
    assert checked >= 20, f"only {checked} functions had signatures to compare"
