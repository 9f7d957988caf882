//! Gathering witness cosignatures (docs/witnesses.md): each checkpoint the publisher signs
//! is also signed with the group's ML-DSA-44 log key as a plain C2SP checkpoint (origin,
//! size, root), submitted to every witness of the registry's policy with the C2SP
//! `tlog-witness` protocol, and published only once the cosignatures that came back
//! satisfy the policy's quorum (as Tessera does). Without witnesses, the checkpoint is
//! signed with the log key all the same and published with the log's signature alone
//! ([`LogKey::log_signed_note`]): every checkpoint carries both signatures.
//!
//! Witnesses are asked in parallel, each with its own timeout; each one's state (the size
//! it last cosigned, its last error) lives here, in the publisher's task, never in a
//! request's future. Each witness's answer is judged on its own, by its policy key: only
//! its one line under that key that verifies over the tree counts, and anything else it
//! answers (another witness's name, junk, too many or too large lines) is its own failure,
//! reported in `/readyz` and `/metrics`, never another's. The note published carries the
//! cosignatures the quorum needs, then as many more as fit the signed-note limits, and is
//! checked with the verifiers' own rule
//! ([`dgsp_wire::note::witnessed::verify_witnessed`]) before it is published.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use dgsp_core::checkpoint::Checkpoint;
use dgsp_core::log_key::LogKeyStatement;
use dgsp_core::Manager;
use dgsp_http::clock::Clock;
use dgsp_wire::note::checkpoint_body::CheckpointBody;
use dgsp_wire::note::cosignature::{cosignature_timestamp, MlDsaCosigner};
use dgsp_wire::note::policy::Policy;
use dgsp_wire::note::signed_note::SignatureLine;
use dgsp_wire::note::witnessed::{verify_witnessed, witnessed_note};
use dgsp_witness::client::{Submitter, WitnessClient, WitnessStatus};

use crate::store::Store;

/// How far ahead of the registry's clock a witness's timestamp may be and still count.
const CLOCK_TOLERANCE_S: u64 = dgsp_core::checkpoint::DEFAULT_CLOCK_TOLERANCE_MS / 1000;

/// Default time one witness has to answer one `add-checkpoint`.
pub const DEFAULT_WITNESS_TIMEOUT: Duration = Duration::from_secs(5);

/// The group's log key: its generation, its signer and the statement binding it to the
/// group.
pub struct LogKey {
    /// Which derivation of the manager key it is (docs/witnesses.md, "Key rotation").
    pub generation: u64,
    signer: MlDsaCosigner,
    /// `log <vkey>` and `quorum none`: what the log-signed notes are checked with.
    own_policy: Policy,
    /// The group key's signed statement naming this log key (`GET /v1/log/key`).
    pub statement: String,
}

impl LogKey {
    /// Derives generation `generation` of the group's log key from the manager key and has
    /// the group key sign the statement naming it, dated `now_unix_ms`.
    pub fn derive(manager: &Manager, generation: u64, now_unix_ms: u64) -> Result<LogKey, String> {
        let origin = dgsp_core::checkpoint::origin_for(manager.public_key());
        let seed = manager.log_key_seed(generation);
        let signer =
            MlDsaCosigner::from_seed(&origin, &seed).map_err(|e| format!("the log key: {e}"))?;
        let statement = manager
            .sign_log_key(&LogKeyStatement {
                origin,
                vkey: signer.vkey(),
                generation,
                time_unix_ms: now_unix_ms,
            })
            .map_err(|e| format!("the log-key statement: {e}"))?;
        let own_policy = Policy::parse(&format!("log {}\nquorum none\n", signer.vkey()))
            .map_err(|e| format!("the log key's own policy: {e}"))?;
        Ok(LogKey {
            generation,
            signer,
            own_policy,
            statement,
        })
    }

    /// The log key's verifier key (`<origin>+<key id>+<base64(0x06 || key)>`): what a
    /// policy's `log` line and each witness's configuration name.
    pub fn vkey(&self) -> String {
        self.signer.vkey()
    }

    /// The log's signature line over `cp`'s tree (origin, size, root) as the plain C2SP
    /// checkpoint, timestamped `now_unix_s` (a `subtree/v1` cosignature with the log's own
    /// name).
    pub fn sign(&self, cp: &Checkpoint, now_unix_s: u64) -> Result<String, String> {
        self.signer
            .cosign(&cp.origin, cp.size, &cp.root, now_unix_s)
            .map_err(|e| format!("signing with the log key: {e}"))
    }

    /// The witnessed note of `cp`'s tree with the log's signature alone, no cosignatures:
    /// what a registry without witnesses publishes beside every checkpoint, so that each
    /// carries both signatures (docs/witnesses.md). Refused (never published) if the line
    /// just signed does not verify under this key.
    pub fn log_signed_note(&self, cp: &Checkpoint, now_unix_s: u64) -> Result<String, String> {
        let line = self.sign(cp, now_unix_s)?;
        let note = witnessed_note(&cp.origin, cp.size, &cp.root, &line, &[]);
        let w = verify_witnessed(&note, &self.own_policy, now_unix_s, None, 0)
            .map_err(|e| format!("the log-signed note does not verify: {e}"))?;
        if (w.origin.as_str(), w.size, w.root) != (cp.origin.as_str(), cp.size, cp.root) {
            return Err("the log-signed note names another tree than the checkpoint".into());
        }
        Ok(note)
    }
}

impl std::fmt::Debug for LogKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogKey")
            .field("generation", &self.generation)
            .field("vkey", &self.vkey())
            .finish_non_exhaustive()
    }
}

/// The registry's witnesses: its policy, its log key and one submitter per witness.
pub struct Witnesses {
    log_key: Arc<LogKey>,
    policy: Policy,
    clock: Arc<dyn Clock>,
    submitters: tokio::sync::Mutex<Vec<Submitter>>,
    /// What `/readyz` and `/metrics` show: each witness's state after the last round.
    status: Mutex<Vec<WitnessStatus>>,
    /// Witnesses of the policy without a URL: never asked (reported).
    unreachable: Vec<String>,
}

impl std::fmt::Debug for Witnesses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Witnesses")
            .field("log_key", &self.log_key)
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

impl Witnesses {
    /// The witnesses of `policy_text` (C2SP tlog-policy), for `log_key`. Refuses a policy
    /// whose `log` line does not name this log key, and one whose quorum the witnesses it
    /// gives a URL for can never meet.
    pub fn new(
        log_key: Arc<LogKey>,
        policy_text: &str,
        timeout: Duration,
        clock: Arc<dyn Clock>,
    ) -> Result<Witnesses, String> {
        let policy = Policy::parse(policy_text).map_err(|e| format!("the policy: {e}"))?;
        let vkey = log_key.vkey();
        if !policy.logs().iter().any(|l| l.vkey.to_string() == vkey) {
            return Err(format!(
                "the policy's log lines do not name this registry's log key (generation {}): \
                 add `log {vkey}` (`dgsp-registry log-key` prints it)",
                log_key.generation
            ));
        }
        let http = reqwest::Client::builder()
            .build()
            .map_err(|e| format!("the witnesses' HTTP client: {e}"))?;
        let mut submitters = Vec::new();
        let mut unreachable = Vec::new();
        for w in policy.witnesses() {
            match &w.url {
                Some(url) => {
                    let client = WitnessClient::new(&w.name, url, http.clone(), timeout)
                        .map_err(|e| format!("witness {}: {e}", w.name))?;
                    submitters.push(Submitter::with_key(client, w.vkey.clone()));
                }
                None => unreachable.push(w.name.clone()),
            }
        }
        let reachable: BTreeSet<String> = submitters
            .iter()
            .map(|s| s.client().name().to_owned())
            .collect();
        if !policy.quorum_met(&reachable) {
            return Err(format!(
                "the policy's quorum cannot be met by the witnesses it gives a URL for ({}); \
                 witnesses without one: {}",
                names(reachable.iter()),
                names(unreachable.iter())
            ));
        }
        let status = submitters.iter().map(|s| s.status().clone()).collect();
        Ok(Witnesses {
            log_key,
            policy,
            clock,
            submitters: tokio::sync::Mutex::new(submitters),
            status: Mutex::new(status),
            unreachable,
        })
    }

    /// The log key.
    pub fn log_key(&self) -> &Arc<LogKey> {
        &self.log_key
    }

    /// Each witness's state after the last round.
    pub fn status(&self) -> Vec<WitnessStatus> {
        self.status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Witnesses of the policy that are never asked (no URL).
    pub fn unreachable(&self) -> &[String] {
        &self.unreachable
    }

    /// Signs `cp`'s tree with the log key, has every witness cosign it and returns the
    /// witnessed note once the cosignatures meet the quorum; otherwise why not, witness by
    /// witness.
    ///
    /// Each witness's answer is judged on its own (its submitter keeps only its one line
    /// under its policy key that verifies over this tree): a bad answer is that witness's
    /// failure, reported in its status, and never costs another's. The timestamps are
    /// judged against the clock read after the round, so a witness that answered within
    /// its timeout counts. The note carries the cheapest set of cosignatures that meets
    /// the quorum, then as many of the others as fit the signed-note limits, in the
    /// policy's order; it is checked with the verifiers' own rule before it is returned.
    pub async fn witness(&self, cp: &Checkpoint, store: &Arc<Store>) -> Result<String, String> {
        let signed_s = self.clock.now_ms() / 1000;
        let log_line = self.log_key.sign(cp, signed_s)?;
        let note = format!(
            "{}\n{log_line}",
            CheckpointBody::plain(&cp.origin, cp.size, cp.root).to_body()
        );
        let size = cp.size;
        let mut submitters = self.submitters.lock().await;
        let answers = futures_util::future::join_all(submitters.iter_mut().map(|s| {
            let store = store.clone();
            let note = &note;
            async move {
                let proof = move |old: u64| {
                    store
                        .consistency_proof(old, size)
                        .map_err(|e| e.to_string())
                };
                s.cosign(size, note, proof).await
            }
        }))
        .await;
        let now_s = self.clock.now_ms() / 1000;
        let mut refused = Vec::new();
        // (name, its one verified line), in the policy's order.
        let mut counted: Vec<(String, String)> = Vec::new();
        for (s, answer) in submitters.iter_mut().zip(answers) {
            let name = s.client().name().to_owned();
            let line = match answer {
                Ok(lines) => lines.into_iter().next(),
                Err(e) => {
                    refused.push(format!("{name}: {e}"));
                    continue;
                }
            };
            let ts = line
                .as_deref()
                .and_then(|l| SignatureLine::parse(l).ok())
                .and_then(|l| cosignature_timestamp(&l));
            match (line, ts) {
                (Some(line), Some(ts)) if ts.saturating_sub(now_s) <= CLOCK_TOLERANCE_S => {
                    counted.push((name, line));
                }
                (_, ts) => {
                    let why = match ts {
                        Some(ts) => format!(
                            "its cosignature is dated {} s ahead of the registry's clock",
                            ts - now_s
                        ),
                        None => "its answer carries no timestamped cosignature".to_owned(),
                    };
                    refused.push(format!("{name}: {why}"));
                    s.refuse(why);
                }
            }
        }
        *self.status.lock().unwrap_or_else(PoisonError::into_inner) =
            submitters.iter().map(|s| s.status().clone()).collect();
        drop(submitters);
        let report = |counted: &[(String, String)], refused: &[String]| {
            format!(
                "cosigned: {}; refused or unanswered: {}",
                names(counted.iter().map(|(n, _)| n)),
                if refused.is_empty() {
                    "none".to_owned()
                } else {
                    refused.join("; ")
                }
            )
        };
        let have: BTreeSet<String> = counted.iter().map(|(n, _)| n.clone()).collect();
        let Some(mut chosen) = self.policy.cheapest_quorum(&have) else {
            return Err(format!("quorum not met ({})", report(&counted, &refused)));
        };
        for (name, _) in &counted {
            if !chosen.contains(name) {
                let mut more = chosen.clone();
                more.insert(name.clone());
                if self.policy.note_fits(&more) {
                    chosen = more;
                }
            }
        }
        let lines: Vec<String> = counted
            .iter()
            .filter(|(n, _)| chosen.contains(n))
            .map(|(_, l)| l.clone())
            .collect();
        let witnessed = witnessed_note(&cp.origin, cp.size, &cp.root, &log_line, &lines);
        verify_witnessed(&witnessed, &self.policy, now_s, None, CLOCK_TOLERANCE_S)
            .map_err(|e| format!("{e} ({})", report(&counted, &refused)))?;
        Ok(witnessed)
    }
}

fn names<'a>(it: impl Iterator<Item = &'a String>) -> String {
    let v: Vec<&str> = it.map(String::as_str).collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}
