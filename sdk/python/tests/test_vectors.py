"""The shared conformance vectors (sdk/vectors/conformance.json): every case must give its
`expect` exactly, normalised as the Rust runner does (sdk/rust/tests/conformance.rs `run`)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any, Dict

import pytest

import dgsp_verifier as dv

VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "conformance.json"
DATA = json.loads(VECTORS.read_text())
CASES = DATA["cases"]


def d(v: str) -> bytes:
    return base64.b64decode(v)


def run(case: Dict[str, Any]) -> Dict[str, Any]:
    """One case, as sdk/rust/tests/conformance.rs `run` decides it."""
    try:
        root = dv.TrustRoot.from_key_bytes(
            d(DATA["groups"][case["group"]]),
            witness_policy=case.get("witness_policy"),
            log_key_statement=case.get("log_key_statement"),
        )
        msg = d(case["message"])
        kind = case["kind"]
        if kind == "signature":
            info = root.verify_signature(msg, d(case["signature"]))
            return {"valid": True, "zeta": info.zeta}
        if kind == "answer":
            p = case["policy"]
            r = root.check_answer(
                msg,
                d(case["signature"]),
                case["answer"],
                case["snapshot"],
                max_age_ms=p["max_age_ms"],
                now_unix_ms=p["now_unix_ms"],
                min_snapshot=p["min_snapshot"],
                clock_tolerance_ms=p.get("clock_tolerance_ms", dv.DEFAULT_CLOCK_TOLERANCE_MS),
            )
            return {"valid": r.valid, "failed_checks": [c.check for c in r.checks if not c.passed]}
        if kind == "judge":
            j = root.judge(msg, d(case["signature"]), case["id"], d(case["pi"]))
            return {
                "correct": j.correct,
                "signature_valid": j.signature_valid,
                "opening_matches": j.opening_matches,
            }
        raise AssertionError(f"unknown case kind {kind}")
    except dv.DgspError as e:
        return {"error": e.kind}


def test_format() -> None:
    assert DATA["format"] == "dgsp-conformance-v1"
    assert len(CASES) >= 30


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case: Dict[str, Any]) -> None:
    assert run(case) == case["expect"], case["name"]


def test_answer_inputs_as_bytes_text_and_dict_agree() -> None:
    case = next(c for c in CASES if c["kind"] == "answer" and c["expect"]["valid"])
    root = dv.TrustRoot.from_key_bytes(d(DATA["groups"][case["group"]]))
    p = case["policy"]
    text = json.dumps(case["answer"])
    snap = json.dumps(case["snapshot"])
    reports = [
        root.check_answer(
            d(case["message"]), d(case["signature"]), a, s,
            max_age_ms=p["max_age_ms"], now_unix_ms=p["now_unix_ms"],
        )
        for a, s in [(case["answer"], case["snapshot"]), (text, snap), (text.encode(), snap.encode())]
    ]
    assert all(r == reports[0] for r in reports)
    r = reports[0]
    assert r.valid and bool(r) and r.first_failure is None and r.failed_checks == ()
    witness = ("witnessed_checkpoint", "witness_quorum")
    assert [c.check for c in r.checks] == [n for n in dv.CHECK_NAMES[:-1] if n not in witness]
    assert not r.witnesses_checked
    assert r.gateway_status == "ok" and r.gateway_valid
    # The same answer with a base64 signature (as signature files hold it).
    b64 = case["signature"].encode()
    assert root.check_answer(
        d(case["message"]), b64, text, snap, max_age_ms=p["max_age_ms"], now_unix_ms=p["now_unix_ms"]
    ) == r
    # The snapshot and the note on their own.
    info = root.verify_snapshot(case["snapshot"])
    cp = root.verify_checkpoint(case["answer"]["freshness"]["checkpoint"]["note"])
    assert cp.snapshot_number == info.number and info.group == root.fingerprint
    assert cp.origin.startswith("dgsp/") and cp.time_unix_ms is not None


def test_checkpoint_from_the_future() -> None:
    """A note signed ten minutes after the caller's now: refused by name at the default
    tolerance, whatever its age says; accepted by a caller who tolerates the skew."""
    case = next(c for c in CASES if c["name"] == "a: checkpoint from the future")
    root = dv.TrustRoot.from_key_bytes(d(DATA["groups"][case["group"]]))
    p = case["policy"]
    args = (d(case["message"]), d(case["signature"]), case["answer"], case["snapshot"])
    r = root.check_answer(*args, max_age_ms=p["max_age_ms"], now_unix_ms=p["now_unix_ms"])
    assert not r.valid and r.failed_checks == ("future_checkpoint",)
    assert r.first_failure is not None and "ahead of this clock" in r.first_failure.detail
    ahead = r.checks[[c.check for c in r.checks].index("checkpoint_age")]
    assert ahead.passed, "the age alone would let it through"
    lax = root.check_answer(
        *args, max_age_ms=p["max_age_ms"], now_unix_ms=p["now_unix_ms"], clock_tolerance_ms=900_000
    )
    assert lax.valid, lax.first_failure
    with pytest.raises(ValueError):
        root.check_answer(*args, max_age_ms=1, now_unix_ms=0, clock_tolerance_ms=-1)


def test_errors_are_typed() -> None:
    a = DATA["groups"]["a"]
    root = dv.TrustRoot.from_key_bytes(d(a))
    assert root.params and len(root.fingerprint) == 64
    assert dv.TrustRoot.from_key_file(a + "\n") == root
    assert dv.TrustRoot.pinned(a.encode(), root.fingerprint.upper()) == root
    with pytest.raises(dv.TrustRootError):
        dv.TrustRoot.pinned(a, "00" * 32)
    with pytest.raises(dv.TrustRootError):
        dv.TrustRoot.from_key_bytes(b"not a key")
    with pytest.raises(dv.MalformedInput) as e:
        root.verify_signature(b"m", b"garbage")
    assert e.value.what == "signature" and e.value.kind == "malformed"
    case = next(c for c in CASES if c["kind"] == "answer")
    with pytest.raises(dv.MalformedInput) as e:
        root.check_answer(b"m", d(case["signature"]), "{}", None, max_age_s=60)
    assert e.value.what == "answer"
    with pytest.raises(dv.MalformedInput) as e:
        root.verify_snapshot({"nope": 1})
    assert e.value.what == "snapshot"
    with pytest.raises(dv.BadSignedObject) as bad:
        root.verify_checkpoint("not a note")
    assert bad.value.what == "checkpoint"
    with pytest.raises(dv.InvalidSignature):
        root.verify_signature(b"another message", d(case["signature"]))
    with pytest.raises(ValueError):
        root.check_answer(b"m", b"s", "{}", None)  # no maximum age
    assert issubclass(dv.InvalidSignature, dv.DgspError) and issubclass(dv.DgspError, Exception)


def test_witness_policy() -> None:
    """The witness cases (issue 28): the quorum's words name stale witnesses, the report
    says whether witnesses were checked, and the trust root's errors are typed."""
    met = next(c for c in CASES if c["name"] == "fips205: witnessed, quorum met")
    stale = next(c for c in CASES if c["name"] == "fips205: witnessed, a stale witness timestamp")
    key = d(DATA["groups"][met["group"]])
    root = dv.TrustRoot.from_key_bytes(
        key, witness_policy=met["witness_policy"], log_key_statement=met["log_key_statement"]
    )
    assert root.witness_policy == met["witness_policy"]
    assert root == dv.TrustRoot.from_key_bytes(key).with_witness_policy(met["witness_policy"])
    assert root != dv.TrustRoot.from_key_bytes(key)
    p = met["policy"]

    def check(r: dv.TrustRoot, case: Dict[str, Any]) -> dv.AnswerReport:
        return r.check_answer(
            d(case["message"]), d(case["signature"]), case["answer"], case["snapshot"],
            max_age_ms=p["max_age_ms"], now_unix_ms=p["now_unix_ms"],
        )

    r = check(root, met)
    assert r.valid and r.witnesses_checked
    assert [c.check for c in r.checks] == list(dv.CHECK_NAMES[:-1])
    r = check(root, stale)
    assert r.failed_checks == ("witness_quorum",)
    assert r.first_failure is not None and r.first_failure.detail.endswith(": w2")
    r = check(dv.TrustRoot.from_key_bytes(key), stale)
    assert r.valid and not r.witnesses_checked

    line = root.log_line_from_statement(met["log_key_statement"])
    assert line.startswith("log dgsp/") and line in met["witness_policy"]
    with pytest.raises(dv.TrustRootError) as e:
        root.with_witness_policy(met["witness_policy"].replace("quorum two-of-three", "quorum x"))
    assert "policy line 7" in str(e.value)
    other = dv.TrustRoot.from_key_bytes(d(DATA["groups"]["a"]))
    with pytest.raises(dv.BadSignedObject) as bad:
        other.log_line_from_statement(met["log_key_statement"])
    assert bad.value.what == "log-key statement"
    with pytest.raises(ValueError):
        dv.TrustRoot.from_key_bytes(key, log_key_statement=met["log_key_statement"])
