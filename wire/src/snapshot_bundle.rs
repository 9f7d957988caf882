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
//!
//! A bundle can be 1 GiB, so a reader checks its head first: [`Header::decode`] reads the
//! signed snapshot and the count from the first bytes (at most [`MAX_HEADER_BYTES`]), and
//! [`Header::check`] verifies the signature, that the checkpoint names the record and that the
//! count is the record's, before anything else of the bundle is read; its length
//! ([`Header::bundle_len`]) then bounds the read. [`SnapshotBundle::decode`] checks the
//! count against the record before it decodes a zeta.

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

/// The most bytes before a bundle's zetas: magic, length, the largest signed snapshot (the
/// record and a signature of at most [`dgsp_core::revocation::MAX_SIGNATURE_LEN`] bytes with
/// its length), count.
pub const MAX_HEADER_BYTES: usize = 8
    + 4
    + dgsp_core::revocation::RECORD_LEN
    + 4
    + dgsp_core::revocation::MAX_SIGNATURE_LEN as usize
    + 8;

/// What a bundle says before its zetas (not yet verified).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The signed snapshot.
    pub snapshot: SignedSnapshot,
    /// The number of zetas the bundle declares.
    pub count: u64,
    /// Bytes of the header: where the zetas begin.
    pub len: usize,
}

impl Header {
    /// The header at the start of `prefix` (the first bytes of a bundle, as many as were
    /// read): `Ok(None)` when `prefix` ends before it does, an error as soon as what it holds
    /// cannot start a bundle.
    pub fn decode(prefix: &[u8]) -> Result<Option<Header>, SnapshotBundleError> {
        let bad = |s: String| SnapshotBundleError::Malformed(s);
        let magic = &prefix[..prefix.len().min(MAGIC.len())];
        if !MAGIC.starts_with(magic) {
            return Err(bad("it does not start with DGSPSNB1".into()));
        }
        let Some(len) = prefix.get(8..12) else {
            return Ok(None);
        };
        let len = u32::from_be_bytes(len.try_into().expect("4 bytes")) as usize;
        if len > MAX_HEADER_BYTES - 20 {
            return Err(bad(format!(
                "it claims a signed snapshot of {len} bytes, more than a signed snapshot can be"
            )));
        }
        let Some(signed) = prefix.get(12..12 + len) else {
            return Ok(None);
        };
        let Some(count) = prefix.get(12 + len..20 + len) else {
            return Ok(None);
        };
        let snapshot = SignedSnapshot::from_bytes(signed)
            .map_err(|e| bad(format!("the signed snapshot: {e}")))?;
        Ok(Some(Header {
            snapshot,
            count: u64::from_be_bytes(count.try_into().expect("8 bytes")),
            len: 20 + len,
        }))
    }

    /// Checks what the header says before the zetas are read: the snapshot verifies under
    /// `group`, `named` (the checkpoint's `snapshot` line) names its record, and the count
    /// it declares is the record's signed count.
    pub fn check(
        &self,
        group: &ManagerPublicKey,
        named: &SnapshotRef,
    ) -> Result<(), SnapshotBundleError> {
        self.snapshot
            .verify(group)
            .map_err(|e| SnapshotBundleError::Signature(e.to_string()))?;
        if !named.names(&self.snapshot.record) {
            return Err(SnapshotBundleError::NotNamed {
                named: named.number,
                found: self.snapshot.record.number,
            });
        }
        self.check_count()
    }

    /// The declared count is the signed record's.
    fn check_count(&self) -> Result<(), SnapshotBundleError> {
        let record = &self.snapshot.record;
        if self.count != record.count {
            return Err(SnapshotBundleError::CountMismatch {
                number: record.number,
                declared: self.count,
                signed: record.count,
            });
        }
        Ok(())
    }

    /// The length of the whole bundle this header begins: the header and 16 bytes a zeta
    /// (`None` past `u64`).
    pub fn bundle_len(&self) -> Option<u64> {
        self.count
            .checked_mul(16)
            .and_then(|z| z.checked_add(self.len as u64))
    }
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
    /// The bundle declares another number of zetas than its signed record counts.
    #[error("it declares {declared} zetas, snapshot {number}'s signed record counts {signed}")]
    CountMismatch {
        /// snapshot number
        number: u64,
        /// the count the bundle declares
        declared: u64,
        /// the record's signed count
        signed: u64,
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

    /// Decodes a bundle. Lengths are checked against the bytes held, and the declared count
    /// against the signed record's ([`SnapshotBundleError::CountMismatch`]), before anything
    /// is allocated on their claim.
    pub fn decode(bytes: &[u8]) -> Result<Self, SnapshotBundleError> {
        let bad = |s: String| SnapshotBundleError::Malformed(s);
        let header = Header::decode(bytes)?
            .ok_or_else(|| bad(format!("it ends inside its header ({} bytes)", bytes.len())))?;
        header.check_count()?;
        let rest = &bytes[header.len..];
        if header.count.checked_mul(16) != Some(rest.len() as u64) {
            return Err(bad(format!(
                "it claims {} zetas, and holds {} bytes of zetas",
                header.count,
                rest.len()
            )));
        }
        let zetas = rest
            .chunks_exact(16)
            .map(|c| Zeta(c.try_into().expect("16 bytes")))
            .collect();
        Ok(SnapshotBundle {
            snapshot: header.snapshot,
            zetas,
        })
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

    /// A snapshot of two zetas (its signature not checked here) and its set.
    fn two_zetas() -> (SignedSnapshot, RevocationSet) {
        let set = RevocationSet::from_zetas([Zeta([3; 16]), Zeta([1; 16])]);
        let record = dgsp_core::revocation::SnapshotRecord::genesis([1; 32], 5, 2, set.root(), 7);
        let s = SignedSnapshot {
            record,
            signature: vec![9; 10],
        };
        (s, set)
    }

    #[test]
    fn decoding_refuses_damage_without_allocating_on_claims() {
        let (s, set) = two_zetas();
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

    /// A bundle declaring another count than its signed record is refused before a zeta is
    /// decoded: from its header alone (the first bytes), and by `decode` whatever follows.
    #[test]
    fn a_count_other_than_the_records_is_refused_from_the_header() {
        let (s, set) = two_zetas();
        let good = SnapshotBundle::encode(&s, &set);
        let header_len = good.len() - 32;
        // The header is found in any prefix that holds it, and not before.
        for cut in [0, 3, 8, 11, 12, header_len - 1] {
            assert_eq!(Header::decode(&good[..cut]), Ok(None), "cut at {cut}");
        }
        let h = Header::decode(&good[..header_len]).unwrap().unwrap();
        assert_eq!(
            (h.count, h.len, h.bundle_len()),
            (2, header_len, Some(good.len() as u64))
        );
        assert_eq!(h.check_count(), Ok(()));
        assert!(
            Header::decode(b"DGSPXXXX").is_err(),
            "another magic, refused at once"
        );
        assert!(Header::decode(b"NOT").is_err());
        // A signed snapshot length no snapshot can have is refused before it is read.
        let mut long = good[..12].to_vec();
        long[8..12].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(Header::decode(&long).is_err());

        // Declared 2^26 zetas (1 GiB of them), the record signs 2: the header says so.
        let mut lying = good[..header_len].to_vec();
        lying[header_len - 8..].copy_from_slice(&(1u64 << 26).to_be_bytes());
        let h = Header::decode(&lying).unwrap().unwrap();
        assert_eq!(
            h.check_count(),
            Err(SnapshotBundleError::CountMismatch {
                number: 1,
                declared: 1 << 26,
                signed: 2
            })
        );
        // And a whole bundle consistent with its declared count but not with its record
        // (three zetas, the record counts two) is refused by decode, not decoded.
        let mut three = good[..header_len].to_vec();
        three[header_len - 8..].copy_from_slice(&3u64.to_be_bytes());
        three.extend_from_slice(&good[header_len..]);
        three.extend_from_slice(&[5; 16]);
        assert!(matches!(
            SnapshotBundle::decode(&three),
            Err(SnapshotBundleError::CountMismatch {
                declared: 3,
                signed: 2,
                ..
            })
        ));
    }
}
