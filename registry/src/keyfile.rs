//! The manager's secret key at rest: encrypted with a key derived from a passphrase
//! (Argon2id) under XChaCha20-Poly1305, in a small JSON envelope.
//!
//! The envelope's clear fields (format, parameter set, public key) are the AEAD's associated
//! data, so they cannot be swapped without the decryption failing. Files are written with
//! mode 0600, atomically (a temporary file in the same directory, synced, then linked into
//! place only if nothing is there yet), and read through [`secret_file`]: a symbolic
//! link, a non-regular file or one other users can access is refused.
//!
//! The passphrase crypto itself ([`derive_key`], [`seal`], [`open`]) is public so other
//! secret files (the member wallet of `dgsp-manager`) use the same construction.

use std::path::{Path, PathBuf};

pub use dgsp_secrets::envelope::{
    derive_key, open, seal, KdfParams, MAX_KDF_M_KIB, MAX_KDF_P, MAX_KDF_T, MIN_PASSPHRASE_LEN,
    NONCE_LEN, SALT_LEN,
};
use dgsp_secrets::file::{self as secret_file, SecretFileError};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::{ManagerPublicKey, ManagerSecretKey, ParamSet};
use rand_core::{OsRng, RngCore};
use serde::{Deserialize, Serialize};

/// Envelope format name.
const FORMAT: &str = "dgsp-manager-key-v1";

/// Why a key file could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    /// File system error.
    #[error("{path}: {source}")]
    Io {
        /// the file
        path: PathBuf,
        /// the cause
        #[source]
        source: std::io::Error,
    },
    /// The key file is refused (a symbolic link, not a regular file, readable by other
    /// users) or cannot be read: see [`SecretFileError`].
    #[error(transparent)]
    Secret(#[from] SecretFileError),
    /// Not a key envelope of this format.
    #[error("{path}: not a DGSP manager key file: {reason}")]
    Malformed {
        /// the file
        path: PathBuf,
        /// what is wrong
        reason: String,
    },
    /// Wrong passphrase, or the file was modified.
    #[error("{path}: cannot decrypt the manager key: wrong passphrase or tampered file")]
    Decrypt {
        /// the file
        path: PathBuf,
    },
    /// The passphrase is empty or too short.
    #[error("the key passphrase must be at least 12 characters")]
    WeakPassphrase,
}

#[derive(Serialize, Deserialize)]
struct Envelope {
    format: String,
    params: ParamSet,
    public_key: String,
    kdf: KdfParams,
    salt: String,
    nonce: String,
    ciphertext: String,
}

impl Envelope {
    fn aad(&self) -> Vec<u8> {
        format!("{}|{}|{}", self.format, self.params, self.public_key).into_bytes()
    }
}

/// Encrypts `sk` under `passphrase` and writes it to `path`: mode 0600 whatever the umask,
/// atomically (readers and crashes see no file or the whole file), and never over an
/// existing file or link.
pub fn write(
    path: &Path,
    sk: &ManagerSecretKey,
    passphrase: &[u8],
    kdf: KdfParams,
) -> Result<(), KeyFileError> {
    if passphrase.len() < MIN_PASSPHRASE_LEN {
        return Err(KeyFileError::WeakPassphrase);
    }
    let io = |source| KeyFileError::Io {
        path: path.to_owned(),
        source,
    };
    let mut salt = [0u8; SALT_LEN];
    let mut nonce = [0u8; NONCE_LEN];
    OsRng.fill_bytes(&mut salt);
    OsRng.fill_bytes(&mut nonce);
    let key = derive_key(passphrase, &salt, kdf).map_err(|reason| KeyFileError::Malformed {
        path: path.to_owned(),
        reason,
    })?;
    let mut env = Envelope {
        format: FORMAT.into(),
        params: sk.params(),
        public_key: B64.encode(sk.public_key().to_bytes()),
        kdf,
        salt: B64.encode(salt),
        nonce: B64.encode(nonce),
        ciphertext: String::new(),
    };
    let aad = env.aad();
    let plaintext = sk.to_bytes();
    let ct = seal(&key, &nonce, &plaintext, &aad);
    env.ciphertext = B64.encode(ct);
    let json = serde_json::to_vec_pretty(&env).expect("envelope serializes");
    dgsp_secrets::write::write_new(path, &json, "key files").map_err(io)
}

/// Reads the public key from a key file without the passphrase.
pub fn read_public(path: &Path) -> Result<ManagerPublicKey, KeyFileError> {
    let env = read_envelope(path)?;
    public_of(path, &env)
}

fn public_of(path: &Path, env: &Envelope) -> Result<ManagerPublicKey, KeyFileError> {
    let bad = |reason: String| KeyFileError::Malformed {
        path: path.to_owned(),
        reason,
    };
    let bytes = B64
        .decode(&env.public_key)
        .map_err(|e| bad(format!("public_key: {e}")))?;
    ManagerPublicKey::from_bytes(&bytes).map_err(|e| bad(format!("public_key: {e}")))
}

fn read_envelope(path: &Path) -> Result<Envelope, KeyFileError> {
    let text = secret_file::read(path)?;
    let env: Envelope = serde_json::from_slice(&text).map_err(|e| KeyFileError::Malformed {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    if env.format != FORMAT {
        return Err(KeyFileError::Malformed {
            path: path.to_owned(),
            reason: format!("format {:?}, expected {FORMAT:?}", env.format),
        });
    }
    Ok(env)
}

/// Reads and decrypts the manager's secret key; checks it matches the stored public key.
pub fn read(path: &Path, passphrase: &[u8]) -> Result<ManagerSecretKey, KeyFileError> {
    let env = read_envelope(path)?;
    let bad = |reason: String| KeyFileError::Malformed {
        path: path.to_owned(),
        reason,
    };
    let salt = B64
        .decode(&env.salt)
        .map_err(|e| bad(format!("salt: {e}")))?;
    let nonce = B64
        .decode(&env.nonce)
        .map_err(|e| bad(format!("nonce: {e}")))?;
    let ct = B64
        .decode(&env.ciphertext)
        .map_err(|e| bad(format!("ciphertext: {e}")))?;
    if nonce.len() != NONCE_LEN {
        return Err(bad(format!(
            "nonce is {} bytes, expected {NONCE_LEN}",
            nonce.len()
        )));
    }
    let key = derive_key(passphrase, &salt, env.kdf).map_err(bad)?;
    let aad = env.aad();
    let plaintext = open(&key, &nonce, &ct, &aad).ok_or_else(|| KeyFileError::Decrypt {
        path: path.to_owned(),
    })?;
    let sk = ManagerSecretKey::from_bytes(&plaintext).map_err(|e| bad(e.to_string()))?;
    if sk.public_key() != public_of(path, &env)? || sk.params() != env.params {
        return Err(bad(
            "the secret key does not match the envelope's public key".into(),
        ));
    }
    Ok(sk)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dgsp_core::ParamSet;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    const FAST: KdfParams = KdfParams {
        m_kib: 64,
        t: 1,
        p: 1,
    };
    const PASS: &[u8] = b"a long enough passphrase";

    fn key() -> ManagerSecretKey {
        ManagerSecretKey::generate(ParamSet::Sha2_128f, &mut OsRng)
    }

    #[test]
    fn round_trip_and_refusals() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manager.key");
        let sk = key();
        write(&path, &sk, PASS, FAST).unwrap();
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(read(&path, PASS).unwrap().to_bytes(), sk.to_bytes());
        assert_eq!(read_public(&path).unwrap(), sk.public_key());
        // The file holds no secret in the clear.
        let text = fs::read_to_string(&path).unwrap();
        assert!(!text.contains(&B64.encode(&sk.to_bytes()[4..20])));

        assert!(matches!(
            read(&path, b"the wrong passphrase"),
            Err(KeyFileError::Decrypt { .. })
        ));
        assert!(
            matches!(write(&path, &sk, PASS, FAST), Err(KeyFileError::Io { .. })),
            "never overwrites"
        );
        assert!(matches!(
            write(&dir.path().join("x"), &sk, b"short", FAST),
            Err(KeyFileError::WeakPassphrase)
        ));

        // Swapping the public key in the clear fields breaks decryption (it is AAD).
        let mut env: serde_json::Value = serde_json::from_str(&text).unwrap();
        env["public_key"] = B64.encode(key().public_key().to_bytes()).into();
        let forged = dir.path().join("forged.key");
        fs::write(&forged, serde_json::to_vec(&env).unwrap()).unwrap();
        fs::set_permissions(&forged, fs::Permissions::from_mode(0o600)).unwrap();
        assert!(matches!(
            read(&forged, PASS),
            Err(KeyFileError::Decrypt { .. })
        ));

        for mode in [0o644, 0o640, 0o604] {
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
            let err = read(&path, PASS).unwrap_err();
            assert!(
                matches!(&err, KeyFileError::Secret(SecretFileError::TooOpen { mode: m, .. }) if *m == mode),
                "{mode:o}: {err:?}"
            );
            assert!(err.to_string().contains("chmod 600"), "{err}");
            assert!(matches!(
                read_public(&path),
                Err(KeyFileError::Secret(SecretFileError::TooOpen { .. }))
            ));
        }
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.path().join("link.key");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert!(matches!(
            read(&link, PASS),
            Err(KeyFileError::Secret(SecretFileError::Symlink { .. }))
        ));
    }

    #[test]
    fn a_file_asking_for_a_huge_argon2_cost_is_refused_before_allocating() {
        // Found by review while fuzzing the wallet envelope (same construction): a cost of
        // 4 TiB made Argon2 abort the process on its allocation, before any check.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manager.key");
        write(&path, &key(), PASS, FAST).unwrap();
        let env: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        for (field, value) in [("m_kib", u32::MAX), ("t", u32::MAX), ("p", MAX_KDF_P + 1)] {
            let mut e = env.clone();
            e["kdf"][field] = value.into();
            let bad = dir.path().join(format!("{field}.key"));
            fs::write(&bad, serde_json::to_vec(&e).unwrap()).unwrap();
            fs::set_permissions(&bad, fs::Permissions::from_mode(0o600)).unwrap();
            let err = read(&bad, PASS).unwrap_err();
            assert!(
                matches!(&err, KeyFileError::Malformed { reason, .. } if reason.contains("beyond")),
                "{field}: {err:?}"
            );
        }
        assert!(derive_key(
            PASS,
            &[0; SALT_LEN],
            KdfParams {
                m_kib: MAX_KDF_M_KIB + 1,
                t: 1,
                p: 1
            }
        )
        .is_err());
        assert!(KdfParams::default().check().is_ok());
        assert!(KdfParams {
            m_kib: 8,
            t: 0,
            p: 1
        }
        .check()
        .is_err());
    }

    #[test]
    fn writing_is_atomic_private_and_never_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let sk = key();
        let path = dir.path().join("manager.key");
        write(&path, &sk, PASS, FAST).unwrap();
        let meta = fs::symlink_metadata(&path).unwrap();
        assert!(meta.file_type().is_file());
        assert_eq!(meta.permissions().mode() & 0o7777, 0o600);
        // Only the key file: the temporary file is gone.
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("manager.key")]);

        // A dangling link where the key would go is not followed nor replaced.
        let target = dir.path().join("elsewhere");
        let link = dir.path().join("linked.key");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(matches!(
            write(&link, &sk, PASS, FAST),
            Err(KeyFileError::Io { .. })
        ));
        assert!(!target.exists());
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        let names = fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(names, 2, "no temporary file left behind");
    }
}
