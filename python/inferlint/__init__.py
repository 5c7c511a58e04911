"""Measures what your inference server actually did, and flags what it didn't tell you.

The API of the pure-Python inferlint 0.3.1, on the Rust readers and checks of this project
(``inferlint._native``). Everything loads on first use, so ``import inferlint`` costs next to
nothing: ``inferlint.CheckResult`` loads the result types, ``from inferlint import checks`` the
checks.
"""

from __future__ import annotations

# Not `from typing import TYPE_CHECKING`: importing typing costs more than the rest of this file.
# Type checkers read a name TYPE_CHECKING as true wherever it comes from.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .result import CheckResult, Status, TripwireFailed

__all__ = ["CheckResult", "Status", "TripwireFailed", "__version__"]

__version__: str


def __getattr__(name: str) -> Any:
    if name in ("CheckResult", "Status", "TripwireFailed"):
        from . import result

        return getattr(result, name)
    if name == "__version__":
        from ._native import VERSION

        return VERSION
    raise AttributeError(f"module 'inferlint' has no attribute {name!r}")
