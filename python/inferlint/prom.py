"""Prometheus text-format parsing, for the subset inference servers actually emit.

Two rules shape this module:

* A series that is absent is reported as absent (``None``), never as ``0.0``. A renamed
  counter that reads as a clean zero is the classic "assertion that cannot fail".
* Samples keep all their labels. Callers select by label subset; nothing is dropped at
  parse time, so a multi-engine server cannot silently collide two series into one key.

The text is parsed by the Rust reader (``inferlint._native``); this module keeps 0.3.1's types.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
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


def _samples(rows: list[tuple[str, list[tuple[str, str]], float]]) -> list[Sample]:
    return [Sample(name, tuple(labels), value) for name, labels, value in rows]


def parse(text: str) -> Metrics:
    """Parse Prometheus text exposition. Malformed sample lines raise ``ValueError``
    naming the line (``line 3: not a Prometheus sample: ...``)."""
    return Metrics(_samples(_native.parse_prom(text)))


class Metrics:
    """An immutable set of samples with label-subset lookup."""

    __slots__ = ("_by_name", "_samples")

    def __init__(self, samples: list[Sample]) -> None:
        self._samples = tuple(samples)
        by_name: dict[str, list[Sample]] = {}
        for s in self._samples:
            by_name.setdefault(s.name, []).append(s)
        self._by_name = {k: tuple(v) for k, v in by_name.items()}

    def __iter__(self) -> Iterator[Sample]:
        return iter(self._samples)

    def __len__(self) -> int:
        return len(self._samples)

    def names(self) -> set[str]:
        return set(self._by_name)

    def has(self, name: str) -> bool:
        return name in self._by_name

    def select(self, name: str, **labels: str) -> tuple[Sample, ...]:
        """Every sample of ``name`` whose labels include all of ``labels``."""
        want = labels.items()
        return tuple(
            s for s in self._by_name.get(name, ()) if all(s.label(k) == v for k, v in want)
        )

    def total(self, name: str, **labels: str) -> float | None:
        """Sum over matching series, or ``None`` if no series matches.

        Summing is right for counters and for count-like gauges (requests running).
        It is wrong for ratios such as KV-cache usage; use :meth:`single` for those.
        """
        found = self.select(name, **labels)
        if not found:
            return None
        return math.fsum(s.value for s in found)

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
        return tuple(s for s in self._samples if s.name.startswith(prefix))
