//! Snapshot records: what the manager signs after each revocation batch, their canonical
//! bytes, the hash chain between them and SPHINCS+ signing / verification.
//!
//! ```text
//! record (133 bytes) = "DGSR" || 0x01 || group (32) || be64(number) || be64(log_seq)
//!                   || be64(count) || root (32) || prev_hash (32) || be64(time_unix_ms)
//! signed message     = "DGSP-v1:snapshot" || record
//! signed snapshot    = record || be32(signature length) || signature
//! ```

use sha3::{Digest, Sha3_256};

use crate::keys::ManagerPublicKey;
use crate::values::Zeta;

use super::codec::Reader;
use super::error::{FormatError, SnapshotError};
use super::hasher::empty_root;
use super::proof::{Membership, RevocationProof};
use super::verify::verify_proof;

/// Domain prefix of every snapshot message signed by the manager's SPHINCS+ key (distinct
/// from [`CERT_PREFIX`](crate::CERT_PREFIX), `"DGSP-v1:cert"`).
pub const SNAPSHOT_PREFIX: &[u8] = b"DGSP-v1:snapshot";
/// Magic of a canonical snapshot record.
pub const RECORD_MAGIC: &[u8; 4] = b"DGSR";
/// Version byte of the record layout; version 1 commits with revocation format v1.
pub const RECORD_VERSION: u8 = 1;
/// Length of a canonical snapshot record.
pub const RECORD_LEN: usize = 4 + 1 + 32 + 8 + 8 + 8 + 32 + 32 + 8;
/// Longest signature accepted when decoding a signed snapshot (any SPHINCS+ set fits).
pub const MAX_SIGNATURE_LEN: u32 = 65536;

/// One published state of a group's revoked set.
///
/// Snapshots are numbered from 1. `prev_hash` is 32 zero bytes for number 1 and, for number
/// `k > 1`, [`hash`](Self::hash) of record `k - 1` (the record only, not its signature).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotRecord {
    /// The group: [`ManagerPublicKey::fingerprint`].
    pub group: [u8; 32],
    /// Snapshot number, from 1, consecutive.
    pub number: u64,
    /// Sequence number of the last event-log entry included.
    pub log_seq: u64,
    /// Number of revoked zetas.
    pub count: u64,
    /// Root of the revoked set ([`RevocationSet::root`](super::RevocationSet::root)).
    pub root: [u8; 32],
    /// Hash of the previous record (zeros for number 1).
    pub prev_hash: [u8; 32],
    /// Publication time, milliseconds since the Unix epoch.
    pub time_unix_ms: u64,
}

impl SnapshotRecord {
    /// The first snapshot of a group (number 1, `prev_hash` zeros).
    pub fn genesis(
        group: [u8; 32],
        log_seq: u64,
        count: u64,
        root: [u8; 32],
        time_unix_ms: u64,
    ) -> Self {
        SnapshotRecord {
            group,
            number: 1,
            log_seq,
            count,
            root,
            prev_hash: [0u8; 32],
            time_unix_ms,
        }
    }

    /// The record following this one (number + 1, `prev_hash` = this record's hash).
    pub fn next(&self, log_seq: u64, count: u64, root: [u8; 32], time_unix_ms: u64) -> Self {
        SnapshotRecord {
            group: self.group,
            number: self.number.saturating_add(1),
            log_seq,
            count,
            root,
            prev_hash: self.hash(),
            time_unix_ms,
        }
    }

    /// Canonical bytes (see the module docs).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(RECORD_LEN);
        out.extend_from_slice(RECORD_MAGIC);
        out.push(RECORD_VERSION);
        out.extend_from_slice(&self.group);
        out.extend_from_slice(&self.number.to_be_bytes());
        out.extend_from_slice(&self.log_seq.to_be_bytes());
        out.extend_from_slice(&self.count.to_be_bytes());
        out.extend_from_slice(&self.root);
        out.extend_from_slice(&self.prev_hash);
        out.extend_from_slice(&self.time_unix_ms.to_be_bytes());
        out
    }

    /// Decodes canonical bytes: exact length, magic, version, then [`validate`](Self::validate).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, FormatError> {
        let mut r = Reader::new(bytes, "snapshot record");
        let record = Self::read(&mut r)?;
        r.finish()?;
        Ok(record)
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, FormatError> {
        r.header(RECORD_MAGIC, RECORD_VERSION)?;
        let record = SnapshotRecord {
            group: r.array()?,
            number: r.u64()?,
            log_seq: r.u64()?,
            count: r.u64()?,
            root: r.array()?,
            prev_hash: r.array()?,
            time_unix_ms: r.u64()?,
        };
        record.validate()?;
        Ok(record)
    }

    /// The format's rules: `number >= 1`; number 1 has zero `prev_hash`; an empty set
    /// (`count == 0`) has the empty-set root.
    pub fn validate(&self) -> Result<(), FormatError> {
        if self.number == 0 {
            return Err(FormatError::InvalidRecord("snapshot numbers start at 1"));
        }
        if self.number == 1 && self.prev_hash != [0u8; 32] {
            return Err(FormatError::InvalidRecord(
                "snapshot 1 must have an all-zero prev_hash",
            ));
        }
        if self.count == 0 && self.root != empty_root() {
            return Err(FormatError::InvalidRecord(
                "a snapshot of 0 zetas must have the empty-set root",
            ));
        }
        Ok(())
    }

    /// SHA3-256 of the canonical bytes (the next record's `prev_hash`).
    pub fn hash(&self) -> [u8; 32] {
        Sha3_256::digest(self.to_bytes()).into()
    }

    /// The message the manager signs: `"DGSP-v1:snapshot" || canonical bytes`.
    pub fn signed_message(&self) -> Vec<u8> {
        let mut m = Vec::with_capacity(SNAPSHOT_PREFIX.len() + RECORD_LEN);
        m.extend_from_slice(SNAPSHOT_PREFIX);
        m.extend_from_slice(&self.to_bytes());
        m
    }

    /// Checks that `next` directly extends this record: same group, number + 1, `prev_hash`
    /// = this hash, and neither the count nor the log sequence goes back.
    ///
    /// A count that does not shrink is necessary, not sufficient, for "no zeta dropped";
    /// auditors holding the revoked list rebuild the root to check the rest.
    pub fn check_successor(&self, next: &SnapshotRecord) -> Result<(), SnapshotError> {
        if next.group != self.group {
            return Err(SnapshotError::NotSuccessor("different group"));
        }
        if self.number.checked_add(1) != Some(next.number) {
            return Err(SnapshotError::NotSuccessor("number is not previous + 1"));
        }
        if next.prev_hash != self.hash() {
            return Err(SnapshotError::NotSuccessor(
                "prev_hash is not the previous record's hash",
            ));
        }
        if next.count < self.count {
            return Err(SnapshotError::NotSuccessor("count decreased"));
        }
        if next.log_seq < self.log_seq {
            return Err(SnapshotError::NotSuccessor("log sequence decreased"));
        }
        Ok(())
    }
}

/// A snapshot record with the manager's SPHINCS+ signature over its
/// [`signed_message`](SnapshotRecord::signed_message).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedSnapshot {
    /// The record.
    pub record: SnapshotRecord,
    /// The detached SPHINCS+ signature.
    pub signature: Vec<u8>,
}

impl SignedSnapshot {
    /// Checks the record's rules, that it names `group`, and the signature.
    pub fn verify(&self, group: &ManagerPublicKey) -> Result<(), SnapshotError> {
        self.record.validate()?;
        if self.record.group != group.fingerprint() {
            return Err(SnapshotError::WrongGroup);
        }
        let msg = self.record.signed_message();
        if !group.verifying_key().verify(&msg, &self.signature) {
            return Err(SnapshotError::BadSignature);
        }
        Ok(())
    }

    /// `record || be32(signature length) || signature`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.record.to_bytes();
        // Longer signatures than u32::MAX cannot be produced; such a value is refused on decode.
        let len = u32::try_from(self.signature.len()).unwrap_or(u32::MAX);
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&self.signature);
        out
    }

    /// Decodes [`to_bytes`](Self::to_bytes) output (exact length; does not verify).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, FormatError> {
        let mut r = Reader::new(bytes, "signed snapshot");
        let record = SnapshotRecord::read(&mut r)?;
        let len = r.u32()?;
        if len > MAX_SIGNATURE_LEN {
            return Err(FormatError::SignatureTooLong(len));
        }
        let signature = r.take(len as usize)?.to_vec();
        r.finish()?;
        Ok(SignedSnapshot { record, signature })
    }
}

#[cfg(feature = "sign")]
impl crate::Manager {
    /// Signs a snapshot record with the manager's SPHINCS+ key, over
    /// `"DGSP-v1:snapshot" || record bytes`. The record should name this group
    /// (`record.group == self.public_key().fingerprint()`), or it will not verify.
    /// Requires the `sign` feature.
    pub fn sign_snapshot(&self, record: &SnapshotRecord) -> SignedSnapshot {
        let signature = crate::spx::sign(
            self.params(),
            &self.secret_key().spx_sk,
            &record.signed_message(),
        );
        SignedSnapshot {
            record: record.clone(),
            signature,
        }
    }
}

/// Offline check of a revocation status: verifies the snapshot's signature for `group`, then
/// `proof` for `zeta` against the snapshot's root and count. Returns what the proof shows.
pub fn verify_revocation(
    group: &ManagerPublicKey,
    snapshot: &SignedSnapshot,
    zeta: &Zeta,
    proof: &RevocationProof,
) -> Result<Membership, SnapshotError> {
    snapshot.verify(group)?;
    Ok(verify_proof(
        &snapshot.record.root,
        snapshot.record.count,
        zeta,
        proof,
    )?)
}
