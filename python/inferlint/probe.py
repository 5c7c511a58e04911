"""T7: send real requests to a server before measuring it.

Some configs start, announce they are ready, and die on the first request that reaches
a code path the boot never exercised (a kernel JIT-compiled lazily, for instance). The
probe sends one request, then a concurrent burst, then checks the server is still alive.
It is a smoke test, not a benchmark; use a load generator to measure.
"""

from __future__ import annotations

from . import _native
from .result import CheckResult

__all__ = ["probe"]

PROMPT = "Write one sentence about the weather."


def probe(
    base_url: str,
    *,
    model: str | None = None,
    concurrency: int = 8,
    max_tokens: int = 16,
    timeout: float = 300.0,
) -> CheckResult:
    """T7 on a live server: one request, a concurrent burst, then ``/health``.

    The requests are the Rust library's, sent with the GIL released."""
    return _native.probe_server(base_url, model, concurrency, max_tokens, timeout)
