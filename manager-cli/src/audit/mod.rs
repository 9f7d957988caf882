//! `dgsp-manager audit`: replay a group's whole log and check the manager's conduct.
//!
//! The log comes from an export file (`--file`, JSON Lines), a registry's feed
//! (`--registry`, with the auditor token for the private parts) or the log's C2SP tiles
//! (`--tiles`, from a registry's `/v1/log`, any static server or a directory: [`tiles`],
//! which also checks the tiles themselves and the consistency between checkpoints). [`Auditor`] is pure and
//! incremental: [`Auditor::push`] each entry in order, then [`Auditor::finish`] gives the
//! [`Report`]. Each [`Violation`] carries the seq where it was found, a stable kind name
//! ([`ViolationKind`]) and a detail.
//!
//! # Rules
//!
//! | kind | fires when |
//! |---|---|
//! | `sequence` | an entry's seq is not the previous seq + 1 |
//! | `chain` | `prev_hash` is not the previous entry's stated hash, or `hash` is not the hash of the entry |
//! | `commitment` | a private payload does not match its commitment |
//! | `malformed` | an entry cannot be read (unknown kind, bad field, undecodable snapshot or opening) |
//! | `group` | entry 1 is not `group_created`, its key does not decode or does not match its fingerprint/params fields, it is not the pinned group; or a later `group_created` |
//! | `checkpoint_signature` | a checkpoint note does not verify under the group key, or names another origin |
//! | `checkpoint_mismatch` | a checkpoint's root is not the RFC 6962 Merkle root of the first `size` entries (nor, in a note signed before the tree, the chain hash of entry `size`: `dgsp_wire::follow::check_root`); its fields differ from its signed note; it covers entries after itself; its size goes back |
//! | `checkpoint_uncovered` | a timed checkpoint (whose note verifies) does not name the newest snapshot among the entries it covers, or covers a revocation that snapshot does not hold (the followers' rule, `dgsp_wire::follow::check_covers`): it vouches for a state in which the revoked member's signatures verify |
//! | `snapshot_signature` | a snapshot's signature does not verify under the group key, or it names another group |
//! | `snapshot_succession` | a snapshot is not number previous + 1 (1 for the first) with `prev_hash` = the previous record's hash, or its `log_seq` is not before its own entry |
//! | `snapshot_root` | a snapshot's root or count differs from the set of zetas revoked at entries `<= log_seq` (the gateway's rule) |
//! | `snapshot_shrink` | a snapshot has fewer zetas than an earlier one, or a `log_seq` before the previous one's (its root is then not compared) |
//! | `invalid_opened_signature` | an opened signature (schema v2) does not verify under the group key for the digest the opening records (its judge is then not reported) |
//! | `wrong_opening` | an opening (schema v2, with the DGSP digest) of a valid signature fails judge |
//! | `issued_to_revoked` | certificates issued to a member after its `member_revoked` |
//! | `unknown_member` | certificates issued to, or a revocation of, a member that never joined |
//! | `counter_reused` | an issuance starts below the member's next unissued counter |
//! | `counter_gap` | an issuance starts above it (ranges must be contiguous from 0) |
//! | `issue_digests` | an issuance lists WOTS+ key digests, but not one per certificate |
//! | `revocation_count` | a revocation's number of zetas, or its counter, is not the number of counters issued to the member |
//! | `duplicate_zeta` | a zeta revoked twice (in one revocation or across revocations) |
//! | `double_revocation` | a member revoked a second time |
//! | `duplicate_member` | a member id or username joins twice |
//! | `tile_bundle` | (`--tiles`) an entry bundle is truncated, holds another number of entries than its width, or an entry that is not a log entry, not at its position, or not in its canonical bytes |
//! | `tile_hash` | (`--tiles`) a hash tile differs from the hashes recomputed from the bundles, or has the wrong length |
//! | `checkpoint_consistency` | (`--tiles`) the RFC 6962 consistency proof between two successive checkpoints, computed from the served hash tiles, does not verify against their roots |
//!
//! With `--tiles` the served checkpoint is judged like a checkpoint entry (its root, its
//! signature, the snapshot it names), its findings at entry `size` and naming "the served
//! checkpoint".
//!
//! The auditor cannot recompute zetas (they derive from the manager's secret), only count
//! them. The log does not hold an opened message, only its DGSP digest `d`; from it the
//! auditor verifies the opened signature under the group key
//! (`verify_digest_ignoring_revocation`: the WOTS+ signature of `d` and the manager's
//! certificate over the key it implies), then judges the opening (`judge_digest`). This
//! shows the signature is valid for some message with digest `d`; matching the message
//! itself needs the message (the entry's `message_digest` is its SHA3-256). A version-1
//! opening records no digest: it is reported as a warning (`unjudgeable_opening`), neither
//! passed nor failed.
//!
//! # Cascades
//!
//! - The chain re-anchors on each entry's stated hash: an entry rewritten without
//!   re-sealing is one `chain` (or `commitment`) violation at its seq; the next entry still
//!   links to the stated hash. An entry re-sealed alone shows as a `chain` violation at the
//!   following entry, whose `prev_hash` no longer matches.
//! - An entry that fails its own hash or commitment check gets that one violation: its
//!   own checks (signature, judge, counts) are skipped (counted as `altered_entry`); its
//!   effects on the replayed state are kept.
//! - An entry rewritten and the chain re-sealed after it (the manager can re-hash, but
//!   cannot un-sign the checkpoints already published) is found at the first checkpoint
//!   covering it: one `checkpoint_mismatch` at that checkpoint's seq, naming the range of
//!   entries the change lies in. Later checkpoints that differ as a consequence are folded
//!   into it (its detail counts them) until a checkpoint matches again.
//! - Checkpoint roots are RFC 6962 Merkle roots over the entries' public bytes, so an
//!   entry rewritten without re-sealing (or dropped, or repeated) also changes every root
//!   covering it: those mismatches follow from the `chain` or `sequence` violation already
//!   reported and are counted as skipped (`checkpoint_root`), not reported again. A
//!   private payload changed under its commitment does not touch the tree.
//! - A snapshot that shrinks is one `snapshot_shrink`; its root is not compared. Every
//!   snapshot is the predecessor of the next, good or bad.
//! - `snapshot_root` is reported at every snapshot that disagrees with the log (a zeta
//!   missing from the log shows at each later snapshot): unlike checkpoint roots, one
//!   wrong root does not imply the next, and each is a separately signed statement that
//!   a verifier may rely on.
//! - A changed bundle byte is a `chain` violation at its entry (the entry no longer has
//!   its hash) and a `tile_hash` at the level-0 tile (the served leaf is not its bytes'
//!   hash); hash tiles above a tile that differs are not reported again, nor are
//!   consistency proofs that would read it (`skipped.consistency`).
//! - `checkpoint_uncovered` compares what a checkpoint names with the log's snapshot
//!   entries and revocations by position; a checkpoint naming a snapshot whose root is
//!   wrong is the `snapshot_root` of that snapshot, not reported again. A log repaired
//!   by a later snapshot (docs/checkpoints.md, "Recovering a log") keeps its violations:
//!   the manager signed them.
//!
//! # What needs the auditor token
//!
//! Member checks need every private payload from entry 1 on; from the first missing one
//! they are skipped and counted (`skipped.member_checks`), as are commitments
//! (`skipped.commitment`). The public checks (chain, group, checkpoints, snapshots,
//! revoked set, openings, duplicate zetas) run on the public feed.
//!
//! # Warnings
//!
//! `unjudgeable_opening`, `no_key_digests` (issuances from the core's own path record no
//! key digests), `unreadable` (a schema version newer than this build), `uncheckpointed`
//! and `unsnapshotted` (the log ends before the registry published the checkpoint or
//! snapshot covering its tail), `empty`.
//!
//! # Cost
//!
//! Hashes and the member ledger are checked as entries arrive; SPHINCS+ verification of
//! checkpoints, snapshots and opened signatures, and judge, are queued and run in parallel
//! batches. Memory: the set of revoked zetas (about 17 bytes each), three hashes per entry
//! (its chain hash, and the Merkle tree's nodes: about two per entry), one record per
//! member. The tile source adds a few bundles in flight and one unfinished tile of hashes
//! per tree level ([`tiles`]).
//!
//! `--compare URL…` does not replay the log: it sets the checkpoints several registries and
//! gateways serve side by side and reports any two that no consistency proof joins
//! ([`compare`]).

mod auditor;
mod chain;
mod checkpoints;
pub mod compare;
mod crypto;
mod findings;
mod group;
mod members;
mod report;
mod snapshots;
pub mod source;
pub mod tiles;
mod tree;
mod violation;

use tokio::sync::mpsc;

pub use auditor::Auditor;
pub use report::{GroupInfo, Head, Report, Stats, TilesRead};
pub use violation::{Skipped, Violation, ViolationKind, Warning, WarningKind};

use crate::cli::AuditArgs;
use crate::config::Config;
use crate::error::{exit, Error};
use crate::output::Output;

/// Runs `audit`: reads the log, prints the report; exit code [`exit::OK`] when there is no
/// violation, [`exit::REJECTED`] when there is one.
pub async fn run(args: AuditArgs, out: Output, config: &Config) -> Result<i32, Error> {
    if !args.compare.is_empty() {
        return compare::run(args, out, config).await;
    }
    let pin = args
        .group_key
        .as_deref()
        .map(crate::io::read_anchor)
        .transpose()
        .map_err(|e| Error::arg("--group-key", e))?;
    let auditor = Auditor::new(pin);
    let report = match (&args.file, &args.tiles) {
        (None, Some(tiles)) => {
            let base = tiles::TileBase::open(tiles, &args.http)?;
            let bar = out.progress(0, "auditing");
            let done = bar.clone();
            let rt = tokio::runtime::Handle::current();
            let report = tokio::task::spawn_blocking(move || tiles::audit(auditor, base, rt, &bar))
                .await
                .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))?;
            done.finish_and_clear();
            report
        }
        (Some(path), _) => {
            let path = path.clone();
            let bar = out.progress(0, "auditing");
            let done = bar.clone();
            let report = tokio::task::spawn_blocking(move || {
                let mut auditor = auditor;
                source::read_file(&mut auditor, &path, &bar).map(|()| auditor.finish())
            })
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))?;
            done.finish_and_clear();
            report
        }
        (None, None) => from_registry(auditor, &args, out, config).await?,
    };
    out.emit(&report, || report.render());
    Ok(if report.is_clean() {
        exit::OK
    } else {
        exit::REJECTED
    })
}

/// Audits the feed of `--registry` (or the config's registry) while it is fetched.
async fn from_registry(
    auditor: Auditor,
    args: &AuditArgs,
    out: Output,
    config: &Config,
) -> Result<Report, Error> {
    let base = args
        .registry
        .clone()
        .or_else(|| config.registry.clone())
        .ok_or_else(|| {
            Error::Config(
                "audit needs --file FILE or --registry URL (or `registry` in the config file)"
                    .into(),
            )
        })?;
    let token = crate::tokens::Sources {
        flag: ("--token", args.token.as_deref()),
        env: "DGSP_AUDITOR_TOKEN",
        file: args.token_file.as_deref(),
        config: config.auditor_token.as_deref(),
    }
    .resolve(out)?;
    if token.is_none() {
        out.note(
            "no auditor token: the feed has no private parts, so commitments and member checks are skipped",
        );
    }
    let token = token.map(|value| crate::client::Token {
        name: "auditor",
        value,
    });
    let client = args.http.client(&base, token)?;
    let bar = out.progress(0, "auditing");
    let (tx, mut rx) = mpsc::channel::<Vec<dgsp_wire::log::Entry>>(4);
    let consumer_bar = bar.clone();
    let consumer = tokio::task::spawn_blocking(move || {
        let mut auditor = auditor;
        while let Some(page) = rx.blocking_recv() {
            for e in &page {
                auditor.push(e);
            }
            consumer_bar.inc(page.len() as u64);
        }
        auditor.finish()
    });
    let fetched = source::fetch_registry(&client, &base, tx, &bar).await;
    let report = consumer
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
    bar.finish_and_clear();
    fetched?;
    Ok(report)
}
