"""Block-level reading of the KV cache from the usage gauge alone.

vLLM reports its pool in tokens, allocates it in blocks, and exposes usage as a
fraction: ``kv_cache_usage_perc = used_blocks / usable_blocks``. Every reading is
therefore an exact multiple of ``1/usable_blocks``, and the least common denominator of
the readings recovers the block count without any access to the server.

Checked against ground truth, this exposes something the docs do not say: the
denominator is ``num_gpu_blocks - 1``, not ``num_gpu_blocks``: one block is reserved
as a null block. The arithmetic is the Rust library's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from . import _native

__all__ = ["BlockInference", "infer_blocks", "predict_concurrency"]


@dataclass(frozen=True)
class BlockInference:
    blocks: int | None  # usable blocks (the gauge's denominator), None if indeterminate
    distinct: int
    max_residual: float  # worst |usage * blocks - round(usage * blocks)|, in blocks
    trusted: bool

    @property
    def reason(self) -> str:
        if self.blocks is None:
            return "readings are not multiples of any 1/N with N within range"
        if not self.trusted:
            return f"only {self.distinct} distinct readings; a divisor of N could fit by luck"
        return "ok"


def infer_blocks(
    usages: Iterable[float], *, max_blocks: int = 1 << 16, tol: float = 1e-6
) -> BlockInference:
    """Least N such that every usage reading is k/N for integer k.

    Each reading is reduced to its best rational approximation with denominator at
    most ``max_blocks``; N is the least common multiple of those denominators. A reading
    that is not a clean fraction produces a residual larger than ``tol`` and the result
    is reported as indeterminate, not rounded.
    """
    return BlockInference(*_native.infer_blocks([float(u) for u in usages], max_blocks, tol))


def predict_concurrency(usage: float, running: float, *, usable_blocks: int | None = None) -> int:
    """How many requests like the running ones fit: ``floor(1 / share)``.

    ``share`` is the fraction of the cache one request holds, read from a single
    sample as ``usage / running``. With the block count known, the arithmetic is done
    in whole blocks. A sample with nothing running or no usage raises ``ValueError``.
    """
    return _native.predict_concurrency(usage, running, usable_blocks)
