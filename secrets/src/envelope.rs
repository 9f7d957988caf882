//! The passphrase envelope every secret file of this project uses (the registry's manager
//! key file, the member wallet of `dgsp-manager`): a key derived from the passphrase with
//! Argon2id (cost stored in the file, bounded when read), then XChaCha20-Poly1305 with the
//! file's clear fields as associated data.

use argon2::{Algorithm, Argon2, Params, Version};
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

/// Argon2id cost parameters (stored in the file, so they can be raised later).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct KdfParams {
    /// memory in KiB
    pub m_kib: u32,
    /// iterations
    pub t: u32,
    /// lanes
    pub p: u32,
}

impl Default for KdfParams {
    /// 64 MiB, 3 passes, 1 lane (RFC 9106's second recommended option, scaled to a service).
    fn default() -> Self {
        KdfParams {
            m_kib: 64 * 1024,
            t: 3,
            p: 1,
        }
    }
}

/// Most memory an Argon2id cost may ask for: 4 GiB, 64 times the default. Argon2 allocates
/// all of it at once, so a cost read from a damaged or hostile file is refused above this
/// instead of aborting the process on an allocation of up to 4 TiB.
pub const MAX_KDF_M_KIB: u32 = 4 << 20;
/// Most Argon2id passes (the time a cost read from a file may ask for is bounded too).
pub const MAX_KDF_T: u32 = 64;
/// Most Argon2id lanes.
pub const MAX_KDF_P: u32 = 64;

impl KdfParams {
    /// Refuses a cost beyond [`MAX_KDF_M_KIB`], [`MAX_KDF_T`] or [`MAX_KDF_P`], or one
    /// Argon2id does not accept (zero passes or lanes, under 8 KiB per lane).
    pub fn check(&self) -> Result<(), String> {
        if self.m_kib > MAX_KDF_M_KIB || self.t > MAX_KDF_T || self.p > MAX_KDF_P {
            return Err(format!(
                "Argon2id cost m={} KiB, t={}, p={} is beyond the most accepted \
                 (m={MAX_KDF_M_KIB} KiB, t={MAX_KDF_T}, p={MAX_KDF_P})",
                self.m_kib, self.t, self.p
            ));
        }
        Params::new(self.m_kib, self.t, self.p, Some(32))
            .map(drop)
            .map_err(|e| e.to_string())
    }
}

/// The shortest passphrase accepted for a secret file.
pub const MIN_PASSPHRASE_LEN: usize = 12;
/// Salt length used by the key files (bytes).
pub const SALT_LEN: usize = 16;
/// XChaCha20-Poly1305 nonce length (bytes).
pub const NONCE_LEN: usize = 24;

/// Derives a 32-byte key from `passphrase` and `salt` with Argon2id (v1.3) under `kdf`.
/// Fails (with a reason) only when the cost parameters ([`KdfParams::check`]) or the salt
/// are out of range.
pub fn derive_key(
    passphrase: &[u8],
    salt: &[u8],
    kdf: KdfParams,
) -> Result<Zeroizing<[u8; 32]>, String> {
    kdf.check()?;
    let params = Params::new(kdf.m_kib, kdf.t, kdf.p, Some(32)).map_err(|e| e.to_string())?;
    let mut key = Zeroizing::new([0u8; 32]);
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
        .hash_password_into(passphrase, salt, key.as_mut())
        .map_err(|e| e.to_string())?;
    Ok(key)
}

/// Encrypts `plaintext` under `key` with XChaCha20-Poly1305, authenticating `aad` too.
/// `nonce` must never be used twice with the same key (draw it at random).
pub fn seal(key: &[u8; 32], nonce: &[u8; NONCE_LEN], plaintext: &[u8], aad: &[u8]) -> Vec<u8> {
    XChaCha20Poly1305::new(key.into())
        .encrypt(
            XNonce::from_slice(nonce),
            Payload {
                msg: plaintext,
                aad,
            },
        )
        .expect("XChaCha20-Poly1305 encryption of an in-memory buffer cannot fail")
}

/// Decrypts what [`seal`] produced; `None` when the key, nonce, ciphertext or `aad` do not
/// match (wrong passphrase or a modified file) or the nonce is not [`NONCE_LEN`] bytes.
pub fn open(
    key: &[u8; 32],
    nonce: &[u8],
    ciphertext: &[u8],
    aad: &[u8],
) -> Option<Zeroizing<Vec<u8>>> {
    if nonce.len() != NONCE_LEN {
        return None;
    }
    XChaCha20Poly1305::new(key.into())
        .decrypt(
            XNonce::from_slice(nonce),
            Payload {
                msg: ciphertext,
                aad,
            },
        )
        .ok()
        .map(Zeroizing::new)
}
