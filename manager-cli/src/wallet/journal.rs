//! The use journal: an append-only file beside the wallet (`<wallet>.used`) with one
//! fixed-size record per used slot, authenticated under the wallet's journal key.
//!
//! ```text
//! dgsp-wallet-journal-v1 <journal_id, 32 hex>\n
//! u <slot, 10 digits> <MAC, 64 hex>\n          (78 bytes per record)
//! ```
//! `MAC = SHA3-256(journal_key || "dgsp-wallet-journal-v1 used" || journal_id || be64(slot))`.
//!
//! Rules (see also [`super`]):
//! - a record is appended and fsynced **before** the signature is computed or written, so a
//!   signature that exists always has its record on disk;
//! - everything after the last valid record is a *torn tail* (a crash during an append):
//!   it is resolved conservatively by [`Journal::repair`] under the lock before anything else
//!   changes the wallet; a valid record *after* an invalid one is corruption and refuses
//!   signing;
//! - the journal is never truncated, and the wallet remembers how many records it had at its
//!   last rewrite, so a journal rolled back to an older copy is detected.

use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use dgsp_secrets::file as secret_file;
use sha3::{Digest, Sha3_256};
use zeroize::Zeroizing;

use super::{crash, WalletError};
use crate::error::Error;

const TAG: &str = "dgsp-wallet-journal-v1";
const RECORD_LEN: usize = 78;

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_owned(),
        source,
    }
}

fn header(journal_id: &[u8; 16]) -> String {
    format!("{TAG} {}\n", hex::encode(journal_id))
}

fn mac(key: &[u8; 32], journal_id: &[u8; 16], slot: usize) -> [u8; 32] {
    let mut h = Sha3_256::new();
    h.update(key);
    h.update(b"dgsp-wallet-journal-v1 used");
    h.update(journal_id);
    h.update((slot as u64).to_be_bytes());
    h.finalize().into()
}

fn record(key: &[u8; 32], journal_id: &[u8; 16], slot: usize) -> String {
    format!("u {slot:010} {}\n", hex::encode(mac(key, journal_id, slot)))
}

/// The slot number of a record-shaped chunk, if its first 12 bytes are `u <10 digits>`.
fn slot_field(chunk: &[u8]) -> Option<usize> {
    let digits = chunk.get(2..12)?;
    if chunk.first() != Some(&b'u') || chunk.get(1) != Some(&b' ') {
        return None;
    }
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// A trailing region that is not a whole valid record: a crash during an append.
#[derive(Clone, Debug)]
pub struct Torn {
    /// the slot named by the torn bytes, when its number survived
    pub hint: Option<usize>,
    /// how many bytes the tail has
    pub len: usize,
}

/// The journal as read.
pub struct Journal {
    path: PathBuf,
    journal_id: [u8; 16],
    /// header and valid records
    prefix: Vec<u8>,
    /// slots recorded as used
    pub used: BTreeSet<usize>,
    /// valid records
    pub records: u64,
    /// a torn tail, until [`Journal::repair`] resolves it
    pub torn: Option<Torn>,
}

/// Creates the journal of a new wallet and syncs it. An existing journal is replaced only
/// when it holds no record (left by a keygen that stopped before writing its wallet);
/// otherwise it belongs to another wallet and is refused.
pub fn create(path: &Path, journal_id: &[u8; 16]) -> Result<(), Error> {
    let head = header(journal_id);
    match secret_file::read(path) {
        Err(e) if e.is_not_found() => crate::io::write_new_atomic(path, head.as_bytes(), 0o600),
        Err(e) => Err(e.into()),
        Ok(old) if old.len() == head.len() && old.starts_with(TAG.as_bytes()) => {
            crate::io::write_atomic(path, head.as_bytes(), 0o600)
        }
        Ok(_) => Err(WalletError::Exists {
            path: path.to_owned(),
            what: "a use journal with records (it belongs to another wallet; move it away)",
        }
        .into()),
    }
}

impl Journal {
    /// Reads and checks the journal of the wallet with `journal_id`. A valid record may
    /// name a slot the wallet does not have (a wallet file restored from an older copy):
    /// it stays used, so such a slot number is never handed out.
    pub fn read(path: &Path, journal_id: &[u8; 16], key: &[u8; 32]) -> Result<Journal, Error> {
        let bytes = secret_file::read(path).map_err(|e| -> Error {
            if e.is_not_found() {
                WalletError::JournalMissing {
                    path: path.to_owned(),
                }
                .into()
            } else {
                e.into()
            }
        })?;
        Journal::parse(path, bytes, journal_id, key)
    }

    /// Checks the `bytes` of the journal at `path`, as [`Journal::read`] does.
    pub fn parse(
        path: &Path,
        mut bytes: Zeroizing<Vec<u8>>,
        journal_id: &[u8; 16],
        key: &[u8; 32],
    ) -> Result<Journal, Error> {
        let corrupt = |reason: String| -> Error {
            WalletError::JournalCorrupt {
                path: path.to_owned(),
                reason,
            }
            .into()
        };
        let head = header(journal_id);
        if !bytes.starts_with(head.as_bytes()) {
            return Err(corrupt(
                "its header does not name this wallet (a journal of another wallet?)".into(),
            ));
        }
        let body = &bytes[head.len()..];
        let mut used = BTreeSet::new();
        let mut valid = 0;
        let mut first_bad = None;
        for (i, chunk) in body.chunks(RECORD_LEN).enumerate() {
            let slot = slot_field(chunk).filter(|&s| {
                chunk.len() == RECORD_LEN
                    && chunk[RECORD_LEN - 1] == b'\n'
                    && chunk[..RECORD_LEN] == *record(key, journal_id, s).as_bytes()
            });
            match (slot, first_bad) {
                (Some(s), None) => {
                    used.insert(s);
                    valid += 1;
                }
                (Some(_), Some(bad)) => {
                    return Err(corrupt(format!(
                        "record {} is damaged but valid records follow it; a certificate \
                         might be reused, so the wallet refuses to sign",
                        bad + 1
                    )))
                }
                (None, None) => first_bad = Some(i),
                (None, Some(_)) => {}
            }
        }
        let prefix_len = head.len() + valid * RECORD_LEN;
        let torn = first_bad.map(|_| Torn {
            hint: slot_field(&bytes[prefix_len..]),
            len: bytes.len() - prefix_len,
        });
        // The journal holds no secret: its bytes leave the zeroizing buffer as they are.
        let mut prefix = std::mem::take(&mut *bytes);
        prefix.truncate(prefix_len);
        Ok(Journal {
            path: path.to_owned(),
            journal_id: *journal_id,
            prefix,
            used,
            records: valid as u64,
            torn,
        })
    }

    /// Resolves a torn tail: marks `candidates` used (the caller passes the tail's slot, if
    /// it survived, and the slot the interrupted `sign` would have taken), by replacing the
    /// journal atomically with its valid records plus theirs. Nothing is ever un-used.
    pub fn repair(&mut self, key: &[u8; 32], candidates: &BTreeSet<usize>) -> Result<(), Error> {
        if self.torn.is_none() {
            return Ok(());
        }
        let mut bytes = self.prefix.clone();
        let mut added = Vec::new();
        for &slot in candidates {
            if !self.used.contains(&slot) {
                bytes.extend_from_slice(record(key, &self.journal_id, slot).as_bytes());
                added.push(slot);
            }
        }
        crate::io::write_atomic(&self.path, &bytes, 0o600)?;
        self.prefix = bytes;
        self.records += added.len() as u64;
        self.used.extend(added);
        self.torn = None;
        Ok(())
    }

    /// Appends the record for `slot` and syncs it: when this returns, the slot is used for
    /// good. Refused while a torn tail is unresolved.
    pub fn append(&mut self, key: &[u8; 32], slot: usize) -> Result<(), Error> {
        if self.torn.is_some() {
            return Err(WalletError::JournalCorrupt {
                path: self.path.clone(),
                reason: "a torn record must be resolved first".into(),
            }
            .into());
        }
        let rec = record(key, &self.journal_id, slot);
        let mut f = secret_file::open_with(fs::OpenOptions::new().append(true), &self.path)?;
        if crash::armed("torn-record") {
            let _ = f.write_all(&rec.as_bytes()[..RECORD_LEN / 2]);
            let _ = f.sync_all();
            crash::now();
        }
        f.write_all(rec.as_bytes()).map_err(io_err(&self.path))?;
        crash::at("after-journal-write");
        f.sync_all().map_err(io_err(&self.path))?;
        self.prefix.extend_from_slice(rec.as_bytes());
        self.used.insert(slot);
        self.records += 1;
        Ok(())
    }
}
