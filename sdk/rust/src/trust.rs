//! The trust root, and what can be checked with it alone.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::checkpoint::{origin_for, Checkpoint};
use dgsp_core::revocation::SignedSnapshot;
use dgsp_core::{ManagerPublicKey, ParamSet, Signature};
use dgsp_wire::note::{Policy as WitnessPolicy, Vkey};
use serde::Serialize;

use crate::error::Error;

/// The group a caller trusts: its manager public key and, optionally, a witness policy
/// (`c2sp.org/tlog-policy`: the group's log key, the witnesses, the quorum; see
/// [`TrustRoot::with_witness_policy`]). Everything this crate checks is checked under them;
/// nothing else is trusted.
#[derive(Clone, Debug)]
pub struct TrustRoot {
    group: ManagerPublicKey,
    witnesses: Option<WitnessPolicy>,
}

/// What a verified signature shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SignatureInfo {
    /// The group's parameter set (`sha2-128f`, `slh-dsa-sha2-128f`, ...).
    pub params: String,
    /// The certificate serial number the signature carries (hex): what a revocation proof
    /// is about.
    pub zeta: String,
}

/// A verified checkpoint note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckpointInfo {
    /// The log it is a checkpoint of (`dgsp/<fingerprint prefix>`).
    pub origin: String,
    /// Log entries it covers.
    pub size: u64,
    /// The note's root line (hex): the RFC 6962 Merkle tree root of the first `size`
    /// entries (`docs/format.md`, "The tree"). Named `head` as in earlier versions, which
    /// carried the chain hash of entry `size` here.
    pub head: String,
    /// The registry's signed time (Unix ms), when the note carries one.
    pub time_unix_ms: Option<u64>,
    /// The revocation snapshot it names, when it names one.
    pub snapshot_number: Option<u64>,
}

/// A verified snapshot's record, readable (hashes in hex).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SnapshotInfo {
    /// The group's fingerprint.
    pub group: String,
    /// Snapshot number (from 1).
    pub number: u64,
    /// Last log entry it covers.
    pub log_seq: u64,
    /// Revoked zetas in it.
    pub count: u64,
    /// Merkle root over them.
    pub root: String,
    /// Hash of the previous snapshot's record.
    pub prev_hash: String,
    /// When the manager signed it (Unix ms).
    pub time_unix_ms: u64,
}

impl SnapshotInfo {
    /// The record of `s`.
    pub fn of(s: &SignedSnapshot) -> Self {
        let r = &s.record;
        SnapshotInfo {
            group: hex::encode(r.group),
            number: r.number,
            log_seq: r.log_seq,
            count: r.count,
            root: hex::encode(r.root),
            prev_hash: hex::encode(r.prev_hash),
            time_unix_ms: r.time_unix_ms,
        }
    }
}

impl TrustRoot {
    /// The root for `key`.
    pub fn new(key: ManagerPublicKey) -> Self {
        TrustRoot {
            group: key,
            witnesses: None,
        }
    }

    /// This root with a witness policy (`c2sp.org/tlog-policy` text, `docs/witnesses.md`,
    /// "Policy grammar we accept"): [`TrustRoot::check_answer`] then also requires the
    /// answer's witnessed checkpoint, signed by the policy's log key and cosigned by a
    /// quorum of its witnesses ([`crate::evidence::WITNESSED_CHECKPOINT`],
    /// [`crate::evidence::WITNESS_QUORUM`]).
    ///
    /// The policy must parse (the error names the line) and have a `log` line for this
    /// group's origin (`dgsp/<32 hex>`). With `log_key_statement` (the group key's
    /// statement naming its log key, as the registry serves it at `GET /v1/log/key`), the
    /// statement must verify under the group key and name the very key of the policy's
    /// `log` line for this origin (the only one): so a caller who holds only the group key
    /// knows the policy's log key is the group's. Without it, the policy's log key is
    /// trusted as given.
    pub fn with_witness_policy(
        self,
        policy_text: &str,
        log_key_statement: Option<&str>,
    ) -> Result<Self, Error> {
        let policy = WitnessPolicy::parse(policy_text)
            .map_err(|e| Error::TrustRoot(format!("witness policy: {e}")))?;
        let origin = origin_for(&self.group);
        let logs: Vec<&Vkey> = policy.log_keys(&origin).collect();
        if logs.is_empty() {
            return Err(Error::TrustRoot(format!(
                "witness policy: no log line for this group's origin {origin}"
            )));
        }
        if let Some(statement) = log_key_statement {
            let named = self.log_key(statement)?;
            if let Some(other) = logs.iter().find(|k| **k != &named) {
                return Err(Error::TrustRoot(format!(
                    "witness policy: the log line's key {}+{} is not the key the group's \
                     log-key statement names ({}+{})",
                    other.name,
                    hex::encode(other.key_id),
                    named.name,
                    hex::encode(named.key_id)
                )));
            }
        }
        Ok(TrustRoot {
            witnesses: Some(policy),
            ..self
        })
    }

    /// The policy `log` line of this group's log key, from the group key's log-key
    /// statement (verified under the group key): `log <vkey>\n`, to start a witness policy
    /// from when all a caller holds is the group key.
    pub fn log_line_from_statement(&self, log_key_statement: &str) -> Result<String, Error> {
        Ok(format!("log {}\n", self.log_key(log_key_statement)?))
    }

    /// The log key a log-key statement names, the statement verified under the group key.
    fn log_key(&self, statement: &str) -> Result<Vkey, Error> {
        let s = self
            .group
            .verify_log_key(statement)
            .map_err(|e| Error::BadSignedObject {
                what: "log-key statement",
                detail: e.to_string(),
            })?;
        let vkey = Vkey::parse(&s.vkey).map_err(|e| Error::BadSignedObject {
            what: "log-key statement",
            detail: format!("the key it names is no verifier key: {e}"),
        })?;
        if vkey.name != s.origin {
            return Err(Error::BadSignedObject {
                what: "log-key statement",
                detail: format!(
                    "the key it names is called {:?}, not the log's origin {}",
                    vkey.name, s.origin
                ),
            });
        }
        Ok(vkey)
    }

    /// The witness policy, if this root has one.
    pub fn witness_policy(&self) -> Option<&WitnessPolicy> {
        self.witnesses.as_ref()
    }

    /// The root from the key's encoding.
    pub fn from_key_bytes(bytes: &[u8]) -> Result<Self, Error> {
        ManagerPublicKey::from_bytes(bytes)
            .map(Self::new)
            .map_err(|e| Error::TrustRoot(format!("not a group public key: {e}")))
    }

    /// The root from a group key file's contents: the key's standard base64 on its first
    /// non-blank line (as `dgsp-registry public-key` prints it, and `GET /v1/group` serves
    /// as `public_key`), or the raw encoding.
    pub fn from_key_file(contents: &[u8]) -> Result<Self, Error> {
        dgsp_wire::anchor::parse_key_file(contents)
            .map(Self::new)
            .map_err(|e| Error::TrustRoot(format!("not a group public key: {e}")))
    }

    /// The root from a key file whose key must have `fingerprint` (64 hex characters, the
    /// SHA3-256 of the key's encoding, obtained out of band).
    pub fn from_key_file_pinned(contents: &[u8], fingerprint: &str) -> Result<Self, Error> {
        let root = Self::from_key_file(contents)?;
        let want = dgsp_wire::anchor::Anchor::from_fingerprint_hex(fingerprint.trim())
            .ok_or_else(|| Error::TrustRoot("the fingerprint is not 64 hex characters".into()))?
            .fingerprint();
        if root.group.fingerprint() != want {
            return Err(Error::TrustRoot(format!(
                "the key's fingerprint is {}, not the pinned {}",
                root.fingerprint(),
                hex::encode(want)
            )));
        }
        Ok(root)
    }

    /// The group public key.
    pub fn key(&self) -> &ManagerPublicKey {
        &self.group
    }

    /// The group's fingerprint (hex).
    pub fn fingerprint(&self) -> String {
        hex::encode(self.group.fingerprint())
    }

    /// The group's parameter set.
    pub fn params(&self) -> ParamSet {
        self.group.params()
    }

    /// Decodes a signature: its encoding, or the standard base64 of it (as `dgsp-manager
    /// member sign` writes signature files).
    pub fn decode_signature(signature: &[u8]) -> Result<Signature, Error> {
        Signature::from_bytes(signature)
            .or_else(|raw_err| {
                let text = std::str::from_utf8(signature).map_err(|_| raw_err.clone())?;
                let bytes = B64.decode(text.trim()).map_err(|_| raw_err.clone())?;
                Signature::from_bytes(&bytes)
            })
            .map_err(|e| Error::malformed("signature", e))
    }

    /// Verifies `signature` on `message` under the group key, revocation aside (a signature
    /// alone cannot say whether its certificate was revoked: [`TrustRoot::check_answer`]
    /// checks a gateway's proof of that).
    pub fn verify_signature(
        &self,
        message: &[u8],
        signature: &[u8],
    ) -> Result<SignatureInfo, Error> {
        let sig = Self::decode_signature(signature)?;
        self.group
            .verify_ignoring_revocation(message, &sig)
            .map_err(|e| Error::Signature(e.to_string()))?;
        Ok(SignatureInfo {
            params: self.group.params().name().to_owned(),
            zeta: hex::encode(sig.zeta().as_bytes()),
        })
    }

    /// Verifies a signed checkpoint note (docs/checkpoints.md) under the group key and checks
    /// that it is of this group's log.
    pub fn verify_checkpoint(&self, note: &str) -> Result<CheckpointInfo, Error> {
        let cp = self.checkpoint(note)?;
        Ok(CheckpointInfo {
            origin: cp.origin.clone(),
            size: cp.size,
            head: hex::encode(cp.root),
            time_unix_ms: cp.time_unix_ms,
            snapshot_number: cp.snapshot.map(|s| s.number),
        })
    }

    pub(crate) fn checkpoint(&self, note: &str) -> Result<Checkpoint, Error> {
        dgsp_wire::follow::check_note(&self.group, note).map_err(|detail| Error::BadSignedObject {
            what: "checkpoint",
            detail,
        })
    }

    /// Decodes a signed revocation snapshot in its JSON form (as the registry and gateways
    /// serve it at `/v1/revocations/snapshots/{n}`) and verifies its signature.
    pub fn verify_snapshot(&self, snapshot_json: &[u8]) -> Result<SignedSnapshot, Error> {
        let s = parse_snapshot(snapshot_json)?;
        s.verify(&self.group).map_err(|e| Error::BadSignedObject {
            what: "snapshot",
            detail: e.to_string(),
        })?;
        Ok(s)
    }
}

/// A signed snapshot from its JSON form (signature not checked).
pub(crate) fn parse_snapshot(snapshot_json: &[u8]) -> Result<SignedSnapshot, Error> {
    let v: serde_json::Value =
        serde_json::from_slice(snapshot_json).map_err(|e| Error::malformed("snapshot", e))?;
    dgsp_wire::snapshot::snapshot_from_json(&v).ok_or_else(|| {
        Error::malformed(
            "snapshot",
            "not a signed snapshot (the JSON served at /v1/revocations/snapshots/{n})",
        )
    })
}
