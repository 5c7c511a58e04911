"""The one result type every check returns.

``CheckResult`` is the Rust library's check result (``inferlint._native``): its status, ``ok``,
``raise_for_status`` and the message of :class:`TripwireFailed` are the library's. This module
names the statuses as 0.3.1 did: ``Status`` is a ``str`` enum whose values are the library's
JSON keys, and ``LABELS`` the library's terminal labels.
"""

from __future__ import annotations

from enum import Enum

from . import _native
from ._native import CheckResult

__all__ = ["LABELS", "CheckResult", "Status", "TripwireFailed"]


class Status(str, Enum):
    # The members are the library's statuses (``_native.status_table()``, held to this class by
    # python/tests/test_result.py); the report's order, failures first, is the library's too.
    PASS = "pass"
    WARN = "warn"
    # The tripwire caught its problem. For T7 and T12 that means the server failed;
    # for every other tripwire it means a number from the run is not what it seems.
    FAIL = "fail"
    # The instrument could not decide: a series was missing, a line did not parse.
    # Never folded into PASS. A check that cannot see is not a check that passed.
    UNKNOWN = "unknown"
    # The tripwire is about a behaviour this engine does not have (T14, vLLM's reserved
    # null block, on SGLang and TensorRT-LLM). Neither a pass nor a failure.
    NOT_APPLICABLE = "not_applicable"


# How each status is printed (the library's Status::label). The JSON keeps Status.value ("fail").
LABELS: dict[Status, str] = {Status(key): label for key, label in _native.status_table()}


class TripwireFailed(AssertionError):
    """A result that was raised: ``[T1] TRIPWIRE-FAILED: 22 preemptions during the run``."""

    def __init__(self, result: CheckResult) -> None:
        super().__init__(result._failure_text())
        self.result = result
