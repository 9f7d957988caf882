"""The SDK against a live registry and gateway on loopback (the `stack` fixture of
conftest.py): a valid signature, a tampered answer, a stale one, one from the future,
another group's key, an
opening, and a revocation, each decided by the SDK's own checks, not the gateway's word."""

from __future__ import annotations

import base64
import copy
import time
from typing import TYPE_CHECKING, Any, Dict

import pytest

import dgsp_verifier as dv
from dgsp_verifier.client import GatewayError, fetch_answer

if TYPE_CHECKING:
    from conftest import Stack

HOUR_MS = 3_600_000
# The checks made only with a witness policy in the trust root (this stack has none).
WITNESS_CHECKS = ("witnessed_checkpoint", "witness_quorum")


@pytest.fixture(scope="module")
def root(stack: Stack) -> dv.TrustRoot:
    return dv.TrustRoot.from_key_file(stack.group_key)


def test_trust_root_from_the_served_key(stack: Stack, root: dv.TrustRoot) -> None:
    assert root.params == "sha2-128f"
    assert dv.TrustRoot.pinned(stack.group_key, root.fingerprint) == root
    with pytest.raises(dv.TrustRootError):
        dv.TrustRoot.pinned(stack.group_key, dv.TrustRoot.from_key_file(stack.other_group_key).fingerprint)


def test_signature_alone(stack: Stack, root: dv.TrustRoot) -> None:
    a = root.verify_signature(stack.message, stack.signatures["alice"])
    b = root.verify_signature(stack.message, base64.b64decode(stack.signatures["bob"]))
    assert a.params == "sha2-128f" and len(a.zeta) == 32 and a.zeta != b.zeta
    with pytest.raises(dv.InvalidSignature):
        root.verify_signature(stack.message + b"!", stack.signatures["alice"])


def test_valid(stack: Stack, root: dv.TrustRoot) -> None:
    report = dv.verify_with_gateway(root, stack.gateway_url, stack.message, stack.signatures["alice"], max_age_s=60)
    assert report.valid, report.first_failure
    assert report.gateway_status == "ok" and report.gateway_valid
    assert [c.check for c in report.checks] == [n for n in dv.CHECK_NAMES[:-1] if n not in WITNESS_CHECKS]
    assert not report.witnesses_checked
    assert all(c.passed and c.detail for c in report.checks)


def answer_and_snapshot(stack: Stack, who: str = "alice") -> "tuple[Dict[str, Any], Dict[str, Any]]":
    answer, snapshot = fetch_answer(stack.gateway_url, stack.message, stack.signatures[who])
    assert snapshot is not None, answer
    return answer, snapshot


def test_stale(stack: Stack, root: dv.TrustRoot) -> None:
    answer, snapshot = answer_and_snapshot(stack)
    sig = stack.signatures["alice"]
    fresh = root.check_answer(stack.message, sig, answer, snapshot, max_age_s=60)
    assert fresh.valid, fresh.first_failure
    # The caller's clock an hour on: the checkpoint is an hour old.
    later = int(time.time() * 1000) + HOUR_MS
    stale = root.check_answer(stack.message, sig, answer, snapshot, max_age_s=60, now_unix_ms=later)
    assert not stale.valid and stale.failed_checks == ("checkpoint_age",)
    assert stale.first_failure is not None and stale.first_failure.check == "checkpoint_age"


def test_checkpoint_from_the_future(stack: Stack, root: dv.TrustRoot) -> None:
    answer, snapshot = answer_and_snapshot(stack)
    sig = stack.signatures["alice"]
    # The caller's clock ten minutes behind the registry's: the live note is signed ten
    # minutes in its future. Its age is 0, so only the future check can refuse it.
    behind = int(time.time() * 1000) - 600_000
    report = root.check_answer(stack.message, sig, answer, snapshot, max_age_s=60, now_unix_ms=behind)
    assert not report.valid and report.failed_checks == ("future_checkpoint",)
    assert report.first_failure is not None and "ahead of this clock" in report.first_failure.detail
    # A caller who tolerates that much skew accepts it; the default tolerance is 5 s.
    lax = root.check_answer(
        stack.message, sig, answer, snapshot, max_age_s=60, now_unix_ms=behind, clock_tolerance_ms=900_000
    )
    assert lax.valid, lax.first_failure
    assert dv.DEFAULT_CLOCK_TOLERANCE_MS == 5000


def test_tampered_answer(stack: Stack, root: dv.TrustRoot) -> None:
    answer, snapshot = answer_and_snapshot(stack)
    proof = bytearray(base64.b64decode(answer["revocation"]["proof"]["encoded"]))
    proof[-1] ^= 0x01  # a byte of the last hash of the proof
    tampered = copy.deepcopy(answer)
    tampered["revocation"]["proof"]["encoded"] = base64.b64encode(bytes(proof)).decode()
    report = root.check_answer(stack.message, stack.signatures["alice"], tampered, snapshot, max_age_s=60)
    assert not report.valid and report.failed_checks == ("revocation_proof",)
    # Without the snapshot, nothing can be proven.
    report = root.check_answer(stack.message, stack.signatures["alice"], answer, None, max_age_s=60)
    assert not report.valid and "snapshot_signature" in report.failed_checks


def test_wrong_group(stack: Stack) -> None:
    other = dv.TrustRoot.from_key_file(stack.other_group_key)
    report = dv.verify_with_gateway(other, stack.gateway_url, stack.message, stack.signatures["alice"], max_age_s=60)
    assert not report.valid
    assert report.gateway_valid  # the gateway's word, for its own group
    assert {"signature", "checkpoint_signature"} <= set(report.failed_checks)
    with pytest.raises(dv.InvalidSignature):
        other.verify_signature(stack.message, stack.signatures["alice"])


def test_opening(stack: Stack, root: dv.TrustRoot) -> None:
    o = stack.open("alice")
    j = root.judge(stack.message, stack.signatures["alice"], int(o["id"]), str(o["pi"]))  # type: ignore[call-overload]
    assert j.correct and j.signature_valid and j.opening_matches and j.detail is None
    j = root.judge(stack.message, stack.signatures["bob"], int(o["id"]), str(o["pi"]))  # type: ignore[call-overload]
    assert not j.correct and j.signature_valid and not j.opening_matches and j.detail


def test_gateway_errors(stack: Stack, root: dv.TrustRoot) -> None:
    with pytest.raises(GatewayError) as e:
        dv.verify_with_gateway(root, stack.gateway_url, b"m", b"\xd6 not a signature", max_age_s=60)
    assert e.value.status == 422 and isinstance(e.value, dv.DgspError)
    with pytest.raises(GatewayError) as e:
        dv.verify_with_gateway(root, "http://127.0.0.1:9", b"m", stack.signatures["alice"], max_age_s=60, timeout=2)
    assert e.value.status is None


def test_revoked(stack: Stack, root: dv.TrustRoot) -> None:
    """Last: revokes bob, then waits for the gateway to follow."""
    before = dv.verify_with_gateway(root, stack.gateway_url, stack.message, stack.signatures["bob"], max_age_s=60)
    assert before.valid, before.first_failure
    n_before = root.verify_checkpoint(
        fetch_answer(stack.gateway_url, stack.message, stack.signatures["bob"])[0]["freshness"]["checkpoint"]["note"]
    ).snapshot_number
    assert n_before is not None
    stack.manager("operator", "revoke", "--username", "bob", "--yes")
    deadline = time.monotonic() + 60
    while True:
        report = dv.verify_with_gateway(root, stack.gateway_url, stack.message, stack.signatures["bob"], max_age_s=60)
        if report.gateway_status == "revoked" or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert report.gateway_status == "revoked", report
    assert not report.valid and not report.gateway_valid
    assert report.failed_checks == ("gateway_status", "revocation_proof")
    proof = next(c for c in report.checks if c.check == "revocation_proof")
    assert "revoked" in proof.detail
    # alice is still valid, against the new snapshot; an old snapshot number is refused as
    # a minimum the new one passes.
    answer, snapshot = answer_and_snapshot(stack, "alice")
    n = root.verify_snapshot(snapshot).number
    assert n > n_before
    ok = root.check_answer(stack.message, stack.signatures["alice"], answer, snapshot, max_age_s=60, min_snapshot=n)
    assert ok.valid and [c.check for c in ok.checks] == [n for n in dv.CHECK_NAMES if n not in WITNESS_CHECKS]
    low = root.check_answer(stack.message, stack.signatures["alice"], answer, snapshot, max_age_s=60, min_snapshot=n + 1)
    assert not low.valid and low.failed_checks == ("min_snapshot",)
