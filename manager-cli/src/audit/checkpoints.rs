//! Checkpoints against the log: the head a checkpoint states must be the hash of the entry
//! at its size (its signature is checked elsewhere).
//!
//! A head that differs means the log was changed after the manager signed the checkpoint,
//! somewhere between the last checkpoint that matched and this one's size. When the chain
//! was re-sealed after the change, every later checkpoint differs too: each such mismatch
//! follows from the first one (the chain links them), so they are folded into the first
//! violation (its detail counts them) rather than reported again. A checkpoint that
//! matches ends the divergence; a mismatch after that is reported anew.

use serde_json::Value;

use dgsp_wire::log::{unhex32, Entry};

use super::chain::Chain;
use super::findings::Findings;
use super::violation::ViolationKind;

/// The parts of a checkpoint entry.
pub(crate) struct Stated {
    pub(crate) size: u64,
    pub(crate) head: [u8; 32],
    pub(crate) note: String,
}

/// Reads a checkpoint entry's public fields.
pub(crate) fn parse(e: &Entry) -> Result<Stated, String> {
    let size = e
        .public
        .get("size")
        .and_then(Value::as_u64)
        .ok_or("checkpoint without a numeric size")?;
    let head = e
        .public
        .get("head")
        .and_then(Value::as_str)
        .and_then(unhex32)
        .ok_or("checkpoint without a 64-hex head")?;
    let note = e
        .public
        .get("note")
        .and_then(Value::as_str)
        .ok_or("checkpoint without a note")?
        .to_owned();
    Ok(Stated { size, head, note })
}

/// What the checkpoints have shown so far.
#[derive(Default)]
pub(crate) struct Checkpoints {
    /// The largest size checkpointed.
    pub(crate) last_size: u64,
    /// The size of the last checkpoint that matched the log.
    last_good: u64,
    /// The open divergence: index of its violation and how many later mismatches it
    /// explains.
    divergence: Option<(usize, u64)>,
    /// Every divergence closed or open, for the final details.
    folded: Vec<(usize, u64)>,
}

impl Checkpoints {
    /// Checks checkpoint entry `seq` against the chain; returns whether it matches (then
    /// what it names can be checked against the entries it covers).
    pub(crate) fn check(
        &mut self,
        seq: u64,
        cp: &Stated,
        chain: &Chain,
        out: &mut Findings,
    ) -> bool {
        if cp.size >= seq {
            out.violation(
                seq,
                ViolationKind::CheckpointMismatch,
                format!("it covers {} entries but is entry {seq}", cp.size),
            );
            return false;
        }
        if cp.size < self.last_size {
            out.violation(
                seq,
                ViolationKind::CheckpointMismatch,
                format!(
                    "it covers {} entries, an earlier checkpoint covered {}",
                    cp.size, self.last_size
                ),
            );
            return false;
        }
        self.last_size = cp.size;
        if chain.hash_of(cp.size) == Some(&cp.head) {
            self.last_good = cp.size;
            if let Some(d) = self.divergence.take() {
                self.folded.push(d);
            }
            return true;
        }
        match &mut self.divergence {
            Some((_, later)) => *later += 1,
            None => {
                let actual = chain
                    .hash_of(cp.size)
                    .map_or_else(|| "missing".to_owned(), hex::encode);
                let i = out.violation(
                    seq,
                    ViolationKind::CheckpointMismatch,
                    format!(
                        "it signs head {} for entry {}, the log's entry {} has hash {actual}: an entry among {} to {} was changed after it was checkpointed",
                        hex::encode(cp.head),
                        cp.size,
                        cp.size,
                        self.last_good + 1,
                        cp.size
                    ),
                );
                self.divergence = Some((i, 0));
            }
        }
        false
    }

    /// Adds to each divergence's detail how many later checkpoints it explains.
    pub(crate) fn close(&mut self, out: &mut Findings) {
        self.folded.extend(self.divergence.take());
        for (i, later) in self.folded.drain(..) {
            if later > 0 {
                if let Some(v) = out.violations.get_mut(i) {
                    v.detail.push_str(&format!(
                        " ({later} later checkpoints differ from the log as a consequence)"
                    ));
                }
            }
        }
    }
}
