//! The snapshot bundle: the contents of one signed revocation snapshot, published beside
//! the log's tiles so that a follower can start from the newest snapshot instead of
//! replaying every entry (`docs/format.md`, "Snapshot bundles").
//!
//! ```text
//! offset   size        field
//! 0        8           magic "DGSPSNB1"
//! 8        4           be32 S: length of the signed snapshot
//! 12       S           the signed snapshot (SignedSnapshot::to_bytes: the 133-byte record,
//!                      be32 signature length, the manager's signature); its record carries
//!                      the snapshot number, the log_seq it covers, count and root
//! 12+S     8           be64 count: number of zetas (equal to the record's count)
//! 20+S     16 * count  the revoked zetas, strictly ascending (bytewise)
//! ```
//!
//! It lives at `snapshot/<N>` under the log's prefix, `N` the snapshot number written as a
//! tile index is (3-digit groups, `x`-prefixed but the last: [`crate::tiles::encode_index`]);
//! a reader finds `N` in the checkpoint's `snapshot` line. Its bytes are a function of the
//! signed snapshot alone, so it is immutable. Nothing in it is private: the feed serves the
//! same zetas (in `member_revoked` entries) and the same signed snapshot.
//!
//! [`SnapshotBundle::verify`] checks everything a reader must before trusting it: the
//! signature under the group key, that the checkpoint names this record, the count, the
//! order, and that the zetas give the record's signed root.

use dgsp_core::checkpoint::SnapshotRef;
use dgsp_core::revocation::{RevocationSet, SignedSnapshot};
use dgsp_core::{ManagerPublicKey, Zeta};

use crate::tiles::{encode_index, BadPath};

/// The first 8 bytes of every snapshot bundle.
pub const MAGIC: &[u8; 8] = b"DGSPSNB1";

/// Where snapshot `number`'s bundle lives under the log's prefix: `snapshot/<N>`.
pub fn path(number: u64) -> String {
    format!("snapshot/{}", encode_index(number))
}

/// The snapshot number of a path made by [`path`] (exactly that spelling).
pub fn parse_path(p: &str) -> Result<u64, BadPath> {
    let bad = || BadPath(p.chars().take(200).collect());
    let rest = p.strip_prefix("snapshot/").ok_or_else(bad)?;
    // Reuse the tile index grammar: `tile/entries/<N>` parses exactly those spellings.
    let tile = crate::tiles::Tile::parse(&format!("tile/entries/{rest}")).map_err(|_| bad())?;
    if !tile.is_full() || path(tile.index) != p {
        return Err(bad());
    }
    Ok(tile.index)
}

/// A decoded snapshot bundle (not yet verified).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotBundle {
    /// The signed snapshot it carries.
    pub snapshot: SignedSnapshot,
    /// Its zetas, as decoded (ascending if the bundle is well formed).
    pub zetas: Vec<Zeta>,
}

/// Why a snapshot bundle is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SnapshotBundleError {
    /// The bytes are not a snapshot bundle (magic, lengths, trailing bytes).
    #[error("not a snapshot bundle: {0}")]
    Malformed(String),
    /// The signed snapshot does not verify under the group key (or names another group).
    #[error("the snapshot in the bundle does not verify: {0}")]
    Signature(String),
    /// It is not the snapshot the checkpoint names.
    #[error("the bundle holds snapshot {found}, the checkpoint names snapshot {named} (or another record)")]
    NotNamed {
        /// the number the checkpoint names
        named: u64,
        /// the number in the bundle
        found: u64,
    },
    /// The zetas are not strictly ascending.
    #[error("the zetas are not strictly ascending (at position {0})")]
    NotSorted(u64),
    /// The zetas do not give the signed count or root.
    #[error("the zetas do not give snapshot {number}'s signed {what}")]
    RootMismatch {
        /// snapshot number
        number: u64,
        /// `count` or `root`
        what: &'static str,
    },
}

impl SnapshotBundle {
    /// The bundle of `snapshot` and its zetas (`set` must be exactly its set: callers check
    /// the root first; ascending order comes from the set).
    pub fn encode(snapshot: &SignedSnapshot, set: &RevocationSet) -> Vec<u8> {
        let signed = snapshot.to_bytes();
        let mut out = Vec::with_capacity(20 + signed.len() + 16 * set.len() as usize);
        out.extend_from_slice(MAGIC);
        // A signed snapshot is a few tens of KB; its length always fits.
        out.extend_from_slice(&(signed.len() as u32).to_be_bytes());
        out.extend_from_slice(&signed);
        out.extend_from_slice(&set.len().to_be_bytes());
        for z in set.iter() {
            out.extend_from_slice(z.as_bytes());
        }
        out
    }

    /// Decodes a bundle. Lengths are checked against the bytes held before anything is
    /// allocated on their claim.
    pub fn decode(bytes: &[u8]) -> Result<Self, SnapshotBundleError> {
        let bad = |s: String| SnapshotBundleError::Malformed(s);
        let rest = bytes
            .strip_prefix(MAGIC.as_slice())
            .ok_or_else(|| bad("it does not start with DGSPSNB1".into()))?;
        let (len, rest) = rest
            .split_first_chunk::<4>()
            .ok_or_else(|| bad("it ends inside the snapshot length".into()))?;
        let len = u32::from_be_bytes(*len) as usize;
        if rest.len() < len {
            return Err(bad(format!(
                "it claims a signed snapshot of {len} bytes, {} remain",
                rest.len()
            )));
        }
        let (signed, rest) = rest.split_at(len);
        let snapshot = SignedSnapshot::from_bytes(signed)
            .map_err(|e| bad(format!("the signed snapshot: {e}")))?;
        let (count, rest) = rest
            .split_first_chunk::<8>()
            .ok_or_else(|| bad("it ends inside the zeta count".into()))?;
        let count = u64::from_be_bytes(*count);
        if count.checked_mul(16) != Some(rest.len() as u64) {
            return Err(bad(format!(
                "it claims {count} zetas, and holds {} bytes of zetas",
                rest.len()
            )));
        }
        let zetas = rest
            .chunks_exact(16)
            .map(|c| Zeta(c.try_into().expect("16 bytes")))
            .collect();
        Ok(SnapshotBundle { snapshot, zetas })
    }

    /// Checks the bundle and returns its set: the snapshot verifies under `group`,
    /// `named` (the checkpoint's `snapshot` line) names its record, the zetas are strictly
    /// ascending, and their count and root are the record's signed ones.
    pub fn verify(
        &self,
        group: &ManagerPublicKey,
        named: &SnapshotRef,
    ) -> Result<RevocationSet, SnapshotBundleError> {
        self.snapshot
            .verify(group)
            .map_err(|e| SnapshotBundleError::Signature(e.to_string()))?;
        if !named.names(&self.snapshot.record) {
            return Err(SnapshotBundleError::NotNamed {
                named: named.number,
                found: self.snapshot.record.number,
            });
        }
        let record = &self.snapshot.record;
        if self.zetas.len() as u64 != record.count {
            return Err(SnapshotBundleError::RootMismatch {
                number: record.number,
                what: "count",
            });
        }
        let set = RevocationSet::from_sorted(&self.zetas).map_err(|e| match e {
            dgsp_core::revocation::SetError::NotSorted { index } => {
                SnapshotBundleError::NotSorted(index as u64)
            }
            #[allow(unreachable_patterns)]
            other => SnapshotBundleError::Malformed(other.to_string()),
        })?;
        if set.root() != record.root {
            return Err(SnapshotBundleError::RootMismatch {
                number: record.number,
                what: "root",
            });
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_round_trip() {
        for (n, p) in [(1, "snapshot/001"), (1234067, "snapshot/x001/x234/067")] {
            assert_eq!(path(n), p);
            assert_eq!(parse_path(p), Ok(n));
        }
        for bad in [
            "snapshot/1",
            "snapshot/001.p/3",
            "tile/001",
            "snapshot/x000/001",
        ] {
            assert!(parse_path(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn decoding_refuses_damage_without_allocating_on_claims() {
        let set = RevocationSet::from_zetas([Zeta([3; 16]), Zeta([1; 16])]);
        let record = dgsp_core::revocation::SnapshotRecord::genesis([1; 32], 5, 2, set.root(), 7);
        let s = SignedSnapshot {
            record,
            signature: vec![9; 10],
        };
        let b = SnapshotBundle::encode(&s, &set);
        let d = SnapshotBundle::decode(&b).unwrap();
        assert_eq!(d.snapshot, s);
        assert_eq!(d.zetas, vec![Zeta([1; 16]), Zeta([3; 16])]);
        for cut in [0, 7, 11, 20, b.len() - 17, b.len() - 1] {
            assert!(SnapshotBundle::decode(&b[..cut]).is_err(), "cut at {cut}");
        }
        let mut long = b.clone();
        long.push(0);
        assert!(SnapshotBundle::decode(&long).is_err());
        let mut huge = b.clone();
        let at = b.len() - 32 - 8;
        huge[at..at + 8].copy_from_slice(&u64::MAX.to_be_bytes());
        assert!(SnapshotBundle::decode(&huge).is_err());
    }
}
