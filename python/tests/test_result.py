"""Check results are the library's typed objects: ``CheckResult`` is the extension's class, and
the statuses, labels, ``ok``, ``raise_for_status`` and ``TripwireFailed``'s message are the
library's, under 0.3.1's names and behaviour."""

from __future__ import annotations

import copy
import pickle
from pathlib import Path

import pytest

from inferlint import _native, bootlog, checks, telemetry
from inferlint.result import LABELS, CheckResult, Status, TripwireFailed


def test_the_result_class_is_the_librarys() -> None:
    assert CheckResult is _native.CheckResult
    assert CheckResult.__module__ == "inferlint.result"


def test_status_and_labels_are_the_librarys_table() -> None:
    table = _native.status_table()
    assert {s.value for s in Status} == {key for key, _ in table}
    assert LABELS == {Status(key): label for key, label in table}
    assert LABELS[Status.FAIL] == "TRIPWIRE-FAILED" and Status.FAIL == "fail"


def test_a_check_returns_the_typed_result(evidence: Path) -> None:
    live = evidence / "vllm-0.28/live"
    r = checks.precise_rate(
        telemetry.load(live / "before.snapshot.json"), telemetry.load(live / "after.snapshot.json")
    )
    assert type(r) is CheckResult and r.status is Status.PASS and r.ok
    assert isinstance(r.evidence, dict) and r.to_json()["evidence"] is r.evidence
    assert checks.with_timer_comparison(r).tripwire == "T10"


@pytest.mark.parametrize(
    ("status", "allow_warn", "allow_unknown", "raises"),
    [
        (Status.FAIL, True, True, True),
        (Status.UNKNOWN, True, False, True),
        (Status.UNKNOWN, True, True, False),
        (Status.WARN, True, False, False),
        (Status.WARN, False, True, True),
        (Status.PASS, False, False, False),
        (Status.NOT_APPLICABLE, False, False, False),
    ],
)
def test_raise_for_status_is_the_librarys_rule(
    status: Status, allow_warn: bool, allow_unknown: bool, raises: bool
) -> None:
    r = CheckResult("T8", status, "requested 32, ran 10")
    if raises:
        with pytest.raises(TripwireFailed) as caught:
            r.raise_for_status(allow_warn=allow_warn, allow_unknown=allow_unknown)
        assert caught.value.result is r
        assert str(caught.value) == f"[T8] {LABELS[status]}: requested 32, ran 10"
        assert isinstance(caught.value, AssertionError)
    else:
        r.raise_for_status(allow_warn=allow_warn, allow_unknown=allow_unknown)
    assert r.ok == (status in (Status.PASS, Status.WARN, Status.NOT_APPLICABLE))


def test_frozen_equal_and_copied_as_031s_dataclass() -> None:
    r = CheckResult("T1", Status.FAIL, "22 preemptions", {"preemptions": 22})
    assert r == CheckResult(tripwire="T1", status="fail", message="22 preemptions", evidence={"preemptions": 22})
    assert r != CheckResult("T1", Status.FAIL, "22 preemptions")
    assert CheckResult("T2", Status.PASS, "clear").evidence == {}
    with pytest.raises(AttributeError):
        r.message = "none"  # type: ignore[misc]
    with pytest.raises(TypeError):
        hash(r)
    assert pickle.loads(pickle.dumps(r)) == r and copy.deepcopy(r) == r
    assert repr(r).startswith("CheckResult(tripwire='T1', status=<Status.FAIL: 'fail'>")
    with pytest.raises(ValueError):
        CheckResult("T1", "failed", "not a status")


def test_boot_facts_conflicts_and_untested_note_as_031(evidence: Path) -> None:
    lo = (evidence / "vllm-0.28/boot_pool_level_lo.log").read_text(encoding="utf-8")
    hi = (evidence / "vllm-0.28/boot_pool_level_hi.log").read_text(encoding="utf-8")
    f = bootlog.parse(hi + lo)
    assert [v[0] for v in f.conflicts["kv_pool"]] == f.conflicts["kv_pool_tokens"]
    assert f.kv_pool_tokens == f.conflicts["kv_pool_tokens"][-1]
    f.engine, f.vllm_version = "vllm", "0.99.1"
    note = bootlog.untested_version(f)
    assert note is not None and note.startswith("vLLM 0.99.1 is not a tested version")
