//! The gateway's witness policy (`--witness-policy`, docs/witnesses.md, "Gateways"): a C2SP
//! `tlog-policy` file whose `log` line names this group's log key (the ML-DSA-44 key the
//! group key's statement at the registry's `GET /v1/log/key` names), and whose witnesses'
//! quorum must have cosigned the registry's checkpoint before the gateway takes it as fresh.
//!
//! With a policy, the registry's newest note must come with its witnessed note (the plain
//! three-line checkpoint of the same origin, size and root, signed by the log key and
//! cosigned by the witnesses), which must meet the quorum with cosignatures no older than
//! the gateway's maximum age; an answer is fresh only as of such a checkpoint, and its age is
//! also measured from its [quorum time](quorum_time): the latest time by which the policy's
//! quorum had cosigned it.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use dgsp_core::checkpoint::{origin_for, Checkpoint};
use dgsp_core::ManagerPublicKey;
use dgsp_wire::note::policy::Policy;
use dgsp_wire::note::vkey::Vkey;
use dgsp_wire::note::witnessed::{verify_witnessed, WitnessedError};

use crate::api::model::Note;

/// A witness policy the gateway demands of its registry's checkpoints.
#[derive(Clone, Debug)]
pub struct WitnessPolicy {
    policy: Policy,
}

/// The witnessed note of a checkpoint, as it met the policy when the gateway verified it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Witness {
    /// The witnessed note, as the registry served it (it goes into answers).
    pub note: Note,
    /// The log signature's timestamp (POSIX seconds).
    pub log_timestamp: u64,
    /// The policy witnesses whose cosignatures counted, with their timestamps (seconds).
    pub cosigners: Vec<(String, u64)>,
    /// The latest time (POSIX seconds) such that the cosignatures made at or after it still
    /// meet the quorum ([`quorum_time`]); `None` under `quorum none` (no witness bound).
    pub quorum_time_s: Option<u64>,
}

/// Why a witnessed note was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WitnessRefusal {
    /// The registry served no witnessed note beside its checkpoint note.
    #[error("the registry's checkpoint carries no witnessed note, and this gateway's witness policy requires one")]
    Missing,
    /// The witnessed note verifies but carries no cosignature by any witness of the policy
    /// (a registry without witnesses signs its witnessed notes with the log key alone), and
    /// the policy's quorum needs some.
    #[error("{0}")]
    Uncosigned(String),
    /// The note verifies but too few witnesses cosigned it recently enough (or the log's
    /// own signature is too old or too far ahead).
    #[error("{0}")]
    Quorum(String),
    /// The note does not verify (malformed, no or a bad log signature, a bad cosignature
    /// by a policy witness, another log) or is of another tree than the checkpoint note.
    #[error("{0}")]
    Bad(String),
}

impl WitnessRefusal {
    /// The follower's fault for this refusal of the checkpoint of `seq` entries
    /// (`unwitnessed_checkpoint`, `witness_quorum`, `bad_witnessed_checkpoint`).
    pub fn into_fault(self, seq: u64) -> crate::follower::Fault {
        use crate::follower::Fault;
        match self {
            WitnessRefusal::Missing => Fault::Unwitnessed {
                seq,
                detail: self.to_string(),
            },
            WitnessRefusal::Uncosigned(detail) => Fault::Unwitnessed { seq, detail },
            WitnessRefusal::Quorum(detail) => Fault::WitnessQuorum { seq, detail },
            WitnessRefusal::Bad(detail) => Fault::BadWitnessed { seq, detail },
        }
    }
}

impl WitnessPolicy {
    /// Parses a policy text (C2SP `tlog-policy`); errors name the line.
    pub fn parse(text: &str) -> Result<WitnessPolicy, String> {
        let policy = Policy::parse(text).map_err(|e| e.to_string())?;
        Ok(WitnessPolicy { policy })
    }

    /// Reads and parses the policy file at `path` (`--witness-policy`); errors name the file
    /// and the line.
    pub fn load(path: &Path) -> Result<WitnessPolicy, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--witness-policy {}: {e}", path.display()))?;
        WitnessPolicy::parse(&text).map_err(|e| format!("--witness-policy {}: {e}", path.display()))
    }

    /// The parsed policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The policy's keys for `group`'s log; refused if it has none (the policy is for
    /// another log).
    pub fn log_keys(&self, group: &ManagerPublicKey) -> Result<Vec<Vkey>, String> {
        let origin = origin_for(group);
        let keys: Vec<Vkey> = self.policy.log_keys(&origin).cloned().collect();
        if keys.is_empty() {
            return Err(format!(
                "the witness policy has no log line for this group's log {origin:?} (its log lines name {}): add `log <vkey>` with the vkey the registry's GET /v1/log/key names",
                self.policy
                    .logs()
                    .iter()
                    .map(|l| format!("{:?}", l.vkey.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Ok(keys)
    }

    /// Checks the group key's statement naming its log key (`GET /v1/log/key`): it must
    /// verify under `group` and name a key of the policy's `log` line for this log.
    pub fn check_statement(&self, group: &ManagerPublicKey, statement: &str) -> Result<(), String> {
        let keys = self.log_keys(group)?;
        let s = group
            .verify_log_key(statement)
            .map_err(|e| format!("the registry's log-key statement: {e}"))?;
        let named = Vkey::parse(&s.vkey).map_err(|e| {
            format!("the registry's log-key statement names a key that is not a verifier key ({e})")
        })?;
        if !keys.contains(&named) {
            return Err(format!(
                "the registry's log key (generation {}, {}) is not the key this gateway's witness policy names for the log ({}): update the policy's log line, or check which registry this is",
                s.generation,
                s.vkey,
                keys.iter()
                    .map(|k| k.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Ok(())
    }

    /// Verifies `witnessed` against the policy at `now_unix_ms` (cosignatures at most
    /// `max_age` old, when given, and at most `tolerance` ahead) and requires it to be of
    /// the same tree as `cp` (origin, size, root).
    pub fn verify(
        &self,
        witnessed: &str,
        cp: &Checkpoint,
        now_unix_ms: u64,
        max_age: Option<Duration>,
        tolerance: Duration,
    ) -> Result<Witness, WitnessRefusal> {
        let tolerance_s = tolerance.as_millis().div_ceil(1000);
        let w = verify_witnessed(
            witnessed,
            &self.policy,
            now_unix_ms / 1000,
            max_age.map(|a| a.as_secs()),
            u64::try_from(tolerance_s).unwrap_or(u64::MAX),
        )
        .map_err(|e| match e {
            WitnessedError::QuorumNotMet { ref have, ref stale }
                if have.is_empty() && stale.is_empty() =>
            {
                WitnessRefusal::Uncosigned(format!(
                    "the witnessed checkpoint carries no cosignature by a witness of this gateway's policy (a registry without witnesses signs it with its log key alone): {e}"
                ))
            }
            WitnessedError::QuorumNotMet { .. }
            | WitnessedError::StaleLogSignature { .. }
            | WitnessedError::FutureLogSignature { .. } => {
                WitnessRefusal::Quorum(format!("the witnessed checkpoint: {e}"))
            }
            e => WitnessRefusal::Bad(format!("the witnessed checkpoint: {e}")),
        })?;
        if w.origin != cp.origin || w.size != cp.size || w.root != cp.root {
            return Err(WitnessRefusal::Bad(format!(
                "the witnessed checkpoint is of another tree ({} entries, root {}) than the signed note ({} entries, root {})",
                w.size,
                hex::encode(w.root),
                cp.size,
                hex::encode(cp.root)
            )));
        }
        let quorum_time_s = quorum_time(&self.policy, &w.cosigners);
        Ok(Witness {
            note: Note::new(witnessed.to_owned()),
            log_timestamp: w.log_timestamp,
            cosigners: w.cosigners,
            quorum_time_s,
        })
    }
}

/// The quorum time of `cosigners` (policy names with their timestamps, in seconds): the
/// latest time `T` such that the cosignatures made at or after `T` still satisfy the
/// policy's quorum. `None` when the quorum needs no one (`quorum none`); 0 when the
/// cosigners do not meet it at all. Once `now - T` is over the maximum age, too few of the
/// cosignatures are recent enough and the checkpoint no longer makes a state fresh.
pub fn quorum_time(policy: &Policy, cosigners: &[(String, u64)]) -> Option<u64> {
    if policy.quorum_met(&BTreeSet::new()) {
        return None;
    }
    let mut newest_first = cosigners.to_vec();
    newest_first.sort_by_key(|c| std::cmp::Reverse(c.1));
    let mut counted = BTreeSet::new();
    for (name, ts) in newest_first {
        counted.insert(name);
        if policy.quorum_met(&counted) {
            return Some(ts);
        }
    }
    Some(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dgsp_wire::note::cosignature::MlDsaCosigner;

    fn vkey(name: &str, seed: u8) -> String {
        MlDsaCosigner::from_seed(name, &[seed; 32]).unwrap().vkey()
    }

    fn policy(groups: &str) -> Policy {
        Policy::parse(&format!(
            "log {}\nwitness a {}\nwitness b {}\nwitness c {}\n{groups}",
            vkey("dgsp/00", 1),
            vkey("a.example", 2),
            vkey("b.example", 3),
            vkey("c.example", 4),
        ))
        .unwrap()
    }

    fn cos(list: &[(&str, u64)]) -> Vec<(String, u64)> {
        list.iter().map(|(n, t)| ((*n).to_owned(), *t)).collect()
    }

    #[test]
    fn a_bad_policy_file_is_refused_naming_the_file_and_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy");
        let text = format!(
            "log {}\nwitnes a {}\nquorum none\n",
            vkey("dgsp/00", 1),
            vkey("a", 2)
        );
        std::fs::write(&path, text).unwrap();
        let err = WitnessPolicy::load(&path).unwrap_err();
        assert!(err.starts_with("--witness-policy "), "{err}");
        assert!(err.contains(&path.display().to_string()), "{err}");
        assert!(
            err.contains("policy line 2: unknown keyword \"witnes\""),
            "{err}"
        );
        assert!(WitnessPolicy::load(&dir.path().join("missing")).is_err());
    }

    #[test]
    fn the_quorum_time_is_the_oldest_cosignature_the_quorum_needs() {
        let two = policy("group two 2 a b c\nquorum two\n");
        let c = cos(&[("a", 100), ("b", 300), ("c", 200)]);
        // The two newest (b at 300, c at 200) meet 2-of-3: the quorum holds until 200 ages.
        assert_eq!(quorum_time(&two, &c), Some(200));
        assert_eq!(
            quorum_time(&two, &cos(&[("a", 100), ("b", 300)])),
            Some(100)
        );
        assert_eq!(quorum_time(&two, &cos(&[("a", 100)])), Some(0));
        let all = policy("group all3 all a b c\nquorum all3\n");
        assert_eq!(quorum_time(&all, &c), Some(100));
        let one = policy("quorum b\n");
        assert_eq!(quorum_time(&one, &c), Some(300));
        // A witness outside the quorum never delays it.
        assert_eq!(
            quorum_time(&one, &cos(&[("a", 900), ("b", 300)])),
            Some(300)
        );
        let none = policy("quorum none\n");
        assert_eq!(quorum_time(&none, &c), None);
        assert_eq!(quorum_time(&none, &[]), None);
    }

    #[test]
    fn a_note_only_the_log_key_signed_is_unwitnessed_one_short_misses_the_quorum() {
        use dgsp_wire::note::witnessed::witnessed_note;
        let log = MlDsaCosigner::from_seed("dgsp/00", &[1; 32]).unwrap();
        let a = MlDsaCosigner::from_seed("a.example", &[2; 32]).unwrap();
        let b = MlDsaCosigner::from_seed("b.example", &[3; 32]).unwrap();
        let wp = WitnessPolicy {
            policy: policy("group two 2 a b c\nquorum two\n"),
        };
        let (now_s, root) = (1_800_000_000u64, [9u8; 32]);
        let cp = Checkpoint {
            origin: "dgsp/00".into(),
            size: 5,
            root,
            time_unix_ms: Some(now_s * 1000),
            snapshot: None,
        };
        let line = |k: &MlDsaCosigner| k.cosign("dgsp/00", 5, &root, now_s).unwrap();
        let check = |cosignatures: &[String]| {
            let note = witnessed_note("dgsp/00", 5, &root, &line(&log), cosignatures);
            let max = Some(Duration::from_secs(60));
            wp.verify(&note, &cp, now_s * 1000, max, Duration::from_secs(5))
                .map_err(|r| r.into_fault(5).kind())
        };
        // What a registry without witnesses publishes: the log's signature alone.
        assert_eq!(check(&[]).unwrap_err(), "unwitnessed_checkpoint");
        assert_eq!(check(&[line(&a)]).unwrap_err(), "witness_quorum");
        let w = check(&[line(&a), line(&b)]).unwrap();
        assert_eq!(w.cosigners.len(), 2);
        // Under `quorum none` the log's signature alone is enough.
        let none = WitnessPolicy {
            policy: policy("quorum none\n"),
        };
        let note = witnessed_note("dgsp/00", 5, &root, &line(&log), &[]);
        let w = none
            .verify(&note, &cp, now_s * 1000, None, Duration::from_secs(5))
            .unwrap();
        assert!(w.cosigners.is_empty());
    }
}
