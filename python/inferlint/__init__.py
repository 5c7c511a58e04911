"""Measures what your inference server actually did, and flags what it didn't tell you.

The API of the pure-Python inferlint 0.3.1, on the Rust readers and checks of this project
(``inferlint._native``). Submodules load on first use, so ``import inferlint`` stays cheap.
"""

from typing import Any

from .result import CheckResult, Status, TripwireFailed

__all__ = ["CheckResult", "Status", "TripwireFailed", "__version__"]

__version__: str


def __getattr__(name: str) -> Any:
    # The version is the Rust library's; loading the extension only when it is asked for keeps
    # `import inferlint` to the cost of the result types.
    if name == "__version__":
        from ._native import VERSION

        return VERSION
    raise AttributeError(f"module 'inferlint' has no attribute {name!r}")
