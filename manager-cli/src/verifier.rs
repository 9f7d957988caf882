//! What anyone can check: `verify` (through a gateway; with `--group-key`, checking all of
//! its evidence itself: [`crate::evidence`]), `judge` (through a gateway or locally) and
//! `check-proof` (offline).
//!
//! Exit codes: 0 when the signature is valid / the opening is right / the proof verifies;
//! 3 for a negative verdict (invalid, revoked, stale, any failed check, wrong opening); 1
//! when nothing could be decided (unreachable gateway, bad input).

use std::path::Path;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::revocation::{verify_revocation, Membership, RevocationProof, SignedSnapshot};
use dgsp_core::{ManagerPublicKey, Pi, Signature};
use dgsp_wire::anchor::Anchor;
use dgsp_wire::answer::parse_zeta;
use dgsp_wire::answer::{JudgeAnswer, Status, VerifyAnswer};
use dgsp_wire::snapshot::snapshot_from_json;
use serde_json::{json, Value};

use crate::cli::{CheckProofArgs, GatewayArgs, JudgeArgs, VerifyArgs};
use crate::client::Client;
use crate::config::Config;
use crate::documents;
use crate::error::{exit, Error};
use crate::evidence::{self, Checks, Policy};
use crate::io;
use crate::output::Output;

fn gateway(args: &GatewayArgs, config: &Config) -> Result<Client, Error> {
    let url = args
        .gateway
        .clone()
        .or_else(|| config.gateway.clone())
        .ok_or_else(|| {
            Error::Config(
                "which gateway? set DGSP_GATEWAY_URL, pass --gateway, or put gateway in the config file".into(),
            )
        })?;
    Ok(args
        .http
        .client(&url, None)?
        .with_max_answer(crate::client::MAX_GATEWAY_ANSWER))
}

/// Reads a group key: a key file (base64 text or raw encoding).
fn read_group_key(path: &Path) -> Result<ManagerPublicKey, Error> {
    match crate::io::read_anchor(&path.display().to_string()) {
        Ok(Anchor::Key(pk)) => Ok(*pk),
        Ok(Anchor::Fingerprint(_)) => Err(Error::input(
            path,
            "a fingerprint cannot check signatures; give the group key file",
        )),
        Err(e) => Err(Error::input(path, e)),
    }
}

/// The witness policy of `verify --witness-policy` (and, when given, the group key's
/// statement naming the log key), checked into the trust root as the SDKs do.
fn witness_policy(
    group: &ManagerPublicKey,
    path: &Path,
    statement: Option<&Path>,
) -> Result<dgsp_verifier::WitnessPolicy, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::input(path, e.to_string()))?;
    let statement = statement
        .map(|p| std::fs::read_to_string(p).map_err(|e| Error::input(p, e.to_string())))
        .transpose()?;
    let root = dgsp_verifier::TrustRoot::new(group.clone())
        .with_witness_policy(&text, statement.as_deref())
        .map_err(|e| Error::input(path, e.to_string()))?;
    root.witness_policy()
        .cloned()
        .ok_or_else(|| Error::input(path, "no witness policy in the trust root"))
}

/// `verify`: asks the gateway. With `--group-key`, trusts nothing it can check itself (see
/// [`evidence`]): the verdict is positive only when every check holds.
pub async fn verify(args: VerifyArgs, out: Output, config: &Config) -> Result<i32, Error> {
    let group = args
        .group_key
        .as_ref()
        .map(|key| read_group_key(Path::new(key)))
        .transpose()?;
    let witnesses = match (&group, &args.witness_policy) {
        (Some(group), Some(path)) => Some(witness_policy(
            group,
            path,
            args.log_key_statement.as_deref(),
        )?),
        _ => None,
    };
    let client = gateway(&args.gateway, config)?;
    let message = io::read_input(&args.message)?;
    let sig = documents::read_signature(&args.signature)?;
    let body = json!({"message": B64.encode(&message), "signature": B64.encode(sig.to_bytes())});
    let answer: VerifyAnswer = client.post_json("/v1/verify", &body).await?;
    let checks = match &group {
        Some(group) => {
            let policy = Policy {
                max_age_ms: args.max_age.saturating_mul(1000),
                min_snapshot: args.min_snapshot,
                clock_tolerance_ms: args.clock_tolerance_ms,
                now_unix_ms: dgsp_wire::log::now_ms(),
            };
            Some(
                check_all(
                    &client,
                    group,
                    witnesses.as_ref(),
                    (&message, &sig),
                    &answer,
                    &policy,
                )
                .await,
            )
        }
        None => None,
    };
    let valid = match &checks {
        Some(c) => c.all_passed(),
        None => answer.valid && !answer.freshness.stale,
    };
    // The gateway's answer, with the verdict of this command as `valid` (the gateway's own
    // is kept as `gateway_valid`) and, with --group-key, every check.
    let mut report = serde_json::to_value(&answer).unwrap_or_default();
    report["gateway_valid"] = json!(answer.valid);
    report["valid"] = json!(valid);
    if let Some(c) = &checks {
        report["checks"] = json!(c);
        if let Some(f) = c.first_failure() {
            report["failed_check"] = json!(f.check);
        }
    }
    out.emit(&report, || human(&answer, checks.as_ref(), valid));
    Ok(if valid { exit::OK } else { exit::REJECTED })
}

/// Runs every [`evidence`] check, fetching the snapshot the answer's checkpoint names.
async fn check_all(
    client: &Client,
    group: &ManagerPublicKey,
    witnesses: Option<&dgsp_verifier::WitnessPolicy>,
    (message, sig): (&[u8], &Signature),
    answer: &VerifyAnswer,
    policy: &Policy,
) -> Checks {
    let mut checks = Checks::default();
    let cp = evidence::check_answer(group, message, sig, answer, policy, &mut checks);
    if let Some(w) = witnesses {
        evidence::check_witnesses(w, answer, cp.as_ref(), policy, &mut checks);
    }
    if let Some(cp) = cp {
        let fetched = match cp.snapshot {
            Some(named) => {
                let path = format!("/v1/revocations/snapshots/{}", named.number);
                client
                    .get_json::<Value>(&path, &[])
                    .await
                    .map_err(|e| format!("snapshot {}: {e}", named.number))
                    .and_then(|v| {
                        snapshot_from_json(&v).ok_or_else(|| {
                            format!("snapshot {} is not a signed snapshot", named.number)
                        })
                    })
            }
            None => Err("the checkpoint names no snapshot".into()),
        };
        evidence::check_snapshot(group, sig, answer, &cp, fetched, policy, &mut checks);
    }
    checks
}

/// The text report of `verify`.
fn human(answer: &VerifyAnswer, checks: Option<&Checks>, valid: bool) -> String {
    let mut s = if valid {
        "valid: signed by a current member of the group".to_owned()
    } else {
        match answer.status {
            Status::Revoked => {
                "REVOKED: signed by a member whose certificates are revoked".to_owned()
            }
            other => format!(
                "NOT VALID ({}){}",
                other.label(),
                answer
                    .detail
                    .as_ref()
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default()
            ),
        }
    };
    if let Some(rev) = &answer.revocation {
        if let Some(snap) = &rev.snapshot {
            s.push_str(&format!(
                "\nrevocation snapshot {} ({} revoked, log entry {})",
                snap.number, snap.count, snap.seq
            ));
        }
    }
    match checks {
        Some(checks) => {
            if let Some(f) = checks.first_failure() {
                s.push_str(&format!(
                    "\nNEGATIVE: check {} failed: {}",
                    f.check, f.detail
                ));
            } else {
                s.push_str("\nproof checked offline against the signed snapshot the signed checkpoint names, and the group key: not revoked");
            }
            for c in &checks.0 {
                s.push_str(&format!(
                    "\n  [{}] {}: {}",
                    if c.passed { "pass" } else { "FAIL" },
                    c.check,
                    c.detail
                ));
            }
        }
        None => {
            if answer.freshness.stale {
                s.push_str("\nNOT VALID: the gateway's state is stale (its newest signed checkpoint is older than its bound)");
            }
            s.push_str(
                "\n(the gateway was trusted; pass --group-key to check its evidence yourself)",
            );
        }
    }
    s
}

/// A revocation proof from its base64 form (as the gateway serves it).
fn decode_proof(encoded: &str) -> Option<RevocationProof> {
    let bytes = B64.decode(encoded).ok()?;
    RevocationProof::from_bytes(&bytes).ok()
}

/// Parses pi as hex or base64.
fn parse_pi(params: dgsp_core::ParamSet, s: &str) -> Result<Pi, Error> {
    let bytes = hex::decode(s)
        .or_else(|_| B64.decode(s))
        .map_err(|_| Error::arg("--pi", "not hex or base64"))?;
    Pi::from_slice(params, &bytes).map_err(|e| Error::arg("--pi", e.to_string()))
}

/// `judge`: through a gateway, or locally with `--group-key`.
pub async fn judge(args: JudgeArgs, out: Output, config: &Config) -> Result<i32, Error> {
    let message = io::read_input(&args.message)?;
    let sig = documents::read_signature(&args.signature)?;
    let pi = parse_pi(sig.params(), &args.pi)?;
    let answer = match &args.group_key {
        Some(path) => {
            let group = read_group_key(path)?;
            let signature_valid = group.verify_ignoring_revocation(&message, &sig).is_ok();
            let matches = group.judge(&message, &sig, args.id, &pi);
            let opening_matches = matches.is_ok();
            JudgeAnswer {
                correct: signature_valid && opening_matches,
                signature_valid,
                opening_matches,
                params: sig.params().name().to_owned(),
                detail: matches.err().map(|e| e.to_string()),
            }
        }
        None => {
            let client = gateway(&args.gateway, config)?;
            let body = json!({
                "message": B64.encode(&message),
                "signature": B64.encode(sig.to_bytes()),
                "id": args.id,
                "pi": B64.encode(pi.as_bytes()),
            });
            client.post_json("/v1/judge", &body).await?
        }
    };
    out.emit(&answer, || {
        if answer.correct {
            format!("correct: member {} made this signature", args.id)
        } else if !answer.signature_valid {
            "WRONG: the signature itself does not verify".to_owned()
        } else {
            format!(
                "WRONG: the proof does not show that member {} made this signature{}",
                args.id,
                answer
                    .detail
                    .as_ref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default()
            )
        }
    });
    Ok(if answer.correct {
        exit::OK
    } else {
        exit::REJECTED
    })
}

/// A signed snapshot file for `check-proof`: the JSON served at
/// `/v1/revocations/snapshots/{n}`.
pub fn parse_snapshot_file(bytes: &[u8]) -> Option<SignedSnapshot> {
    serde_json::from_slice::<Value>(bytes)
        .ok()
        .and_then(|v| snapshot_from_json(&v))
}

/// A proof file for `check-proof`: a saved answer (JSON with `revocation.proof.encoded` or
/// `proof.encoded`) or the proof in base64.
pub fn parse_proof_file(bytes: &[u8]) -> Option<RevocationProof> {
    let encoded = serde_json::from_slice::<Value>(bytes)
        .ok()
        .and_then(|v| {
            v.pointer("/revocation/proof/encoded")
                .or_else(|| v.pointer("/proof/encoded"))
                .and_then(|e| e.as_str().map(str::to_owned))
        })
        .unwrap_or_else(|| String::from_utf8_lossy(bytes).trim().to_owned());
    decode_proof(&encoded)
}

/// `check-proof`: a revocation proof against a signed snapshot and the group key, offline.
pub fn check_proof(args: CheckProofArgs, out: Output) -> Result<i32, Error> {
    let group = read_group_key(&args.group_key)?;
    let snapshot = parse_snapshot_file(&io::read_input(&args.snapshot)?).ok_or_else(|| {
        Error::input(
            &args.snapshot,
            "not a signed snapshot (the JSON served at /v1/revocations/snapshots/{n})",
        )
    })?;
    let zeta = parse_zeta(&args.zeta)
        .ok_or_else(|| Error::arg("--zeta", "not 16 bytes as 32 hex characters or base64"))?;
    let proof = parse_proof_file(&io::read_input(&args.proof)?)
        .ok_or_else(|| Error::input(&args.proof, "not a revocation proof"))?;
    let verdict = verify_revocation(&group, &snapshot, &zeta, &proof);
    let report = json!({
        "verified": verdict.is_ok(),
        "revoked": matches!(verdict, Ok(Membership::Revoked)),
        "snapshot": snapshot.record.number,
        "count": snapshot.record.count,
        "detail": verdict.as_ref().err().map(|e| e.to_string()),
    });
    out.emit(&report, || match &verdict {
        Ok(Membership::Revoked) => format!(
            "verified: zeta {} IS revoked in snapshot {} ({} revoked)",
            hex::encode(zeta.as_bytes()),
            snapshot.record.number,
            snapshot.record.count
        ),
        Ok(Membership::NotRevoked) => format!(
            "verified: zeta {} is not revoked in snapshot {} ({} revoked)",
            hex::encode(zeta.as_bytes()),
            snapshot.record.number,
            snapshot.record.count
        ),
        Err(e) => format!("the proof does NOT verify: {e}"),
    });
    Ok(if verdict.is_ok() {
        exit::OK
    } else {
        exit::REJECTED
    })
}
