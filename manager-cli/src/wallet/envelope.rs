//! The wallet file at rest: a JSON envelope whose clear fields (format, parameter set, member
//! id, group fingerprint, KDF parameters, salt) are the AEAD's associated data, and whose
//! ciphertext is the binary payload ([`super::payload`]) under XChaCha20-Poly1305.
//!
//! The passphrase goes through Argon2id once per command (the same construction as the
//! manager key file, [`dgsp_secrets::envelope`]); two sub-keys are derived from its output
//! with SHA3-256: one encrypts the payload, one authenticates the use journal.

use std::path::Path;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::{MemberId, ParamSet};
use dgsp_secrets::envelope::{self as keyfile, KdfParams, NONCE_LEN, SALT_LEN};
use dgsp_secrets::file as secret_file;
use rand_core::{OsRng, RngCore};
use serde::{Deserialize, Serialize};
use sha3::{Digest, Sha3_256};
use zeroize::{Zeroize, Zeroizing};

use super::WalletError;
use crate::error::Error;

/// `format` of a wallet file.
pub const WALLET_FORMAT: &str = "dgsp-wallet-v1";

/// The clear part of a wallet file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    /// always [`WALLET_FORMAT`]
    pub format: String,
    /// parameter set of the group
    pub params: ParamSet,
    /// member id
    pub id: MemberId,
    /// SHA3-256 of the group public key (hex)
    pub group_fingerprint: String,
    /// Argon2id cost
    pub kdf: KdfParams,
    /// Argon2id salt (base64); fixed for the life of the wallet
    pub salt: String,
    /// XChaCha20-Poly1305 nonce (base64); fresh on every rewrite
    pub nonce: String,
    /// the encrypted payload (base64)
    pub ciphertext: String,
}

impl Envelope {
    /// The associated data: every clear field except the nonce and the ciphertext.
    fn aad(&self) -> Vec<u8> {
        format!(
            "{}|{}|{}|{}|{},{},{}|{}",
            self.format,
            self.params,
            self.id,
            self.group_fingerprint,
            self.kdf.m_kib,
            self.kdf.t,
            self.kdf.p,
            self.salt
        )
        .into_bytes()
    }
}

/// The keys derived from the passphrase: zeroized when dropped.
pub struct Keys {
    payload: Zeroizing<[u8; 32]>,
    journal: Zeroizing<[u8; 32]>,
}

impl Keys {
    /// The key that authenticates use-journal records.
    pub fn journal(&self) -> &[u8; 32] {
        &self.journal
    }
}

fn subkey(root: &[u8; 32], label: &str) -> Zeroizing<[u8; 32]> {
    let mut h = Sha3_256::new();
    h.update(label.as_bytes());
    h.update(root);
    let mut out = h.finalize();
    let mut key = Zeroizing::new([0u8; 32]);
    key.copy_from_slice(&out);
    out.as_mut_slice().zeroize();
    key
}

/// A fresh envelope header for a new wallet (random salt; nonce and ciphertext empty).
pub fn new_header(
    params: ParamSet,
    id: MemberId,
    fingerprint: &[u8; 32],
    kdf: KdfParams,
) -> Envelope {
    let mut salt = [0u8; SALT_LEN];
    OsRng.fill_bytes(&mut salt);
    Envelope {
        format: WALLET_FORMAT.into(),
        params,
        id,
        group_fingerprint: hex::encode(fingerprint),
        kdf,
        salt: B64.encode(salt),
        nonce: String::new(),
        ciphertext: String::new(),
    }
}

/// Derives the wallet keys from the passphrase (Argon2id with the envelope's cost and salt).
pub fn derive(path: &Path, env: &Envelope, passphrase: &[u8]) -> Result<Keys, Error> {
    let salt = B64
        .decode(&env.salt)
        .map_err(|e| malformed(path, format!("salt: {e}")))?;
    let root = keyfile::derive_key(passphrase, &salt, env.kdf)
        .map_err(|e| malformed(path, format!("kdf: {e}")))?;
    Ok(Keys {
        payload: subkey(&root, "dgsp-wallet-v1 payload key"),
        journal: subkey(&root, "dgsp-wallet-v1 journal key"),
    })
}

fn malformed(path: &Path, reason: impl Into<String>) -> Error {
    WalletError::Malformed {
        path: path.to_owned(),
        reason: reason.into(),
    }
    .into()
}

/// Reads the clear envelope. The file is read through [`secret_file`]: a symbolic link, a
/// non-regular file or one other users can access is refused; it must be of this format.
pub fn read(path: &Path) -> Result<Envelope, Error> {
    let bytes = secret_file::read(path).map_err(|e| -> Error {
        if e.is_not_found() {
            WalletError::NotFound {
                path: path.to_owned(),
            }
            .into()
        } else {
            e.into()
        }
    })?;
    parse(path, &bytes)
}

/// Parses the `bytes` of the wallet file at `path` into its clear envelope.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Envelope, Error> {
    let env: Envelope = serde_json::from_slice(bytes).map_err(|e| {
        let tag = serde_json::from_slice::<serde_json::Value>(bytes)
            .ok()
            .and_then(|v| v.get("format").and_then(|f| f.as_str()).map(str::to_owned));
        match tag {
            Some(f) if f != WALLET_FORMAT => malformed(
                path,
                format!("this is a {f} file, not a {WALLET_FORMAT} wallet"),
            ),
            _ => malformed(path, e.to_string()),
        }
    })?;
    if env.format != WALLET_FORMAT {
        return Err(malformed(
            path,
            format!("format {:?}, expected {WALLET_FORMAT:?}", env.format),
        ));
    }
    Ok(env)
}

/// Decrypts the payload bytes; a wrong passphrase or a modified file is refused.
pub fn open(path: &Path, env: &Envelope, keys: &Keys) -> Result<Zeroizing<Vec<u8>>, Error> {
    let nonce = B64
        .decode(&env.nonce)
        .map_err(|e| malformed(path, format!("nonce: {e}")))?;
    let ct = B64
        .decode(&env.ciphertext)
        .map_err(|e| malformed(path, format!("ciphertext: {e}")))?;
    keyfile::open(&keys.payload, &nonce, &ct, &env.aad()).ok_or_else(|| {
        WalletError::WrongPassphrase {
            path: path.to_owned(),
        }
        .into()
    })
}

/// Encrypts `payload` under a fresh nonce into a copy of `header`; returns the file bytes.
pub fn seal(header: &Envelope, keys: &Keys, payload: &[u8]) -> Vec<u8> {
    let mut nonce = [0u8; NONCE_LEN];
    OsRng.fill_bytes(&mut nonce);
    let mut env = header.clone();
    env.nonce = B64.encode(nonce);
    env.ciphertext = B64.encode(keyfile::seal(&keys.payload, &nonce, payload, &env.aad()));
    let mut json = serde_json::to_vec_pretty(&env).expect("the envelope serializes");
    json.push(b'\n');
    json
}
