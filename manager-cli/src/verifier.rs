//! What anyone can check: `verify` (through a gateway, optionally re-checking its revocation
//! proof offline), `judge` (through a gateway or locally) and `check-proof` (offline).
//!
//! Exit codes: 0 when the signature is valid / the opening is right / the proof verifies;
//! 3 for a negative verdict (invalid, revoked, wrong opening); 1 when nothing could be
//! decided (unreachable gateway, bad input).

use std::path::Path;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::revocation::{verify_revocation, Membership, RevocationProof, SignedSnapshot};
use dgsp_core::{ManagerPublicKey, Pi, Zeta};
use dgsp_gateway::anchor::Anchor;
use dgsp_gateway::api::model::{JudgeAnswer, Status, VerifyAnswer};
use dgsp_gateway::api::revocations::parse_zeta;
use dgsp_registry::publisher::snapshot_from_json;
use serde::Serialize;
use serde_json::{json, Value};

use crate::cli::{CheckProofArgs, GatewayArgs, JudgeArgs, VerifyArgs};
use crate::client::Client;
use crate::config::Config;
use crate::documents;
use crate::error::{exit, Error};
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
    Ok(args.http.client(&url, None)?)
}

/// Reads a group key: a key file (base64 text or raw encoding).
fn read_group_key(path: &Path) -> Result<ManagerPublicKey, Error> {
    match Anchor::parse(&path.display().to_string()) {
        Ok(Anchor::Key(pk)) => Ok(*pk),
        Ok(Anchor::Fingerprint(_)) => Err(Error::input(
            path,
            "a fingerprint cannot check signatures; give the group key file",
        )),
        Err(e) => Err(Error::input(path, e)),
    }
}

/// What `verify --group-key` found when re-checking the gateway's proof.
#[derive(Debug, Serialize)]
struct OfflineCheck {
    /// the proof verified against the signed snapshot and the group key
    verified: bool,
    /// what it proves
    revoked: bool,
    /// the snapshot number it was checked against
    snapshot: u64,
}

/// `verify`: asks the gateway; with `--group-key`, also checks its revocation proof offline.
pub async fn verify(args: VerifyArgs, out: Output, config: &Config) -> Result<i32, Error> {
    let client = gateway(&args.gateway, config)?;
    let message = io::read_input(&args.message)?;
    let sig = documents::read_signature(&args.signature)?;
    let body = json!({"message": B64.encode(&message), "signature": B64.encode(sig.to_bytes())});
    let answer: VerifyAnswer = client.post_json("/v1/verify", &body).await?;
    let offline = match &args.group_key {
        Some(key) => Some(check_offline(&client, key, sig.zeta(), &answer).await?),
        None => None,
    };
    let valid = answer.valid && offline.as_ref().is_none_or(|o| !o.revoked);
    #[derive(Serialize)]
    struct Report<'a> {
        valid: bool,
        #[serde(flatten)]
        answer: &'a VerifyAnswer,
        offline_check: Option<OfflineCheck>,
    }
    let report = Report {
        valid,
        answer: &answer,
        offline_check: offline,
    };
    out.emit(&report, || {
        let mut s = match answer.status {
            Status::Ok => "valid: signed by a current member of the group".to_owned(),
            Status::Revoked => "REVOKED: signed by a member whose certificates are revoked".to_owned(),
            other => format!(
                "NOT VALID ({}){}",
                serde_json::to_value(other).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default(),
                answer.detail.as_ref().map(|d| format!(": {d}")).unwrap_or_default()
            ),
        };
        if let Some(rev) = &answer.revocation {
            if let Some(snap) = &rev.snapshot {
                s.push_str(&format!(
                    "\nrevocation snapshot {} ({} revoked, log entry {})",
                    snap.number, snap.count, snap.seq
                ));
            }
        }
        if let Some(o) = &report.offline_check {
            s.push_str(&format!(
                "\nproof checked offline against snapshot {} and the group key: {}",
                o.snapshot,
                if o.revoked { "revoked" } else { "not revoked" }
            ));
        }
        if answer.freshness.stale {
            s.push_str("\nwarning: the gateway's state is stale (it has not heard from the registry lately)");
        }
        s
    });
    Ok(if valid { exit::OK } else { exit::REJECTED })
}

/// Fetches the snapshot the gateway's answer names and checks its proof offline.
async fn check_offline(
    client: &Client,
    key: &str,
    zeta: &Zeta,
    answer: &VerifyAnswer,
) -> Result<OfflineCheck, Error> {
    let group = read_group_key(Path::new(key))?;
    let Some(rev) = &answer.revocation else {
        return Err(Error::arg(
            "--group-key",
            "the gateway gave no revocation proof for this signature (it is not valid in the first place)",
        ));
    };
    let (Some(snap_ref), Some(proof)) = (&rev.snapshot, &rev.proof) else {
        return Err(Error::arg(
            "--group-key",
            "the gateway has no signed snapshot covering this answer yet; retry in a few seconds",
        ));
    };
    let snapshot: Value = client
        .get_json(
            &format!("/v1/revocations/snapshots/{}", snap_ref.number),
            &[],
        )
        .await?;
    let snapshot =
        snapshot_from_json(&snapshot).ok_or_else(|| crate::client::ClientError::Malformed {
            url: client.base().to_owned(),
            reason: format!("snapshot {} is not a signed snapshot", snap_ref.number),
        })?;
    let proof =
        decode_proof(&proof.encoded).ok_or_else(|| crate::client::ClientError::Malformed {
            url: client.base().to_owned(),
            reason: "the revocation proof does not decode".into(),
        })?;
    let shown = verify_revocation(&group, &snapshot, zeta, &proof).map_err(|e| {
        Error::arg(
            "revocation proof",
            format!("the gateway's proof does NOT verify against its signed snapshot: {e}"),
        )
    })?;
    Ok(OfflineCheck {
        verified: true,
        revoked: shown == Membership::Revoked,
        snapshot: snapshot.record.number,
    })
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

/// `check-proof`: a revocation proof against a signed snapshot and the group key, offline.
pub fn check_proof(args: CheckProofArgs, out: Output) -> Result<i32, Error> {
    let group = read_group_key(&args.group_key)?;
    let snap_bytes = io::read_input(&args.snapshot)?;
    let snapshot: SignedSnapshot = serde_json::from_slice::<Value>(&snap_bytes)
        .ok()
        .and_then(|v| snapshot_from_json(&v))
        .ok_or_else(|| {
            Error::input(
                &args.snapshot,
                "not a signed snapshot (the JSON served at /v1/revocations/snapshots/{n})",
            )
        })?;
    let zeta = parse_zeta(&args.zeta)
        .ok_or_else(|| Error::arg("--zeta", "not 16 bytes as 32 hex characters or base64"))?;
    let proof_bytes = io::read_input(&args.proof)?;
    // A saved proof answer (JSON with revocation.proof.encoded) or the proof in base64.
    let encoded = serde_json::from_slice::<Value>(&proof_bytes)
        .ok()
        .and_then(|v| {
            v.pointer("/revocation/proof/encoded")
                .or_else(|| v.pointer("/proof/encoded"))
                .and_then(|e| e.as_str().map(str::to_owned))
        })
        .unwrap_or_else(|| String::from_utf8_lossy(&proof_bytes).trim().to_owned());
    let proof = decode_proof(&encoded)
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
