//! DGSP's cost against group size. One in-memory PLM (`dgsp_core::InMemoryPlm`, the
//! reference implementation of the `Plm` trait) is filled with real members, one size after
//! the other; at each size a member joins last and signs (so its id is the largest), and the
//! operations are timed:
//!
//! - verify and open: they never read the PLM (the signature carries no group-size-dependent
//!   data; open decrypts the zeta to `(id, counter)`), so they must stay flat; each is timed
//!   alternately with the same operation in a group of one member (`measure::paired`), so
//!   their ratio does not depend on how busy the machine was at that moment;
//! - the manager's PLM bookkeeping for one issuance (look the member up, reserve a counter)
//!   and a whole issuance of one certificate;
//! - from 2^10 members on, a join and a revocation (a member holding one certificate):
//!   these add members while they are timed, at most `size / 32` calls each, which the table
//!   shows as "members when timed".

use std::time::Instant;

use dgsp_core::{InMemoryPlm, InMemoryRevokedList, Manager, MemberKey, ParamSet, Plm};
use rand_core::OsRng;

use crate::error::CompareError;
use crate::measure::{self, Budget};
use crate::results::{Extra, Sweep, SweepPoint};
use crate::schemes::MESSAGE;

/// Operation names of the group-size sweep.
pub mod op {
    /// Verification of a signature by the member with the last id.
    pub const VERIFY: &str = "verify";
    /// Verification in a group of one member, timed alternately with [`VERIFY`].
    pub const VERIFY_BASE: &str = "verify, 1-member group (timed alternately)";
    /// Opening it.
    pub const OPEN: &str = "open";
    /// Opening in a group of one member, timed alternately with [`OPEN`].
    pub const OPEN_BASE: &str = "open, 1-member group (timed alternately)";
    /// Member lookup and counter reservation in the PLM.
    pub const PLM: &str = "PLM lookup + counter reservation (issuance bookkeeping)";
    /// A whole issuance of one certificate.
    pub const ISSUE: &str = "issue 1 certificate";
    /// Join.
    pub const JOIN: &str = "join";
    /// Revoke a member that holds one certificate.
    pub const REVOKE: &str = "revoke (member with 1 certificate)";
}

/// Value names of the group-size sweep.
pub mod value {
    /// Members in the PLM when the point was timed.
    pub const MEMBERS: &str = "members";
    /// Resident memory of the process above the start of the sweep, per member.
    pub const BYTES_PER_MEMBER: &str = "resident bytes per member";
    /// Time to add the members of this step, per member (plain `Plm::add_member`).
    pub const FILL_NS: &str = "fill ns per member";
}

/// Join and revoke are timed only from this size on ...
pub const GROWING_FROM: u64 = 1 << 10;
/// ... with at most `size / GROWTH_DIVISOR` calls each, so that they add at most 1/8 of the
/// group (warm-up included) to what later points hold.
pub const GROWTH_DIVISOR: u64 = 32;

/// The budget for an operation that grows the group while it is timed.
fn growing(budget: &Budget, size: u64) -> Budget {
    Budget {
        warm_up: std::time::Duration::ZERO,
        max_calls: (size / GROWTH_DIVISOR) as usize,
        ..*budget
    }
}

/// Runs the sweep over `sizes` (increasing) on `set`.
pub fn sweep(set: ParamSet, sizes: &[u64], budget: &Budget) -> Result<Sweep, CompareError> {
    // The baseline: a group of one member, verified and opened alternately with each point.
    let base = crate::schemes::dgsp::Fixture::new(set)?;
    let base_group = base.manager.public_key();
    let manager = Manager::generate(set, &mut OsRng);
    let group = manager.public_key();
    let plm = InMemoryPlm::new();
    let revoked = InMemoryRevokedList::new();
    let scratch = InMemoryRevokedList::new();
    let rss_start = crate::procfs::rss_bytes();
    let mut points = Vec::new();
    let (mut joins, mut revokes) = (0u64, 0u64);
    for &size in sizes {
        // Fill with plain members up to one below the size, then the signer joins last.
        let before = plm.len()?;
        let t = Instant::now();
        for i in before..size.saturating_sub(1) {
            plm.add_member(&format!("m{i}"))?;
        }
        let filled = size.saturating_sub(1).saturating_sub(before);
        let fill_ns = if filled > 0 {
            t.elapsed().as_nanos() as f64 / filled as f64
        } else {
            0.0
        };
        let (id, cid_star) = manager.join(&plm, &format!("signer{size}"))?;
        let members = plm.len()?;
        let per_member = match (rss_start, crate::procfs::rss_bytes()) {
            (Some(a), Some(b)) if members > 0 => b.saturating_sub(a) as f64 / members as f64,
            _ => 0.0,
        };

        let member = MemberKey::generate(set, id, cid_star, &mut OsRng);
        let item = member.csr(1, &mut OsRng).pop().expect("one item");
        let wots_pk = *item.wots_pk();
        let cert = manager
            .issue(&plm, id, member.cid_star(), &[wots_pk])?
            .remove(0);
        let sig = member.import(group, item, &cert)?.sign(MESSAGE);
        group.verify(MESSAGE, &sig, &revoked)?;
        if manager.open(MESSAGE, &sig)?.id != id {
            return Err(CompareError::SelfCheck(format!(
                "DGSP {set} open at {size}"
            )));
        }

        let (verify_base, verify) = measure::paired(
            budget,
            || base_group.verify(MESSAGE, &base.signature, &base.revoked),
            || group.verify(MESSAGE, &sig, &revoked),
        );
        let (open_base, open) = measure::paired(
            budget,
            || base.manager.open(MESSAGE, &base.signature),
            || manager.open(MESSAGE, &sig),
        );
        let bookkeeping = measure::simple(budget, || {
            plm.member(id).and_then(|_| plm.reserve_counters(id, 1))
        });
        let issue = measure::simple(budget, || {
            manager.issue(&plm, id, member.cid_star(), &[wots_pk])
        });
        let mut ops = vec![
            (op::VERIFY, verify),
            (op::VERIFY_BASE, verify_base),
            (op::OPEN, open),
            (op::OPEN_BASE, open_base),
            (op::PLM, bookkeeping),
            (op::ISSUE, issue),
        ];
        if size >= GROWING_FROM {
            let small = growing(budget, size);
            let join = measure::batched(
                &small,
                || {
                    joins += 1;
                    format!("j{joins}")
                },
                |name| manager.join(&plm, &name),
            );
            let mut setup_error = None;
            let revoke = measure::batched(
                &small,
                || {
                    revokes += 1;
                    let r = plm
                        .add_member(&format!("r{revokes}"))
                        .and_then(|rid| plm.reserve_counters(rid, 1).map(|_| rid));
                    match r {
                        Ok(rid) => Some(rid),
                        Err(e) => {
                            setup_error.get_or_insert(e);
                            None
                        }
                    }
                },
                |rid| rid.map(|rid| manager.revoke(&plm, &scratch, rid)),
            );
            if let Some(e) = setup_error {
                return Err(e.into());
            }
            ops.extend([(op::JOIN, join), (op::REVOKE, revoke)]);
        }
        points.push(SweepPoint {
            at: size,
            ops: ops
                .into_iter()
                .map(|(name, estimate)| Extra {
                    name: name.into(),
                    estimate,
                })
                .collect(),
            values: vec![
                (value::MEMBERS.into(), members as f64),
                (value::BYTES_PER_MEMBER.into(), per_member),
                (value::FILL_NS.into(), fill_ns),
            ],
        });
    }
    let grown = plm
        .len()?
        .saturating_sub(sizes.last().copied().unwrap_or(0));
    Ok(Sweep {
        params: set.name().into(),
        points,
        notes: vec![
            format!(
                "one dgsp_core::InMemoryPlm filled with real members (Plm::add_member) up to each \
                 size; the signer joins last (the largest id); from 2^10 members on, join and \
                 revoke are timed with at most size/32 calls each, which add members (the group \
                 ended {grown} members above its last size)"
            ),
            "verify and open do not read the PLM: the zeta in a signature decrypts to (id, \
             counter) under the manager's AES key"
                .into(),
        ],
    })
}
