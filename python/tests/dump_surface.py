"""Writes the public surface of an installed inferlint (names and signatures) as JSON.

Run with the 0.3.1 reference installed to regenerate surface_031.json:
    python python/tests/dump_surface.py > python/tests/surface_031.json
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
import json
import sys
from typing import Any

MODULES = (
    "result", "checks", "telemetry", "bootlog", "series", "benchresult", "prom", "engines",
    "catalog", "blocks", "failures", "probe", "teardown", "gpu", "report", "cli",
)


def _params(obj: Any) -> list[dict[str, Any]] | None:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    out: list[dict[str, Any]] = []
    for p in sig.parameters.values():
        d: dict[str, Any] = {"name": p.name, "kind": p.kind.name}
        if p.default is not inspect.Parameter.empty:
            d["default"] = repr(p.default) if _plain(p.default) else "<object>"
        out.append(d)
    return out


def _plain(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float, str, tuple))


def describe(obj: Any) -> dict[str, Any]:
    if inspect.isclass(obj):
        d: dict[str, Any] = {"kind": "class"}
        if issubclass(obj, enum.Enum):
            d["kind"] = "enum"
            d["members"] = {m.name: m.value for m in obj}  # type: ignore[var-annotated]
            return d
        if issubclass(obj, BaseException):
            d["kind"] = "exception"
            d["bases"] = [b.__name__ for b in obj.__mro__[1:] if b is not object]
        if dataclasses.is_dataclass(obj):
            d["kind"] = "dataclass"
            d["fields"] = [f.name for f in dataclasses.fields(obj) if not f.name.startswith("_")]
            d["frozen"] = obj.__dataclass_params__.frozen  # type: ignore[attr-defined]
        d["init"] = _params(obj)
        d["methods"] = sorted(
            n for n, _ in inspect.getmembers(obj)
            if not n.startswith("_") and n not in d.get("fields", [])
        )
        return d
    if callable(obj):
        return {"kind": "function", "params": _params(obj)}
    return {"kind": "value", "type": type(obj).__name__}


def main() -> None:
    surface: dict[str, dict[str, Any]] = {}
    for name in MODULES:
        mod = importlib.import_module(f"inferlint.{name}")
        names = getattr(mod, "__all__", None)
        if names is None:
            names = [n for n, v in vars(mod).items() if not n.startswith("_")
                     and getattr(v, "__module__", mod.__name__) == mod.__name__
                     and (inspect.isclass(v) or inspect.isfunction(v))]
        surface[name] = {n: describe(getattr(mod, n)) for n in sorted(names)}
    json.dump(surface, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
