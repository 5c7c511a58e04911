"""Prometheus text-format parsing, for the subset inference servers actually emit.

Two rules shape this module:

* A series that is absent is reported as absent (``None``), never as ``0.0``. A renamed
  counter that reads as a clean zero is the classic "assertion that cannot fail".
* Samples keep all their labels. Callers select by label subset; nothing is dropped at
  parse time, so a multi-engine server cannot silently collide two series into one key.

The text is parsed by the Rust reader (``inferlint._native``); this module keeps 0.3.1's types.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from . import _native

__all__ = ["Metrics", "Sample", "parse"]


@dataclass(frozen=True, slots=True)
class Sample:
    name: str
    labels: tuple[tuple[str, str], ...]
    value: float

    def label(self, key: str) -> str | None:
        for k, v in self.labels:
            if k == key:
                return v
        return None


def parse(text: str) -> Metrics:
    """Parse Prometheus text exposition. Malformed sample lines raise ``ValueError``
    naming the line (``line 3: not a Prometheus sample: ...``)."""
    return Metrics._of(_native.PromMetrics.parse(text))


class Metrics:
    """An immutable set of samples with label-subset lookup (the lookups are the Rust
    reader's; the ``Sample`` objects are made once, on first use)."""

    __slots__ = ("_native", "_samples")

    _native: _native.PromMetrics
    _samples: tuple[Sample, ...] | None

    def __init__(self, samples: Iterable[Sample]) -> None:
        self._samples = tuple(samples)
        self._native = _native.PromMetrics.from_rows(
            [(s.name, list(s.labels), s.value) for s in self._samples]
        )

    @classmethod
    def _of(cls, native: _native.PromMetrics) -> Metrics:
        m = cls.__new__(cls)
        m._native = native
        m._samples = None
        return m

    def _all(self) -> tuple[Sample, ...]:
        if self._samples is None:
            self._samples = tuple(
                Sample(name, tuple(labels), value) for name, labels, value in self._native.rows()
            )
        return self._samples

    def __reduce__(self) -> tuple[type[Metrics], tuple[tuple[Sample, ...]]]:
        # pickle and copy rebuild from the samples; the native half is not picklable.
        return (Metrics, (self._all(),))

    def __iter__(self) -> Iterator[Sample]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._native)

    def names(self) -> set[str]:
        return set(self._native.names())

    def has(self, name: str) -> bool:
        return self._native.has(name)

    def select(self, name: str, **labels: str) -> tuple[Sample, ...]:
        """Every sample of ``name`` whose labels include all of ``labels``."""
        samples = self._all()
        return tuple(samples[i] for i in self._native.select(name, labels))

    def total(self, name: str, **labels: str) -> float | None:
        """Sum over matching series, or ``None`` if no series matches.

        The sum is exact (as ``math.fsum``). Summing is right for counters and for count-like
        gauges (requests running). It is wrong for ratios such as KV-cache usage; use
        :meth:`single` for those.
        """
        return self._native.total(name, labels)

    def single(self, name: str, **labels: str) -> float | None:
        """The value of exactly one matching series. More than one raises ``LookupError``."""
        found = self.select(name, **labels)
        if len(found) != 1:
            if not found:
                return None
            sets = ", ".join(str(dict(s.labels)) for s in found)
            raise LookupError(f"{name} matches {len(found)} series ({sets}); narrow the labels")
        return found[0].value

    def info(self, name: str, **labels: str) -> Mapping[str, str] | None:
        """Labels of an ``*_info`` series, which carry the data (the value is always 1)."""
        found = self.select(name, **labels)
        if not found:
            return None
        return dict(found[0].labels)

    def with_prefix(self, prefix: str) -> tuple[Sample, ...]:
        samples = self._all()
        return tuple(samples[i] for i in self._native.with_prefix(prefix))
