//! DGSP's verification cost against the number of revoked zetas. One in-memory revoked list
//! (`dgsp_core::InMemoryRevokedList`, a hash set) grows through the sizes with real zetas
//! (the manager's AES encryptions of `(id, counter)` for a member holding that many
//! certificates); at each size:
//!
//! - verify of a valid signature (the list is consulted first, then WOTS+ and SPHINCS+): must
//!   stay flat; it is timed alternately with the same verification against an empty list
//!   (`measure::paired`), so their ratio does not depend on how busy the machine was;
//! - verify of a revoked signature (refused after the lookup, before any hashing);
//! - this project's addition for offline verifiers: the signed revocation snapshot's
//!   commitment (`dgsp_core::revocation::RevocationSet`) over the same zetas, a
//!   non-membership proof for the valid signature's zeta (what a gateway hands out), its size,
//!   and checking it against the snapshot's root (`verify_proof`); the commitment is built
//!   from scratch at each size (`RevocationSet::from_zetas`, one timed run). The snapshot's
//!   own signature is one SPHINCS+ verification whatever the size.

use dgsp_core::revocation::{verify_proof, Membership, RevocationSet};
use dgsp_core::{
    InMemoryPlm, InMemoryRevokedList, Manager, MemberKey, ParamSet, RevokedList, Zeta,
};
use rand_core::OsRng;

use crate::error::CompareError;
use crate::measure::{self, Budget};
use crate::results::{Extra, Sweep, SweepPoint};
use crate::schemes::MESSAGE;

/// Operation names of the revoked-list sweep.
pub mod op {
    /// Verify a valid signature.
    pub const VERIFY: &str = "verify (valid signature)";
    /// The same with an empty list, timed alternately with [`VERIFY`].
    pub const VERIFY_EMPTY: &str = "verify, empty list (timed alternately)";
    /// Verify a revoked signature (refused).
    pub const VERIFY_REVOKED: &str = "verify (revoked signature, refused)";
    /// Make a non-membership proof.
    pub const PROVE: &str = "non-membership proof: make (gateway)";
    /// Check a non-membership proof against the snapshot root.
    pub const CHECK: &str = "non-membership proof: check (offline verifier)";
}

/// Value names of the revoked-list sweep.
pub mod value {
    /// Bytes of the non-membership proof.
    pub const PROOF_BYTES: &str = "non-membership proof bytes";
    /// Seconds to build the snapshot commitment over all the zetas (one run, no interval).
    pub const COMMIT_SECONDS: &str = "snapshot commitment build seconds";
    /// The commitment's heap bytes.
    pub const COMMIT_BYTES: &str = "snapshot commitment heap bytes";
}

/// Zetas generated per chunk when growing the list.
const CHUNK: u64 = 1 << 20;

/// Runs the sweep over `counts` (increasing) on `set`.
pub fn sweep(set: ParamSet, counts: &[u64], budget: &Budget) -> Result<Sweep, CompareError> {
    let manager = Manager::generate(set, &mut OsRng);
    let group = manager.public_key();
    let plm = InMemoryPlm::new();
    let sign_as = |name: &str| -> Result<_, CompareError> {
        let (id, cid_star) = manager.join(&plm, name)?;
        let member = MemberKey::generate(set, id, cid_star, &mut OsRng);
        let item = member.csr(1, &mut OsRng).pop().expect("one item");
        let cert = manager
            .issue(&plm, id, member.cid_star(), &[*item.wots_pk()])?
            .remove(0);
        Ok(member.import(group, item, &cert)?.sign(MESSAGE))
    };
    let valid = sign_as("valid")?;
    let revoked_sig = sign_as("revoked")?;
    let (bulk, _) = manager.join(&plm, "bulk")?;

    let list = InMemoryRevokedList::new();
    let empty = InMemoryRevokedList::new();
    let mut all: Vec<Zeta> = Vec::new();
    let mut generated = 0u64; // bulk zetas inserted so far
    let mut points = Vec::new();
    for &count in counts {
        // The revoked signature's zeta is one of the `count` (from the first non-zero size).
        let bulk_target = count.saturating_sub(1);
        if count > 0 && all.is_empty() {
            all.push(*revoked_sig.zeta());
            list.insert(&all)?;
        }
        while generated < bulk_target {
            let end = (generated + CHUNK).min(bulk_target);
            let chunk = manager.zetas(bulk, generated..end);
            list.insert(&chunk)?;
            all.extend(chunk);
            generated = end;
        }
        if list.len()? != count {
            return Err(CompareError::SelfCheck(format!(
                "revoked list of {count}: holds {}",
                list.len()?
            )));
        }
        group.verify(MESSAGE, &valid, &list)?;

        let (verify_empty, verify) = measure::paired(
            budget,
            || group.verify(MESSAGE, &valid, &empty),
            || group.verify(MESSAGE, &valid, &list),
        );
        let mut ops = vec![
            Extra {
                name: op::VERIFY.into(),
                estimate: verify,
            },
            Extra {
                name: op::VERIFY_EMPTY.into(),
                estimate: verify_empty,
            },
        ];
        if count > 0 {
            if !matches!(
                group.verify(MESSAGE, &revoked_sig, &list),
                Err(dgsp_core::Error::Revoked)
            ) {
                return Err(CompareError::SelfCheck(
                    "a revoked signature verified".into(),
                ));
            }
            ops.push(Extra {
                name: op::VERIFY_REVOKED.into(),
                estimate: measure::simple(budget, || group.verify(MESSAGE, &revoked_sig, &list)),
            });
        }
        let mut values = Vec::new();
        if count > 0 {
            let t = std::time::Instant::now();
            let commitment = RevocationSet::from_zetas(all.iter().copied());
            let commit_time = t.elapsed();
            if commitment.len() != count {
                return Err(CompareError::SelfCheck("snapshot commitment size".into()));
            }
            let root = commitment.root();
            let proof = commitment.prove(valid.zeta());
            if verify_proof(&root, count, valid.zeta(), &proof).ok() != Some(Membership::NotRevoked)
            {
                return Err(CompareError::SelfCheck("non-membership proof".into()));
            }
            ops.push(Extra {
                name: op::PROVE.into(),
                estimate: measure::simple(budget, || commitment.prove(valid.zeta())),
            });
            ops.push(Extra {
                name: op::CHECK.into(),
                estimate: measure::simple(budget, || {
                    verify_proof(&root, count, valid.zeta(), &proof)
                }),
            });
            values = vec![
                (value::PROOF_BYTES.into(), proof.to_bytes().len() as f64),
                (value::COMMIT_SECONDS.into(), commit_time.as_secs_f64()),
                (value::COMMIT_BYTES.into(), commitment.memory_bytes() as f64),
            ];
        }
        points.push(SweepPoint {
            at: count,
            ops,
            values,
        });
    }
    Ok(Sweep {
        params: set.name().into(),
        points,
        notes: vec![
            "revoked list: dgsp_core::InMemoryRevokedList (a HashSet of 16-byte zetas) holding \
             real zetas; the gateway's RocksDB list is not measured here"
                .into(),
            "snapshot commitment: dgsp_core::revocation::RevocationSet built from scratch over \
             the same zetas at each size (one timed run; the registry updates it incrementally, \
             docs/benchmarks.md); the signed snapshot's SPHINCS+ signature is checked once per \
             snapshot, not per signature"
                .into(),
        ],
    })
}
