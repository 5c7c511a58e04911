"""Every tripwire: what goes wrong, why it changes results, and how to check for it.

Used by ``inferlint explain`` and by the HTML report, so the explanation a reader sees is the
same everywhere. The wording is technical: the precise term first, then a short gloss. The
tutorial on the documentation site explains the same ideas in plainer words.

Each tripwire has a stable code (T1-T27, in the order they were found) and a name for
people (``silent-preemption``); ``inferlint explain`` accepts either. The text is the Rust
library's catalogue, the one ``inferlint explain`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import _native

__all__ = ["ENGINE_NOTES", "TRIPWIRES", "Tripwire", "lookup"]


@dataclass(frozen=True)
class Tripwire:
    id: str
    slug: str
    name: str
    what: str
    why: str
    command: str


_ENTRIES = _native.catalogue_entries()

TRIPWIRES: dict[str, Tripwire] = {
    e[0]: Tripwire(e[0], e[1], e[2], e[3], e[4], e[5]) for e in _ENTRIES
}

# Where another engine differs: tripwire -> engine key -> note.
ENGINE_NOTES: dict[str, dict[str, str]] = {e[0]: dict(e[6]) for e in _ENTRIES if e[6]}


def lookup(key: str) -> Tripwire | None:
    """A tripwire by code (``T1``, ``t1``) or name (``silent-preemption``)."""
    code = _native.catalogue_lookup(key)
    return None if code is None else TRIPWIRES[code]
