//! The journal scenario's invariants on what the registries serve, from a monitor that
//! polls each registry directly (not through the front), each on its own loop every
//! 100 ms: `GET /v1/checkpoint` (its window: asked, answered), then `GET /v1/group` (the
//! head of its log). A checkpoint is *fresh* when it was signed no longer than the
//! gateways' staleness bound before it arrived: what a gateway would accept. A registry the
//! suite froze (SIGSTOP) answers nothing until it is thawed: an answer that arrived after a
//! thaw counts as asked at the thaw.
//!
//! - **every acknowledged write is in the log of every registry that serves a fresh
//!   checkpoint**: a registry that served a fresh checkpoint asked after a write was
//!   acknowledged (by any registry) has that write's entry in its log: the head it read
//!   just after is at least the entry's seq, and its hash is the suite's copy of the log's
//!   at that seq (the log holds the acknowledged entries: "every acknowledged write is in
//!   the log"). The log only grows within a process, so a head read after the checkpoint
//!   is at least the one it served from.
//! - **no two registries serve fresh checkpoints with different heads at the same moment**:
//!   no fresh answer of one registry falls between two fresh answers of one start of the
//!   other (the first answered before it was asked, the second asked after it arrived)
//!   unless all three name the same (size, head). A registry serves fresh checkpoints only
//!   while it holds the lease, which a process holds over one stretch of time and two
//!   registries never hold at once; a registry that served before and after the other did
//!   held it meanwhile, so the two served at the same moment, however close the answers
//!   (a writer that releases its lease at a clean stop is followed at once).
//! - **every standby that takes over starts at or after the last acknowledged head**: the
//!   first head each start of a registry answered (its first start on the group's data
//!   directory aside) is at least the seq of every write acknowledged before it was asked.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use dgsp_wire::events::Event;
use dgsp_wire::log::now_ms;
use dgsp_wire::registry_api::{CheckpointInfo, GroupInfo};

use crate::http;
use crate::invariants::Log;
use crate::report::Row;
use crate::stack::Stack;
use crate::workload::{Ack, Acked};

const ACKED_IN_FRESH: &str =
    "every acknowledged write is in the log of every registry serving a fresh checkpoint";
const ONE_FRESH_HEAD: &str = "no two registries serve fresh checkpoints with different heads";
const TAKEOVER_HEAD: &str = "every standby that takes over starts at or after the acked head";
const EXITS: &str = "every registry that exits on its own halted";

/// How often each registry is polled.
const POLL: Duration = Duration::from_millis(100);

/// One poll of one registry.
#[derive(Clone, Debug)]
struct Sample {
    /// Its slot and name.
    slot: usize,
    name: String,
    /// Which start of it (from 1).
    start: u32,
    /// When the checkpoint was asked for and when it arrived (Unix ms, the suite's clock).
    asked: u64,
    answered: u64,
    /// (size, head, signed time) of the checkpoint served.
    checkpoint: (u64, String, u64),
    /// (seq, hash) of its log's head, read after the checkpoint; `None` when unanswered.
    head: Option<(u64, String)>,
}

/// What the monitor saw.
#[derive(Default)]
pub struct Fencing {
    samples: Mutex<Vec<Sample>>,
    /// When the suite thawed (SIGCONT) a registry it had frozen: (slot, start, Unix ms).
    /// A frozen process answers nothing, so what it answered after a thaw it served after
    /// it, whenever it was asked.
    thaws: Mutex<Vec<(usize, u32, u64)>>,
    /// Polls that got no checkpoint (the registry standing by, stopped, frozen or not
    /// serving), by registry.
    unanswered: Mutex<BTreeMap<String, u64>>,
}

/// Polls the registry of `slot` every [`POLL`] until `stop`; every checkpoint read is also
/// recorded for the check of its root (`crate::roots`).
pub async fn watch(stack: &Stack, fencing: &Fencing, slot: usize, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let (name, url, start) = {
            let svc = stack.registries[slot].lock().await;
            (svc.name.clone(), svc.url.clone(), svc.starts)
        };
        let asked = now_ms();
        let served = http::json::<CheckpointInfo>(&stack.http, &format!("{url}/v1/checkpoint"))
            .await
            .filter(|(s, _)| *s == 200);
        let answered = now_ms();
        match served {
            Some((_, cp)) => {
                stack.served.record(&cp);
                let head = http::json::<GroupInfo>(&stack.http, &format!("{url}/v1/group"))
                    .await
                    .filter(|(s, _)| *s == 200)
                    .map(|(_, g)| (g.head_seq, g.head_hash));
                fencing.samples.lock().unwrap().push(Sample {
                    slot,
                    name,
                    start,
                    asked,
                    answered,
                    checkpoint: (cp.size, cp.head, cp.time_unix_ms),
                    head,
                });
            }
            None => *fencing.unanswered.lock().unwrap().entry(name).or_default() += 1,
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The acknowledged writes the log holds, as (acknowledged at, seq, what), by time.
fn acked_seqs(log: &Log, acks: &[Acked]) -> Vec<(u64, u64, String)> {
    let mut joined = HashMap::new();
    let mut issued = HashMap::new();
    let mut revoked = HashMap::new();
    for e in log.entries() {
        match e.event() {
            Ok(Event::MemberJoined { id, .. }) => {
                joined.insert(id, e.seq);
            }
            Ok(Event::CertificatesIssued { id, first, .. }) => {
                issued.insert((id, first), e.seq);
            }
            Ok(Event::MemberRevoked { id, .. }) => {
                revoked.insert(e.seq, id);
            }
            _ => {}
        }
    }
    let mut out: Vec<(u64, u64, String)> = acks
        .iter()
        .filter_map(|a| {
            let (seq, what) = match &a.ack {
                Ack::Joined { id, .. } => (*joined.get(id)?, format!("the join of member {id}")),
                Ack::Issued { id, first, .. } => (
                    *issued.get(&(*id, *first))?,
                    format!("certificates {first}.. of member {id}"),
                ),
                Ack::Revoked { id, seq, .. } if revoked.get(seq) == Some(id) => {
                    (*seq, format!("the revocation of member {id}"))
                }
                Ack::Revoked { .. } => return None,
            };
            Some((a.at_ms, seq, what))
        })
        .collect();
    out.sort_by_key(|(at, _, _)| *at);
    out
}

/// The newest of the acknowledged writes before `t`: the largest seq of those answered
/// before `t`, with when and what (`acked`: by time, `best`: the running maximum).
struct AckedHead<'a> {
    acked: &'a [(u64, u64, String)],
    /// index into `acked` of the largest seq among the first i + 1
    best: Vec<usize>,
}

impl<'a> AckedHead<'a> {
    fn new(acked: &'a [(u64, u64, String)]) -> Self {
        let mut best: Vec<usize> = Vec::with_capacity(acked.len());
        for (i, a) in acked.iter().enumerate() {
            let b = match best.last() {
                Some(&j) if acked[j].1 >= a.1 => j,
                _ => i,
            };
            best.push(b);
        }
        AckedHead { acked, best }
    }

    /// The write of the largest seq acknowledged before `t`, if any.
    fn before(&self, t: u64) -> Option<&'a (u64, u64, String)> {
        let n = self.acked.partition_point(|(at, _, _)| *at < t);
        n.checked_sub(1).map(|i| &self.acked[self.best[i]])
    }
}

fn secs(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1e3)
}

impl Fencing {
    /// The rows of the fencing invariants: `log` is the suite's copy of the log (after the
    /// checks' last read), `acks` the acknowledged writes, `bound_ms` the gateways'
    /// staleness bound.
    pub fn rows(&self, log: &Log, acks: &[Acked], bound_ms: u64) -> [Row; 3] {
        let mut samples = self.samples.lock().unwrap().clone();
        let thaws = self.thaws.lock().unwrap().clone();
        for s in &mut samples {
            for &(slot, start, at) in &thaws {
                if (slot, start) == (s.slot, s.start) && s.asked < at && at <= s.answered {
                    s.asked = at;
                }
            }
        }
        let acked = acked_seqs(log, acks);
        let head = AckedHead::new(&acked);
        let hashes: HashMap<u64, &str> = log
            .entries()
            .iter()
            .map(|e| (e.seq, e.hash.as_str()))
            .collect();
        let fresh = |s: &Sample| s.checkpoint.2 + bound_ms >= s.answered;
        [
            acked_in_fresh(&samples, &head, &hashes, fresh),
            one_fresh_head(&samples, fresh),
            takeover_head(&samples, &head),
        ]
    }

    /// Records that the registry of `slot`, in its start `start`, was thawed now.
    pub fn thawed(&self, slot: usize, start: u32) {
        self.thaws.lock().unwrap().push((slot, start, now_ms()));
    }

    /// Writes what the checks read, for reading after a failed run: every poll that got a
    /// checkpoint to `dir/registry-polls.tsv` (registry, start, asked, answered, size, head,
    /// signed time, head seq, head hash) and every acknowledged write the log holds to
    /// `dir/acked.tsv` (answered, seq, what), tab-separated, times in Unix ms.
    pub fn dump(&self, dir: &std::path::Path, log: &Log, acks: &[Acked]) -> Result<(), String> {
        let mut polls = String::from(
            "registry\tstart\tasked_ms\tanswered_ms\tsize\thead\tsigned_ms\thead_seq\thead_hash\n",
        );
        for s in self.samples.lock().unwrap().iter() {
            let (seq, hash) = s
                .head
                .as_ref()
                .map_or(("-".into(), "-"), |(q, h)| (q.to_string(), h.as_str()));
            polls.push_str(&format!(
                "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{seq}\t{hash}\n",
                s.name,
                s.start,
                s.asked,
                s.answered,
                s.checkpoint.0,
                s.checkpoint.1,
                s.checkpoint.2
            ));
        }
        let mut acked = String::from("answered_ms\tseq\twhat\n");
        for (at, seq, what) in acked_seqs(log, acks) {
            acked.push_str(&format!("{at}\t{seq}\t{what}\n"));
        }
        for (name, text) in [("registry-polls.tsv", polls), ("acked.tsv", acked)] {
            let path = dir.join(name);
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        Ok(())
    }

    /// How many polls answered, fresh and not, and how many did not, by registry.
    fn counts(&self) -> (BTreeMap<String, (u64, u64)>, BTreeMap<String, u64>) {
        let mut answered: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for s in self.samples.lock().unwrap().iter() {
            let e = answered.entry(s.name.clone()).or_default();
            e.0 += 1;
            e.1 += u64::from(s.head.is_some());
        }
        (answered, self.unanswered.lock().unwrap().clone())
    }
}

/// One line: what the monitor saw of the registries.
impl fmt::Display for Fencing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (answered, unanswered) = self.counts();
        let starts: std::collections::BTreeSet<(String, u32)> = self
            .samples
            .lock()
            .unwrap()
            .iter()
            .map(|s| (s.name.clone(), s.start))
            .collect();
        write!(
            f,
            "registries: checkpoints served (with the head read after) {answered:?}, polls unanswered {unanswered:?}, starts that served {}",
            starts.len()
        )
    }
}

fn acked_in_fresh(
    samples: &[Sample],
    head: &AckedHead<'_>,
    hashes: &HashMap<u64, &str>,
    fresh: impl Fn(&Sample) -> bool,
) -> Row {
    let mut failures = Vec::new();
    let mut checked = 0;
    for s in samples.iter().filter(|s| fresh(s)) {
        let Some((seq, hash)) = &s.head else { continue };
        checked += 1;
        let (size, _, time) = &s.checkpoint;
        if let Some((at, want, what)) = head.before(s.asked) {
            if seq < want {
                failures.push(format!(
                    "{} (start {}) served at {} a fresh checkpoint (size {size}, signed {} before) with \
                     its log at entry {seq}, {} after entry {want} ({what}) was acknowledged",
                    s.name,
                    s.start,
                    s.answered,
                    secs(s.answered.saturating_sub(*time)),
                    secs(s.asked - at)
                ));
                continue;
            }
        }
        if let Some(h) = hashes.get(seq) {
            if *h != hash.as_str() {
                failures.push(format!(
                    "{} (start {}) served at {} a fresh checkpoint (size {size}) with its log's entry \
                     {seq} hashed {hash}, where the log holds {h}",
                    s.name, s.start, s.answered
                ));
            }
        }
    }
    Row::new(ACKED_IN_FRESH, checked, failures)
}

fn one_fresh_head(samples: &[Sample], fresh: impl Fn(&Sample) -> bool) -> Row {
    let fresh: Vec<&Sample> = samples.iter().filter(|s| fresh(s)).collect();
    let mut by_start: BTreeMap<(usize, u32), Vec<&Sample>> = BTreeMap::new();
    for s in &fresh {
        by_start.entry((s.slot, s.start)).or_default().push(s);
    }
    let key = |s: &Sample| (s.checkpoint.0, s.checkpoint.1.clone());
    let short = |h: &str| h[..h.len().min(16)].to_owned();
    let mut failures = Vec::new();
    for b in &fresh {
        // A start of the other registry that served fresh both before and after `b`.
        let bracket = by_start
            .iter()
            .filter(|((slot, _), _)| *slot != b.slot)
            .find_map(|(_, own)| {
                let before = own.iter().rev().find(|a| a.answered <= b.asked)?;
                let after = own.iter().find(|a| a.asked >= b.answered)?;
                let same = key(before) == key(b) && key(after) == key(b);
                (!same).then_some((before, after))
            });
        if let Some((before, after)) = bracket {
            failures.push(format!(
                "{} (start {}) served a fresh checkpoint of size {} (head {}) at {}, while {} (start {}) \
                 served fresh ones before and after it: size {} (head {}) at {} and size {} (head {}, \
                 signed {} before) at {}",
                b.name,
                b.start,
                b.checkpoint.0,
                short(&b.checkpoint.1),
                b.answered,
                before.name,
                before.start,
                before.checkpoint.0,
                short(&before.checkpoint.1),
                before.answered,
                after.checkpoint.0,
                short(&after.checkpoint.1),
                secs(after.answered.saturating_sub(after.checkpoint.2)),
                after.answered,
            ));
        }
    }
    // Checked: every fresh answer (none is bracketed when one registry serves at a time).
    Row::new(ONE_FRESH_HEAD, fresh.len() as u64, failures)
}

fn takeover_head(samples: &[Sample], head: &AckedHead<'_>) -> Row {
    let mut first: BTreeMap<(usize, u32), &Sample> = BTreeMap::new();
    for s in samples.iter().filter(|s| s.head.is_some()) {
        first.entry((s.slot, s.start)).or_insert(s);
    }
    // The group's first writer started on the group's own data directory.
    first.remove(&(0, 1));
    let mut failures = Vec::new();
    for s in first.values() {
        let Some((seq, _)) = &s.head else { continue };
        if let Some((at, want, what)) = head.before(s.asked) {
            if seq < want {
                failures.push(format!(
                    "{} (start {}) first served at {} with its log at entry {seq}, {} after entry \
                     {want} ({what}) was acknowledged",
                    s.name,
                    s.start,
                    s.answered,
                    secs(s.asked - at)
                ));
            }
        }
    }
    Row::new(TAKEOVER_HEAD, first.len() as u64, failures)
}

/// Every registry that exited on its own halted (the line it exited with says so), for a
/// reason of the journal or the lease; an exit that says the log differs from the
/// journal, a segment is missing or bad, a panic, or nothing, is a finding.
pub fn exits_row(exits: &[(String, u32, String)], spawn_failures: &[String]) -> Row {
    const BAD: &[&str] = &[
        "differ at entry",
        "is not in the bucket",
        "panicked",
        "does not open",
    ];
    let mut failures: Vec<String> = spawn_failures.to_vec();
    for (name, start, line) in exits {
        let halted = line.contains("halted") || line.contains("object store");
        if !halted || BAD.iter().any(|b| line.contains(b)) {
            failures.push(format!("{name} (start {start}) exited: {line}"));
        }
    }
    Row::new(EXITS, exits.len() as u64, failures)
}
