//! mixed: members revoked while their signatures are being verified, and the checks that
//! every answer about them turned `revoked` within the bound and never turned back.
//!
//! One user revokes the doomed members one after another through the registry's admin API
//! (`POST /admin/v1/members/{id}/revoke`), recording when it sent each revocation, when the
//! registry acknowledged it and its log entry. The other users verify a stream in which one
//! request in four carries a doomed member's signature, recording when each was sent and
//! answered, its `status` and the log position its evidence covers
//! (`freshness.applied_seq`). After the run, [`analyse`] holds every answer to these rules:
//!
//! 1. a doomed member's signature answers `ok` or `revoked`, nothing else;
//! 2. an answer whose evidence covers the revocation's entry says `revoked`, and an answer
//!    that says `revoked` has evidence covering it (the answer is checkable);
//! 3. an answer to a request sent more than the bound after the registry acknowledged the
//!    revocation says `revoked`;
//! 4. never back: once any answer about a member said `revoked`, every request sent after
//!    that answer arrived says `revoked`.
//!
//! Rules 1 and 2 are also checked as each answer arrives, so that goose counts a breach as
//! a failed request; 3 and 4 need the whole run.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use goose::prelude::*;

use super::fixtures::{self, Doomed};
use super::requests::{judge_answer, post};

/// How many breaches are listed in words (all are counted).
const LISTED: usize = 20;

/// A revocation the run sent, recorded before the request goes out: if the request is
/// dropped or fails after the registry committed it, the member is still known to be
/// (possibly) revoked, and its `revoked` answers are not taken for a breach.
#[derive(Debug, Clone, Copy)]
struct Revocation {
    member: u64,
    sent_us: u64,
    /// The acknowledgement: when it arrived and the revocation's log entry.
    ack: Option<Ack>,
}

/// A registry's acknowledgement of a revocation.
#[derive(Debug, Clone, Copy)]
struct Ack {
    at_us: u64,
    seq: u64,
}

/// An answer about a doomed member.
#[derive(Debug, Clone)]
struct Answer {
    member: u64,
    sent_us: u64,
    recv_us: u64,
    status: String,
    applied_seq: u64,
}

static NEXT: AtomicUsize = AtomicUsize::new(0);
static REVOCATIONS: Mutex<Vec<Revocation>> = Mutex::new(Vec::new());
static ANSWERS: Mutex<Vec<Answer>> = Mutex::new(Vec::new());

/// Wall-clock microseconds since the Unix epoch (the same clock for every record).
fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// The records survive a panicking holder: they are only ever appended to or completed.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn revocation_of(member: u64) -> Option<Revocation> {
    lock(&REVOCATIONS)
        .iter()
        .find(|r| r.member == member)
        .copied()
}

/// The revoker's transaction: revokes the next doomed member (nothing once all are).
pub async fn revoke_next(user: &mut GooseUser) -> TransactionResult {
    let p = fixtures::get();
    let k = NEXT.fetch_add(1, Ordering::Relaxed);
    let Some(&member) = p.doomed_ids.get(k) else {
        return Ok(());
    };
    let url = format!("{}/admin/v1/members/{member}/revoke", p.registry);
    let sent_us = now_us();
    lock(&REVOCATIONS).push(Revocation {
        member,
        sent_us,
        ack: None,
    });
    let name = "registry /admin/v1/members/{id}/revoke";
    if let Some((mut request, v)) = post(
        user,
        name,
        &url,
        "application/json",
        b"{}",
        p.admin_token.as_deref(),
    )
    .await?
    {
        let at_us = now_us();
        match v["seq"].as_u64() {
            Some(seq) => {
                if let Some(r) = lock(&REVOCATIONS).iter_mut().find(|r| r.member == member) {
                    r.ack = Some(Ack { at_us, seq });
                }
            }
            None => judge_answer(user, &mut request, Some("no `seq` in the answer".into()))?,
        }
    }
    Ok(())
}

/// A verifier's request about a doomed member.
pub async fn verify_doomed(user: &mut GooseUser, d: &Doomed) -> TransactionResult {
    let sent_us = now_us();
    let name = "/v1/verify (member revoked during the run)";
    let Some((mut request, v)) =
        post(user, name, "/v1/verify", "application/json", d.body, None).await?
    else {
        return Ok(());
    };
    let answer = Answer {
        member: d.member,
        sent_us,
        recv_us: now_us(),
        status: v["status"].as_str().unwrap_or("(none)").to_owned(),
        applied_seq: v["freshness"]["applied_seq"].as_u64().unwrap_or(0),
    };
    let wrong = breach_now(&answer, revocation_of(d.member));
    lock(&ANSWERS).push(answer);
    judge_answer(user, &mut request, wrong)
}

/// Rules 1 and 2 for one answer, with what is known of its member's revocation (rule 2
/// needs the acknowledged log entry).
fn breach_now(a: &Answer, r: Option<Revocation>) -> Option<String> {
    match (a.status.as_str(), r.and_then(|r| r.ack)) {
        ("ok", Some(ack)) if a.applied_seq >= ack.seq => Some(format!(
            "ok although its evidence covers the revocation (applied_seq {} >= entry {})",
            a.applied_seq, ack.seq
        )),
        ("revoked", Some(ack)) if a.applied_seq < ack.seq => Some(format!(
            "revoked with evidence that does not cover the revocation (applied_seq {} < entry {})",
            a.applied_seq, ack.seq
        )),
        ("ok" | "revoked", _) => None,
        (other, _) => Some(format!("status {other}, expected ok or revoked")),
    }
}

/// What the mixed run showed.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct MixedAnalysis {
    /// The bound of rule 3, ms.
    pub bound_ms: u64,
    /// Members the run revoked (acknowledged by the registry).
    pub revocations: usize,
    /// Revocations sent but never acknowledged (failed or cut off at the end of the run):
    /// their members may or may not be revoked, so only rules 1 and 4 hold them.
    #[serde(default)]
    pub unacknowledged: usize,
    /// Time from sending a revocation to the registry's acknowledgement, ms: median, max.
    pub revoke_ack_ms: [f64; 2],
    /// Answers about doomed members.
    pub answers: usize,
    /// Of which `revoked`.
    pub answers_revoked: usize,
    /// Answers checked by rule 3 (sent more than the bound after the acknowledgement).
    pub answers_past_bound: usize,
    /// Per revoked member, from the registry's acknowledgement to the first `revoked`
    /// answer's arrival, ms: median, 90th percentile, max (it includes the wait for the
    /// next request about that member).
    pub propagation_ms: [f64; 3],
    /// Revoked members never answered `revoked` in the run (each is a breach of rule 3
    /// when it was asked about past its bound, counted there).
    pub never_seen_revoked: usize,
    /// Breaches of the four rules.
    pub breaches: usize,
    /// The first breaches, in words.
    pub listed: Vec<String>,
}

/// Holds the recorded answers to the four rules.
pub fn analyse(bound_ms: u64) -> MixedAnalysis {
    let revs = lock(&REVOCATIONS).clone();
    let answers = lock(&ANSWERS).clone();
    judge(&revs, &answers, bound_ms)
}

fn judge(revs: &[Revocation], answers: &[Answer], bound_ms: u64) -> MixedAnalysis {
    let by_member: HashMap<u64, Revocation> = revs.iter().map(|r| (r.member, *r)).collect();
    let bound_us = bound_ms * 1000;
    let mut listed = Vec::new();
    let mut breaches = 0usize;
    let mut breach = |why: String| {
        breaches += 1;
        if listed.len() < LISTED {
            listed.push(why);
        }
    };
    // First `revoked` answer's arrival per member.
    let mut first_revoked: HashMap<u64, u64> = HashMap::new();
    for a in answers.iter().filter(|a| a.status == "revoked") {
        let e = first_revoked.entry(a.member).or_insert(a.recv_us);
        *e = (*e).min(a.recv_us);
    }
    let mut past_bound = 0;
    for a in answers {
        let r = by_member.get(&a.member).copied();
        if let Some(why) = breach_now(a, r) {
            breach(format!("member {}: {why}", a.member));
            continue;
        }
        match r {
            None if a.status == "revoked" => breach(format!(
                "member {}: revoked, but the run never revoked it (or its revocation failed)",
                a.member
            )),
            Some(Revocation { ack: Some(ack), .. }) if a.sent_us > ack.at_us + bound_us => {
                past_bound += 1;
                if a.status != "revoked" {
                    breach(format!(
                        "member {}: still ok {} ms after the registry acknowledged its revocation (bound {bound_ms} ms)",
                        a.member,
                        (a.sent_us - ack.at_us) / 1000
                    ));
                }
            }
            _ => {}
        }
        if let Some(&t) = first_revoked.get(&a.member) {
            if a.status == "ok" && a.sent_us > t {
                breach(format!(
                    "member {}: ok again {} ms after an answer said revoked",
                    a.member,
                    (a.sent_us - t) / 1000
                ));
            }
        }
    }
    let acked: Vec<(Revocation, Ack)> = revs
        .iter()
        .filter_map(|r| r.ack.map(|ack| (*r, ack)))
        .collect();
    let mut acks: Vec<f64> = acked
        .iter()
        .map(|(r, ack)| ack.at_us.saturating_sub(r.sent_us) as f64 / 1000.0)
        .collect();
    let mut prop: Vec<f64> = acked
        .iter()
        .filter_map(|(r, ack)| {
            first_revoked
                .get(&r.member)
                .map(|&t| t.saturating_sub(ack.at_us) as f64 / 1000.0)
        })
        .collect();
    MixedAnalysis {
        bound_ms,
        revocations: acked.len(),
        unacknowledged: revs.len() - acked.len(),
        revoke_ack_ms: [quantile(&mut acks, 0.5), quantile(&mut acks, 1.0)],
        answers: answers.len(),
        answers_revoked: answers.iter().filter(|a| a.status == "revoked").count(),
        answers_past_bound: past_bound,
        propagation_ms: [
            quantile(&mut prop, 0.5),
            quantile(&mut prop, 0.9),
            quantile(&mut prop, 1.0),
        ],
        never_seen_revoked: acked
            .iter()
            .filter(|(r, _)| !first_revoked.contains_key(&r.member))
            .count(),
        breaches,
        listed,
    }
}

/// The `q` quantile (nearest rank) of `v`, NaN when empty.
fn quantile(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    v[i]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rev(member: u64, ack_us: u64, seq: u64) -> Revocation {
        Revocation {
            member,
            sent_us: ack_us - 1_000,
            ack: Some(Ack { at_us: ack_us, seq }),
        }
    }

    fn ans(member: u64, sent_us: u64, status: &str, applied_seq: u64) -> Answer {
        Answer {
            member,
            sent_us,
            recv_us: sent_us + 2_000,
            status: status.into(),
            applied_seq,
        }
    }

    #[test]
    fn a_clean_run_has_no_breach() {
        let revs = [rev(1, 10_000_000, 50)];
        let answers = [
            ans(1, 9_000_000, "ok", 40),
            ans(1, 10_100_000, "ok", 49),
            ans(1, 10_400_000, "revoked", 50),
            ans(1, 16_000_000, "revoked", 51),
        ];
        let m = judge(&revs, &answers, 5_000);
        assert_eq!(m.breaches, 0, "{:?}", m.listed);
        assert_eq!(m.answers_past_bound, 1);
        assert_eq!(m.never_seen_revoked, 0);
        assert!((m.propagation_ms[0] - 402.0).abs() < 1e-9);
    }

    #[test]
    fn each_rule_catches_its_breach() {
        let revs = [rev(1, 10_000_000, 50)];
        let cases = [
            (ans(1, 10_100_000, "stale", 49), "status stale"),
            (ans(1, 10_100_000, "ok", 50), "evidence covers"),
            (ans(1, 10_100_000, "revoked", 49), "does not cover"),
            (ans(2, 10_100_000, "revoked", 60), "never revoked"),
            (ans(1, 15_000_001, "ok", 49), "still ok"),
        ];
        for (a, what) in cases {
            let m = judge(&revs, std::slice::from_ref(&a), 5_000);
            assert_eq!(m.breaches, 1, "{what}: {:?}", m.listed);
            assert!(m.listed[0].contains(what), "{what}: {:?}", m.listed);
        }
        // A revocation sent but never acknowledged: its revoked answers are no breach, and
        // it does not count as a revocation the run made.
        let pending = [Revocation {
            member: 3,
            sent_us: 10_000_000,
            ack: None,
        }];
        let m = judge(&pending, &[ans(3, 10_100_000, "revoked", 60)], 5_000);
        assert_eq!(
            (m.breaches, m.revocations, m.unacknowledged),
            (0, 0, 1),
            "{:?}",
            m.listed
        );
        // Never back: an ok sent after a revoked answer arrived.
        let answers = [
            ans(1, 10_200_000, "revoked", 50),
            ans(1, 10_300_000, "ok", 49),
        ];
        let m = judge(&revs, &answers, 5_000);
        assert!(
            m.listed.iter().any(|l| l.contains("ok again")),
            "{:?}",
            m.listed
        );
    }
}
