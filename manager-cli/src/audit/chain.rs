//! The hash chain: position, link, hash and commitment of every entry, re-anchored on each
//! entry's own hash so that one altered entry is reported once and the rest of the log is
//! still checked.

use std::collections::HashMap;

use dgsp_wire::log::{unhex32, ChainError, Entry, Hash, GENESIS_PREV};

use super::findings::Findings;
use super::violation::ViolationKind;

/// The chain so far.
pub(crate) struct Chain {
    last_seq: u64,
    last_hash: Hash,
    /// The hash each entry states (what checkpoints are compared with): entry `seq` at
    /// index `seq - 1` while the log is in sequence...
    hashes: Vec<Hash>,
    /// ...and the entries read out of sequence, by seq.
    odd: HashMap<u64, Hash>,
    /// The first position whose public bytes may not be what the log held when later
    /// checkpoints were signed (see [`Chain::suspect_from`]).
    suspect: Option<u64>,
}

impl Default for Chain {
    fn default() -> Self {
        Chain {
            last_seq: 0,
            last_hash: GENESIS_PREV,
            hashes: Vec::new(),
            odd: HashMap::new(),
            suspect: None,
        }
    }
}

impl Chain {
    /// Checks `e` as the next entry and re-anchors on it. Returns whether the entry itself
    /// is intact (its hash and commitment match its contents); a broken link to the
    /// previous entry is reported but says nothing against this entry's contents.
    ///
    /// At most one of `sequence` / `chain` / `commitment` is reported per entry:
    /// - `sequence` when `seq` is not the previous one + 1 (the link is then not compared:
    ///   the previous entry is not its predecessor);
    /// - else `chain` when `prev_hash` is not the previous entry's stated hash;
    /// - `chain` when the stated `hash` is not the hash of the entry (unless a link
    ///   violation was reported for it already);
    /// - `commitment` when the private payload does not match the commitment.
    pub(crate) fn check(&mut self, e: &Entry, out: &mut Findings) -> bool {
        let expected = self.last_seq.saturating_add(1);
        let mut reported = false;
        if e.seq != expected {
            out.violation(
                e.seq,
                ViolationKind::Sequence,
                format!("entry {} where entry {expected} was expected", e.seq),
            );
            reported = true;
            self.suspect_at(e.seq.min(expected));
        }
        let Some(prev_seq) = e.seq.checked_sub(1) else {
            // seq 0: already reported as out of sequence; nothing else can be said.
            return false;
        };
        let link = unhex32(&e.prev_hash);
        let mut intact = true;
        match link {
            None => {
                if !reported {
                    out.violation(
                        e.seq,
                        ViolationKind::Chain,
                        "prev_hash is not 64 hex characters",
                    );
                }
                self.suspect_at(e.seq);
                intact = false;
            }
            Some(link) => {
                if !reported && link != self.last_hash {
                    out.violation(
                        e.seq,
                        ViolationKind::Chain,
                        format!(
                            "prev_hash {} is not the hash of entry {} ({})",
                            e.prev_hash,
                            self.last_seq,
                            hex::encode(self.last_hash)
                        ),
                    );
                    reported = true;
                    // The previous entry, or this link, is not what was chained.
                    self.suspect_at(prev_seq.max(1));
                }
                // Position and link are settled above; this checks the entry's own hash
                // and its commitment against its own prev_hash.
                match e.check(prev_seq, &link) {
                    Ok(()) => {}
                    Err(ChainError::BadCommitment(_)) => {
                        out.violation(
                            e.seq,
                            ViolationKind::Commitment,
                            "the private payload does not match the commitment",
                        );
                        intact = false;
                    }
                    Err(err) => {
                        if !reported {
                            out.violation(e.seq, ViolationKind::Chain, err.to_string());
                        }
                        self.suspect_at(e.seq);
                        intact = false;
                    }
                }
            }
        }
        let stated = e
            .hash_bytes()
            .ok()
            .or_else(|| link.map(|l| e.compute_hash(&l)))
            .unwrap_or_default();
        self.last_seq = e.seq;
        self.last_hash = stated;
        if e.seq == self.hashes.len() as u64 + 1 {
            self.hashes.push(stated);
        } else if e.seq > self.hashes.len() as u64 {
            self.odd.entry(e.seq).or_insert(stated);
        }
        intact
    }

    /// The first position (seq) whose public bytes may differ from what the log held when
    /// it was chained, as far as the violations reported so far show: an entry whose own
    /// hash does not match, the entry before a broken link, a position out of sequence.
    /// (A private payload that fails its commitment does not count: the public bytes, which
    /// the checkpoints' tree commits to, are unaffected.) `None` while everything chained.
    pub(crate) fn suspect_from(&self) -> Option<u64> {
        self.suspect
    }

    fn suspect_at(&mut self, seq: u64) {
        self.suspect = Some(self.suspect.map_or(seq, |s| s.min(seq)));
    }

    /// The hash entry `seq` states, if it was read.
    pub(crate) fn hash_of(&self, seq: u64) -> Option<&Hash> {
        match usize::try_from(seq).ok().and_then(|s| s.checked_sub(1)) {
            Some(i) if i < self.hashes.len() => self.hashes.get(i),
            _ => self.odd.get(&seq),
        }
    }
}
