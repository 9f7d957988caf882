//! What can go wrong between the registry and an applied view.

/// A reason the follower refused what the registry served (or could not reach it). Nothing
/// from a poll that ends in a fault is applied; the last verified view stays in service.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Fault {
    /// Connection refused, reset, or timed out.
    #[error("the registry cannot be reached: {0}")]
    Unreachable(String),
    /// The registry answered with an error status.
    #[error("the registry answered HTTP {0}")]
    HttpStatus(u16),
    /// A page that is not the feed's JSON (truncated, wrong shape).
    #[error("malformed feed page: {0}")]
    MalformedPage(String),
    /// A feed page (or checkpoint answer) larger than the gateway reads. The follower halves
    /// its page size and asks again; this is a fault only once a one-entry page is too large.
    #[error("the registry's answer for {entries} entries is larger than {max_bytes} bytes")]
    PageTooLarge {
        /// entries asked for
        entries: usize,
        /// the limit
        max_bytes: usize,
    },
    /// More fetched data than the gateway holds while waiting for a checkpoint to cover it.
    #[error("no signed checkpoint covers the {0} held pending")]
    PendingLimit(String),
    /// An entry does not chain to its predecessor.
    #[error("entry {seq} breaks the hash chain: {detail}")]
    Chain {
        /// entry
        seq: u64,
        /// the chain error
        detail: String,
    },
    /// The registry serves a different entry where this gateway already has one.
    #[error("fork at entry {seq}: {detail}")]
    Fork {
        /// entry
        seq: u64,
        /// what differs
        detail: String,
    },
    /// The registry no longer serves entries the gateway has applied.
    #[error(
        "the registry's log ends at {head}, before entry {applied} that this gateway has applied"
    )]
    Rollback {
        /// registry head
        head: u64,
        /// our applied seq
        applied: u64,
    },
    /// The log is not the pinned group's.
    #[error("the log is not the pinned group's: {0}")]
    WrongGroup(String),
    /// An entry's payload is not what its kind requires.
    #[error("entry {seq} is malformed: {detail}")]
    MalformedEntry {
        /// entry
        seq: u64,
        /// what is wrong
        detail: String,
    },
    /// A checkpoint whose signature or contents do not hold.
    #[error("checkpoint at entry {seq} refused: {detail}")]
    BadCheckpoint {
        /// entry
        seq: u64,
        /// why
        detail: String,
    },
    /// A validly signed checkpoint older (by signed time) than one the gateway already
    /// holds, or one that contradicts it: the registry, or something in between, is
    /// replaying old state. Nothing moves back.
    #[error("replayed checkpoint refused: {0}")]
    ReplayedCheckpoint(String),
    /// A checkpoint signed more than the clock tolerance ahead of this gateway's clock: not
    /// taken as fresh (nothing it covers is applied; the last verified state stays).
    #[error("checkpoint at entry {seq} refused: {detail}")]
    FutureCheckpoint {
        /// entry (for the registry's current note, the entry it covers)
        seq: u64,
        /// how far ahead, of which clock
        detail: String,
    },
    /// The registry's signed checkpoint covers entries its feed does not serve.
    #[error("the registry signed a checkpoint of {size} entries but its feed ends at {head}")]
    Withheld {
        /// entries the signed checkpoint covers
        size: u64,
        /// the head the feed reports
        head: u64,
    },
    /// A snapshot whose signature, group or succession does not hold.
    #[error("snapshot at entry {seq} refused: {detail}")]
    BadSnapshot {
        /// entry
        seq: u64,
        /// why
        detail: String,
    },
    /// A snapshot whose root or count does not match the revocations in the log.
    #[error("snapshot at entry {seq} does not match the revocations in the log: {detail}")]
    SnapshotMismatch {
        /// entry
        seq: u64,
        /// what differs
        detail: String,
    },
    /// The replica could not be written.
    #[error("the replica could not be written: {0}")]
    Storage(String),
    /// With a witness policy: the registry's newest checkpoint note came without its
    /// witnessed note (`witnessed` in `/v1/checkpoint`).
    #[error("the registry's checkpoint of {seq} entries refused: {detail}")]
    Unwitnessed {
        /// the entries the note covers
        seq: u64,
        /// why
        detail: String,
    },
    /// With a witness policy: the witnessed note verifies, but the policy's quorum did not
    /// cosign it within the maximum age (a witness missing, or its cosignature too old or
    /// dated too far ahead), or the log's own signature on it is too old or ahead.
    #[error("the registry's checkpoint of {seq} entries refused: {detail}")]
    WitnessQuorum {
        /// the entries the note covers
        seq: u64,
        /// which witnesses counted, which were stale
        detail: String,
    },
    /// With a witness policy: the witnessed note does not verify (malformed, no or a bad
    /// log signature, a policy witness's cosignature that does not verify, as over another
    /// tree) or is of another tree than the registry's checkpoint note.
    #[error("the registry's checkpoint of {seq} entries refused: {detail}")]
    BadWitnessed {
        /// the entries the note covers
        seq: u64,
        /// why
        detail: String,
    },
    /// With a witness policy: the registry's log-key statement (`GET /v1/log/key`) is
    /// missing, does not verify under the group key, or names another key than the
    /// policy's `log` line.
    #[error("the registry's log key refused: {0}")]
    LogKey(String),
    /// A tile (hash tile or entry bundle) that is not what its path says: not a whole
    /// number of hashes of its width, a bundle truncated or holding another number of
    /// entries (a tile of another tree size served under this one's path).
    #[error("tile {path} refused: {detail}")]
    BadTile {
        /// the tile's path
        path: String,
        /// what is wrong
        detail: String,
    },
    /// A tile whose contents do not agree with the verified tree: a full hash tile that
    /// does not hash to its parent's node, or a bundle whose entries' leaves are not the
    /// hash tile's.
    #[error("tile {path} does not match the tree: {detail}")]
    TileMismatch {
        /// the tile's path
        path: String,
        /// what differs
        detail: String,
    },
    /// The right-edge hash tiles at a checkpoint's size do not give the root it signs.
    #[error("the tiles of {size} entries do not give the signed checkpoint's root: {detail}")]
    RootMismatch {
        /// the checkpoint's size
        size: u64,
        /// the roots
        detail: String,
    },
    /// Objects read together that disagree the way a cache or a write in progress makes
    /// them disagree (the tiles' `checkpoint` and `checkpoint.witnessed` of different tree
    /// sizes, read twice): nothing is refused for it, it is read again later.
    #[error("the tiles are not settled: {0}")]
    Unsettled(String),
    /// A snapshot bundle that does not verify: undecodable, not signed by the pinned key,
    /// not the snapshot the checkpoint names, or zetas that do not give its signed root.
    #[error("snapshot bundle {number} refused: {detail}")]
    BadSnapshotBundle {
        /// the snapshot number the checkpoint names
        number: u64,
        /// why
        detail: String,
    },
}

impl Fault {
    /// Stable kind name (metrics label, `/readyz`).
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::Unreachable(_) => "unreachable",
            Fault::HttpStatus(_) => "http_status",
            Fault::MalformedPage(_) => "malformed_page",
            Fault::PageTooLarge { .. } => "page_too_large",
            Fault::PendingLimit(_) => "pending_limit",
            Fault::Chain { .. } => "chain",
            Fault::Fork { .. } => "fork",
            Fault::Rollback { .. } => "rollback",
            Fault::WrongGroup(_) => "wrong_group",
            Fault::MalformedEntry { .. } => "malformed_entry",
            Fault::BadCheckpoint { .. } => "bad_checkpoint",
            Fault::ReplayedCheckpoint(_) => "replayed_checkpoint",
            Fault::FutureCheckpoint { .. } => crate::clock::FUTURE_CHECKPOINT,
            Fault::Withheld { .. } => "withheld",
            Fault::BadSnapshot { .. } => "bad_snapshot",
            Fault::SnapshotMismatch { .. } => "snapshot_mismatch",
            Fault::Storage(_) => "storage",
            Fault::Unwitnessed { .. } => "unwitnessed_checkpoint",
            Fault::WitnessQuorum { .. } => "witness_quorum",
            Fault::BadWitnessed { .. } => "bad_witnessed_checkpoint",
            Fault::LogKey(_) => "log_key",
            Fault::BadTile { .. } => "bad_tile",
            Fault::TileMismatch { .. } => "tile_mismatch",
            Fault::RootMismatch { .. } => "root_mismatch",
            Fault::BadSnapshotBundle { .. } => "bad_snapshot_bundle",
            Fault::Unsettled(_) => "unsettled",
        }
    }

    /// The entry it concerns, if one.
    pub fn seq(&self) -> Option<u64> {
        match self {
            Fault::Chain { seq, .. }
            | Fault::Fork { seq, .. }
            | Fault::MalformedEntry { seq, .. }
            | Fault::BadCheckpoint { seq, .. }
            | Fault::FutureCheckpoint { seq, .. }
            | Fault::BadSnapshot { seq, .. }
            | Fault::SnapshotMismatch { seq, .. }
            | Fault::Unwitnessed { seq, .. }
            | Fault::WitnessQuorum { seq, .. }
            | Fault::BadWitnessed { seq, .. } => Some(*seq),
            Fault::Rollback { applied, .. } => Some(*applied),
            Fault::Withheld { head, .. } => Some(head.saturating_add(1)),
            Fault::RootMismatch { size, .. } => Some(*size),
            _ => None,
        }
    }

    /// Whether the registry itself misbehaved (as opposed to being unavailable).
    pub fn is_integrity(&self) -> bool {
        !matches!(
            self,
            Fault::Unreachable(_) | Fault::HttpStatus(_) | Fault::Storage(_) | Fault::Unsettled(_)
        )
    }
}
