//! The member's wallet: the member key, the group key and the one-time keys (slots), each
//! requested (pending), then certified, then used exactly once.
//!
//! Three files sit together:
//! - `<wallet>` — the encrypted wallet ([`envelope`]: JSON with clear, authenticated fields;
//!   [`payload`]: the secret contents). Mode 0600; refused when group or world bits are set.
//!   Rewritten only by `csr` and `import`, atomically (temporary file, fsync, rename,
//!   directory fsync), under the lock.
//! - `<wallet>.used` — the use journal ([`journal`]): one authenticated record per used slot,
//!   appended and fsynced by `sign` **before** the signature is computed, so no crash can
//!   make the wallet sign twice with one certificate.
//! - `<wallet>.lock` — `flock`ed exclusively by every command that reads the slots' state.
//!
//! A slot is used if the journal or the wallet (folded in at the last rewrite) says so:
//! knowledge of use is only ever added. Rules on doubt, all conservative:
//! - a torn journal tail (crash during an append) is resolved at the next command by
//!   marking used both the slot it names (if its number survived) and the slot the
//!   interrupted `sign` was taking (the first certified unused one: the certified set cannot
//!   change in between, because every writer resolves the tail first, under the lock);
//! - a damaged record followed by valid ones, a missing journal, a journal of another wallet
//!   or one with fewer records than the wallet last saw: signing is refused.
//!
//! Wallet and journal must be backed up and restored together; restoring the journal alone
//! from an older copy is detected once the wallet has been rewritten after the copy.

pub mod crash;
pub mod envelope;
pub mod import;
pub mod journal;
pub mod passphrase;
pub mod payload;

mod error;

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use dgsp_core::{
    Certificate, CsrItem, ManagerPublicKey, MemberId, MemberKey, ParamSet, Signature, WotsPk,
    WotsSeed,
};
use dgsp_secrets::envelope::{KdfParams, MAX_KDF_M_KIB, MAX_KDF_P, MAX_KDF_T};
use rand_core::{OsRng, RngCore};
use serde::Serialize;

pub use error::WalletError;

use crate::config::Config;
use crate::error::Error;
use envelope::{Envelope, Keys};
use journal::Journal;
use payload::{Payload, Slot};

/// Read at `member keygen` only: cheaper Argon2id costs as `m_kib,t,p` (for tests and slow
/// machines; the default is 65536,3,1). The chosen costs are stored in the wallet.
pub const KDF_ENV: &str = "DGSP_WALLET_KDF";

/// The three files of a wallet.
#[derive(Clone, Debug)]
pub struct Paths {
    /// the encrypted wallet
    pub wallet: PathBuf,
    /// the use journal (`<wallet>.used`)
    pub journal: PathBuf,
    /// the lock file (`<wallet>.lock`)
    pub lock: PathBuf,
}

impl Paths {
    /// The files of the wallet at `wallet`.
    pub fn new(wallet: PathBuf) -> Paths {
        let with = |suffix: &str| {
            let mut s = wallet.clone().into_os_string();
            s.push(suffix);
            PathBuf::from(s)
        };
        Paths {
            journal: with(".used"),
            lock: with(".lock"),
            wallet,
        }
    }

    /// `--wallet` / `$DGSP_WALLET`, else the config file's `wallet`, else [`default_path`].
    pub fn resolve(arg: Option<&Path>, config: &Config) -> Result<Paths, Error> {
        arg.map(Path::to_owned)
            .or_else(|| config.wallet.clone())
            .or_else(default_path)
            .map(Paths::new)
            .ok_or_else(|| {
                Error::Config(
                    "no wallet path: pass --wallet FILE (or set $DGSP_WALLET, or $HOME)".into(),
                )
            })
    }
}

/// `$XDG_DATA_HOME/dgsp-manager/wallet.json` (or `~/.local/share/...`).
pub fn default_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))?;
    Some(base.join("dgsp-manager").join("wallet.json"))
}

/// The Argon2id costs for a new wallet: [`KDF_ENV`] if set, else the default. The flag says
/// whether the variable was used.
pub fn kdf_for_new_wallet() -> Result<(KdfParams, bool), Error> {
    let Some(value) = std::env::var_os(KDF_ENV) else {
        return Ok((KdfParams::default(), false));
    };
    let bad = || {
        Error::Config(format!(
            "${KDF_ENV} must be m_kib,t,p (three positive integers, e.g. 65536,3,1; at most \
             {MAX_KDF_M_KIB},{MAX_KDF_T},{MAX_KDF_P})"
        ))
    };
    let text = value.into_string().map_err(|_| bad())?;
    let parts: Vec<u32> = text
        .split(',')
        .map(|p| p.trim().parse::<u32>())
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    match parts[..] {
        [m_kib, t, p] if (KdfParams { m_kib, t, p }).check().is_ok() => {
            Ok((KdfParams { m_kib, t, p }, true))
        }
        _ => Err(bad()),
    }
}

/// How many slots are in each state.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Counts {
    /// certified and not used: signatures left
    pub certified_unused: usize,
    /// certified and used
    pub used: usize,
    /// requested, certificate not imported yet
    pub pending: usize,
    /// all slots
    pub total: usize,
}

/// An opened wallet: its clear header and the keys derived from the passphrase.
pub struct Wallet {
    paths: Paths,
    header: Envelope,
    keys: Keys,
}

fn sync_dir(path: &Path) -> Result<(), Error> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|source| Error::Io {
            path: dir.to_owned(),
            source,
        })
}

fn lock_file(paths: &Paths, on_wait: impl FnOnce()) -> Result<fs::File, Error> {
    let io = |source| Error::Io {
        path: paths.lock.clone(),
        source,
    };
    let file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&paths.lock)
        .map_err(io)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => {
            on_wait();
            file.lock().map_err(io)?;
        }
        Err(fs::TryLockError::Error(e)) => return Err(io(e)),
    }
    Ok(file)
}

impl Wallet {
    /// Creates a new wallet (refusing to overwrite one) holding `member` for `group`.
    pub fn create(
        paths: Paths,
        member: &MemberKey,
        group: &ManagerPublicKey,
        passphrase: &[u8],
        kdf: KdfParams,
    ) -> Result<Wallet, Error> {
        if let Some(dir) = paths.wallet.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|source| Error::Io {
                    path: dir.to_owned(),
                    source,
                })?;
        }
        let _lock = lock_file(&paths, || {})?;
        if paths.wallet.exists() {
            return Err(WalletError::Exists {
                path: paths.wallet.clone(),
                what: "a wallet (wallets are never overwritten)",
            }
            .into());
        }
        let header = envelope::new_header(member.params(), member.id(), &group.fingerprint(), kdf);
        let keys = envelope::derive(&paths.wallet, &header, passphrase)?;
        let mut journal_id = [0u8; 16];
        OsRng.fill_bytes(&mut journal_id);
        let payload = Payload {
            member: member.clone(),
            group: group.clone(),
            journal_id,
            journal_records: 0,
            slots: Vec::new(),
        };
        journal::create(&paths.journal, &journal_id)?;
        let bytes = envelope::seal(&header, &keys, &payload.encode());
        crate::io::write_new_atomic(&paths.wallet, &bytes, 0o600)?;
        sync_dir(&paths.wallet)?;
        Ok(Wallet {
            paths,
            header,
            keys,
        })
    }

    /// Opens a wallet: reads its clear header and derives the keys (the one Argon2id run of
    /// the command). Nothing is decrypted yet: the passphrase is checked by the first
    /// [`Wallet::snapshot`] or [`Wallet::lock`], which read the contents anyway.
    pub fn open(paths: Paths, passphrase: &[u8]) -> Result<Wallet, Error> {
        let mut header = envelope::read(&paths.wallet)?;
        // Only the clear fields are kept (and cloned at every rewrite), not the ciphertext.
        header.nonce = String::new();
        header.ciphertext = String::new();
        let keys = envelope::derive(&paths.wallet, &header, passphrase)?;
        Ok(Wallet {
            paths,
            header,
            keys,
        })
    }

    /// The files.
    pub fn paths(&self) -> &Paths {
        &self.paths
    }

    /// The parameter set.
    pub fn params(&self) -> ParamSet {
        self.header.params
    }

    /// The member id.
    pub fn id(&self) -> MemberId {
        self.header.id
    }

    /// The group fingerprint (hex).
    pub fn fingerprint(&self) -> &str {
        &self.header.group_fingerprint
    }

    /// The Argon2id costs the wallet uses.
    pub fn kdf(&self) -> KdfParams {
        self.header.kdf
    }

    /// Reads the current contents without the lock (for work that does not depend on use:
    /// matching and checking certificates before an import).
    pub fn snapshot(&self) -> Result<Payload, Error> {
        let path = &self.paths.wallet;
        let env = envelope::read(path)?;
        if env.salt != self.header.salt || env.kdf != self.header.kdf || env.id != self.header.id {
            return Err(WalletError::Malformed {
                path: path.clone(),
                reason: "the wallet file was replaced by another one while in use".into(),
            }
            .into());
        }
        let bytes = envelope::open(path, &env, &self.keys)?;
        let payload = Payload::decode(&bytes).map_err(|reason| WalletError::Malformed {
            path: path.clone(),
            reason: format!("payload: {reason}"),
        })?;
        let m = &payload.member;
        if m.id() != env.id
            || m.params() != env.params
            || hex::encode(payload.group.fingerprint()) != env.group_fingerprint
        {
            return Err(WalletError::Malformed {
                path: path.clone(),
                reason: "the payload does not match the clear fields".into(),
            }
            .into());
        }
        Ok(payload)
    }

    /// Takes the lock and loads the contents and the journal, resolving a torn journal
    /// tail first. `on_wait` runs if another process holds the lock.
    pub fn lock(&self, on_wait: impl FnOnce()) -> Result<Locked<'_>, Error> {
        let file = lock_file(&self.paths, on_wait)?;
        let payload = self.snapshot()?;
        let journal = Journal::read(
            &self.paths.journal,
            &payload.journal_id,
            self.keys.journal(),
        )?;
        if journal.records < payload.journal_records {
            return Err(WalletError::JournalRolledBack {
                path: self.paths.journal.clone(),
                found: journal.records,
                expected: payload.journal_records,
            }
            .into());
        }
        let mut locked = Locked {
            wallet: self,
            _file: file,
            payload,
            repaired: journal.torn.clone(),
            journal,
        };
        if let Some(torn) = &locked.repaired {
            let candidates: BTreeSet<usize> = torn
                .hint
                .into_iter()
                .chain(locked.first_available())
                .collect();
            locked.journal.repair(self.keys.journal(), &candidates)?;
        }
        Ok(locked)
    }
}

/// A wallet under its lock, contents loaded. Dropping it releases the lock.
pub struct Locked<'a> {
    wallet: &'a Wallet,
    _file: fs::File,
    /// the contents
    pub payload: Payload,
    journal: Journal,
    /// the torn journal tail resolved while loading, if there was one
    pub repaired: Option<journal::Torn>,
}

impl Locked<'_> {
    /// Is slot `i` used (journal or wallet)?
    pub fn is_used(&self, i: usize) -> bool {
        self.payload.slots.get(i).is_some_and(|s| s.used) || self.journal.used.contains(&i)
    }

    /// The first certified unused slot: the one [`Locked::take`] hands out.
    fn first_available(&self) -> Option<usize> {
        (0..self.payload.slots.len())
            .find(|&i| self.payload.slots[i].certificate.is_some() && !self.is_used(i))
    }

    /// Slots per state.
    pub fn counts(&self) -> Counts {
        let mut c = Counts {
            total: self.payload.slots.len(),
            ..Counts::default()
        };
        for (i, slot) in self.payload.slots.iter().enumerate() {
            match (&slot.certificate, self.is_used(i)) {
                (None, _) => c.pending += 1,
                (Some(_), true) => c.used += 1,
                (Some(_), false) => c.certified_unused += 1,
            }
        }
        c
    }

    /// Adds pending slots for freshly prepared CSR items (call [`Locked::save`] after).
    pub fn add_pending(&mut self, items: &[CsrItem]) {
        self.payload.slots.extend(items.iter().map(|item| Slot {
            wots_seed: item.wots_seed().clone(),
            wots_pk: *item.wots_pk(),
            certificate: None,
            used: false,
        }));
    }

    /// Rewrites the wallet atomically, folding the journal's knowledge into it.
    pub fn save(&mut self) -> Result<(), Error> {
        for &i in &self.journal.used {
            if let Some(slot) = self.payload.slots.get_mut(i) {
                slot.used = true;
            }
        }
        self.payload.journal_records = self.journal.records;
        let bytes = envelope::seal(
            &self.wallet.header,
            &self.wallet.keys,
            &self.payload.encode(),
        );
        crate::io::write_atomic(&self.wallet.paths.wallet, &bytes, 0o600)
    }

    /// Takes the first certified unused slot: records its use durably, releases the lock,
    /// and returns what signs with it. Refused when none is left.
    pub fn take(mut self) -> Result<Ticket, Error> {
        let Some(slot) = self.first_available() else {
            let c = self.counts();
            return Err(WalletError::Exhausted {
                used: c.used,
                pending: c.pending,
            }
            .into());
        };
        crash::at("before-journal");
        self.journal.append(self.wallet.keys.journal(), slot)?;
        crash::at("after-fsync");
        let left = self.counts();
        let path = self.wallet.paths.wallet.clone();
        let Locked { payload, _file, .. } = self;
        drop(_file); // releases the lock: the use is on disk
        let Payload {
            member,
            group,
            mut slots,
            ..
        } = payload;
        let taken = slots.swap_remove(slot);
        let certificate = taken.certificate.ok_or(WalletError::Malformed {
            path,
            reason: "the chosen slot has no certificate".into(),
        })?;
        Ok(Ticket {
            member,
            group,
            seed: taken.wots_seed,
            wots_pk: taken.wots_pk,
            certificate,
            left,
        })
    }
}

/// One certificate, recorded as used: signs exactly one message.
pub struct Ticket {
    member: MemberKey,
    group: ManagerPublicKey,
    seed: WotsSeed,
    wots_pk: WotsPk,
    certificate: Certificate,
    /// counts after this use
    pub left: Counts,
}

impl Ticket {
    /// The certificate's zeta (public: it is in the signature).
    pub fn zeta(&self) -> &dgsp_core::Zeta {
        self.certificate.zeta()
    }

    /// Signs `message`: the online part only. The certificate was checked against the group
    /// key, and the slot's WOTS+ key against its seed, when `member import` stored it
    /// ([`import::verify`]); the sealed wallet keeps both from changing since, so neither
    /// is redone here ([`MemberKey::resume`]).
    pub fn sign(self, message: &[u8]) -> Result<Signature, Error> {
        let item = CsrItem::from_stored(&self.member, self.seed, self.wots_pk);
        let key = self.member.resume(&self.group, item, &self.certificate)?;
        Ok(key.sign(message))
    }
}
