//! The member ledger rebuilt from the private payloads: joins, counter ranges, revocations.
//!
//! These checks need every private payload from entry 1 on (a missing join would make
//! every later issuance to that member look wrong), so after the first entry whose private
//! part is missing they are skipped and counted as skipped.

use std::collections::{HashMap, HashSet};

use dgsp_core::MemberId;

use super::findings::Findings;
use super::violation::{Skipped, ViolationKind};

#[derive(Default)]
struct Member {
    /// One past the highest counter value issued (counters are contiguous from 0).
    next: u64,
    /// The entry that revoked the member (its first part).
    revoked_at: Option<u64>,
    /// Zetas listed so far by the parts of its revocation.
    revoked_zetas: u64,
}

/// The ledger.
#[derive(Default)]
pub(crate) struct Members {
    members: HashMap<MemberId, Member>,
    usernames: HashSet<String>,
    /// False once a private payload was missing.
    incomplete: bool,
    /// Issuances without WOTS+ key digests: how many, and the first.
    pub(crate) undigested: (u64, Option<u64>),
}

impl Members {
    /// An entry whose private part is missing: member checks stop here.
    pub(crate) fn redacted(&mut self, out: &mut Findings) {
        self.incomplete = true;
        out.skip(Skipped::MemberChecks);
    }

    /// Whether the member checks can still be made (counts a skip if not).
    fn complete(&self, out: &mut Findings) -> bool {
        if self.incomplete {
            out.skip(Skipped::MemberChecks);
        }
        !self.incomplete
    }

    /// `member_joined`: a new id and a new username.
    pub(crate) fn joined(&mut self, seq: u64, id: MemberId, username: &str, out: &mut Findings) {
        if !self.complete(out) {
            return;
        }
        if self.members.contains_key(&id) {
            out.violation(
                seq,
                ViolationKind::DuplicateMember,
                format!("member {id} joins a second time"),
            );
            return;
        }
        if !self.usernames.insert(username.to_owned()) {
            out.violation(
                seq,
                ViolationKind::DuplicateMember,
                format!("username {username:?} joins a second time (as member {id})"),
            );
        }
        self.members.insert(id, Member::default());
    }

    /// `certificates_issued`: to a joined, unrevoked member, continuing its counter range.
    pub(crate) fn issued(
        &mut self,
        seq: u64,
        id: MemberId,
        first: u64,
        count: u64,
        digests: usize,
        out: &mut Findings,
    ) {
        if !self.complete(out) {
            return;
        }
        if digests == 0 {
            self.undigested.0 += 1;
            self.undigested.1.get_or_insert(seq);
        } else if digests as u64 != count {
            out.violation(
                seq,
                ViolationKind::IssueDigests,
                format!("{count} certificates but {digests} WOTS+ key digests"),
            );
        }
        let Some(end) = first.checked_add(count) else {
            out.violation(
                seq,
                ViolationKind::Malformed,
                format!("counter range {first} + {count} overflows"),
            );
            return;
        };
        let Some(m) = self.members.get_mut(&id) else {
            out.violation(
                seq,
                ViolationKind::UnknownMember,
                format!("certificates issued to member {id}, who never joined"),
            );
            return;
        };
        if let Some(at) = m.revoked_at {
            out.violation(
                seq,
                ViolationKind::IssuedToRevoked,
                format!("{count} certificates issued to member {id}, revoked at entry {at}"),
            );
        }
        if first < m.next {
            out.violation(
                seq,
                ViolationKind::CounterReused,
                format!(
                    "member {id}: counters {first}..{} issued again (already issued up to {})",
                    end.min(m.next),
                    m.next
                ),
            );
        } else if first > m.next {
            out.violation(
                seq,
                ViolationKind::CounterGap,
                format!(
                    "member {id}: issued from counter {first}, the next unissued counter is {}",
                    m.next
                ),
            );
        }
        m.next = m.next.max(end);
    }

    /// The private part of `member_revoked`: a joined member, revoked once, with one zeta
    /// per counter value issued (`counter` and the number of zetas both equal that).
    pub(crate) fn revoked(
        &mut self,
        seq: u64,
        id: MemberId,
        (counter, first): (u64, u64),
        zetas: usize,
        out: &mut Findings,
    ) {
        if !self.complete(out) {
            return;
        }
        let Some(m) = self.members.get_mut(&id) else {
            out.violation(
                seq,
                ViolationKind::UnknownMember,
                format!("member {id} revoked but never joined"),
            );
            return;
        };
        let zetas = zetas as u64;
        if first > 0 {
            // A later part of a revocation written in parts (`Event::revocation`): it must
            // continue the zetas listed so far, for the same count.
            if m.revoked_at.is_none() || first != m.revoked_zetas || counter != m.next {
                out.violation(
                    seq,
                    ViolationKind::RevocationCount,
                    format!(
                        "member {id}: a revocation part from counter {first} (counter {counter}) does not continue the {} zetas listed so far of the {} certificates issued",
                        m.revoked_zetas, m.next
                    ),
                );
                return;
            }
            m.revoked_zetas += zetas;
            if m.revoked_zetas > counter {
                out.violation(
                    seq,
                    ViolationKind::RevocationCount,
                    format!("member {id}: the revocation's parts list {} zetas, over its counter {counter}", m.revoked_zetas),
                );
            }
            return;
        }
        if let Some(at) = m.revoked_at {
            out.violation(
                seq,
                ViolationKind::DoubleRevocation,
                format!("member {id} was already revoked at entry {at}"),
            );
            return;
        }
        m.revoked_at = Some(seq);
        m.revoked_zetas = zetas;
        // A first part lists fewer zetas than its counter; the other parts follow it.
        let listed_ok = if zetas < counter {
            zetas > 0
        } else {
            zetas == m.next
        };
        if !listed_ok || counter != m.next {
            out.violation(
                seq,
                ViolationKind::RevocationCount,
                format!(
                    "member {id} was issued {} certificates; the revocation lists {zetas} zetas (counter {counter})",
                    m.next
                ),
            );
        }
    }
}
