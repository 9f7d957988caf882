//! # dgsp-core
//!
//! DGSP, a post-quantum, fully dynamic group signature scheme built on SPHINCS+
//! (IACR ePrint 2025/760), implemented to the project's specification `dgsp-v1`.
//!
//! Members of a group sign anonymously; anyone verifies with the group public key; the
//! manager can open a signature to its signer and anyone can judge whether the opening is
//! right; revoking a member invalidates all of its certificates and signatures.
//!
//! ```
//! # #[cfg(feature = "sign")] {
//! use dgsp_core::{InMemoryPlm, InMemoryRevokedList, Manager, MemberKey, ParamSet};
//! let mut rng = rand_core::OsRng;
//! let (plm, revoked) = (InMemoryPlm::new(), InMemoryRevokedList::new());
//!
//! // Manager: create the group and admit a member.
//! let manager = Manager::generate(ParamSet::Sha2_128f, &mut rng);
//! let (id, cid_star) = manager.join(&plm, "alice")?;
//!
//! // Member: make a key, request one certificate, import it.
//! let member = MemberKey::generate(ParamSet::Sha2_128f, id, cid_star, &mut rng);
//! let item = member.csr(1, &mut rng).pop().unwrap();
//! let cert = manager.issue(&plm, id, member.cid_star(), &[*item.wots_pk()])?.remove(0);
//! let key = member.import(manager.public_key(), item, &cert)?;
//!
//! // Sign (consumes the one-time key), verify, open, judge.
//! let sig = key.sign(b"hello");
//! let group = manager.public_key();
//! group.verify(b"hello", &sig, &revoked)?;
//! let opening = manager.open(b"hello", &sig)?;
//! group.judge(b"hello", &sig, opening.id, &opening.pi)?;
//!
//! // Revoke: the signature now verifies as revoked.
//! manager.revoke(&plm, &revoked, id)?;
//! assert!(matches!(group.verify(b"hello", &sig, &revoked), Err(dgsp_core::Error::Revoked)));
//! # }
//! # Ok::<(), dgsp_core::Error>(())
//! ```
//!
//! ## Features
//! - `sign` (default): generating a manager key (`Manager::generate`,
//!   `ManagerSecretKey::generate`) and everything that makes a SPHINCS+ signature
//!   (`Manager::issue`, `Manager::certify`, `Manager::sign_checkpoint`,
//!   `Manager::sign_snapshot`), on the crate's native signer ([`sphincs::SigningKey`], pure
//!   Rust, all 24 sets), with the OS randomness (`rand_core/getrandom`,
//!   [`rand_core::OsRng`]).
//! - `oracle`: the libraries the native signer and verifier are checked against, byte for
//!   byte, behind `hazmat::spx_*` and `hazmat::slh_*`: PQClean (`pqcrypto-sphincsplus`, C
//!   code built with `cc`; round 3.1) and RustCrypto `slh-dsa` (FIPS 205). For tests, benches
//!   and fuzzing; nothing else needs it.
//! - Without `sign` (`default-features = false`) the crate is a pure-Rust **verifier**: it
//!   decodes keys (the manager's secret key too), signatures and certificates, verifies
//!   ([`ManagerPublicKey::verify`], [`ManagerPublicKey::verify_batch`], the native
//!   [`sphincs::VerifyingKey`]), judges openings ([`ManagerPublicKey::judge`]), imports
//!   certificates ([`MemberKey::import`]), and checks checkpoints
//!   ([`ManagerPublicKey::verify_checkpoint`]), signed revocation snapshots and proofs
//!   ([`revocation::verify_revocation`]). Members can still make keys, certificate
//!   requests and signatures with an RNG of their own (any [`rand_core::CryptoRngCore`]);
//!   a [`Manager`] loaded from its secret key can still join, open and revoke. This build
//!   works on `wasm32-unknown-unknown`:
//!   `cargo check -p dgsp-core --no-default-features --target wasm32-unknown-unknown`.
//!   Nothing on a verification path reads the clock or starts a thread; the few parallel
//!   loops (building a [`revocation::RevocationSet`], revoking, certificate requests) use
//!   rayon, which on wasm32 finds no threads and runs them on the calling thread.
//! - `serde`: (de)serializes [`ParamSet`] by its canonical name.
//!
//! ## Validation
//! - Every `from_bytes` checks the 4-byte header (marker, version, parameter set, kind) and
//!   the exact length before reading a field; it returns a [`DecodeError`], never panics.
//! - [`ManagerPublicKey::verify`] checks the revoked list first, then recomputes the WOTS+
//!   public key from the signature (real chain/hash addresses and checksum, spec section 3)
//!   and verifies the manager's SPHINCS+ signature over
//!   `"DGSP-v1:cert" || wots_pk || zeta || tau` with the crate's own verifier
//!   ([`sphincs::VerifyingKey`], differentially tested against PQClean on the twelve round
//!   3.1 sets and against RustCrypto `slh-dsa` on the twelve FIPS 205 sets).
//!   [`ManagerPublicKey::verify_batch`] checks many signatures at once, with the same
//!   verdict per item.
//! - The manager's keys and signatures come from the crate's own signer
//!   ([`sphincs::SigningKey`], feature `sign`), byte-identical to PQClean on the round 3.1
//!   sets and to `slh-dsa` on the FIPS 205 sets; it refuses to sign when the hypertree it
//!   computed does not end at the key's `PK.root`. PQClean and `slh-dsa` are only its test
//!   oracles (feature `oracle`).
//! - [`Manager::open`] verifies the signature first and never opens an invalid one.
//!   [`ManagerPublicKey::judge`] checks the opening exactly as the spec defines it (tau
//!   against the recomputed WOTS+ key); pair it with `verify` when validity is in question.
//!
//! ## Secrets
//! Secret types ([`ManagerSecretKey`], [`MemberKey`], [`SeedU`], [`WotsSeed`], ...) are
//! zeroized on drop and print `<redacted>` under `Debug`. A one-time [`SigningKey`] is
//! consumed by [`SigningKey::sign`]. The SPHINCS+ library's own secret-key type is not
//! zeroized (see `spx` module notes); it lives only for one signing call.
//!
//! ## Performance
//! WOTS+ chains cost one SHA-256 compression (SHA-2 sets, `rho` midstate precomputed) or one
//! Keccak-f permutation (SHAKE sets) per step. Certificate batches and revocations run in
//! parallel on rayon's pool. See `docs/benchmarks.md` in the repository.

#![deny(unsafe_code)]
// allowed only in the hash kernels: `hashes::lanes` (SHA-NI), `hashes::keccak_lanes`, `hashes::sha512_lanes` (AVX2 dispatch)
#![warn(missing_docs)]

mod address;
mod certificate;
pub mod checkpoint;
mod derive;
mod encoding;
mod error;
mod hashes;
pub mod hazmat;
mod keys;
pub mod log_key;
mod manager;
mod member;
mod params;
mod plm;
pub mod revocation;
mod revoked;
mod signature;
pub mod sphincs;
// Manager key generation and signing on the native signer; with `oracle` (and in the
// crate's own tests) also the libraries it is checked against.
#[cfg(any(feature = "sign", all(test, not(target_family = "wasm"))))]
#[cfg_attr(not(feature = "sign"), allow(dead_code))]
mod spx;
mod values;
mod verify;
mod wots;
mod zeta;

pub use certificate::{Certificate, CERT_PREFIX};
pub use encoding::{peek_header, Kind, HEADER_LEN, MARKER, VERSION as ENCODING_VERSION};
pub use error::{DecodeError, Error, StoreError};
pub use keys::{ManagerPublicKey, ManagerSecretKey, MemberKey};
pub use manager::{Manager, Opening};
pub use member::{CsrItem, SigningKey};
pub use params::{HashFamily, ParamSet, Standard, MAX_N, MAX_WOTS_LEN, WOTS_LEN2, WOTS_W};
pub use plm::{Deactivation, InMemoryPlm, MemberRecord, Plm};
pub use revoked::{InMemoryRevokedList, RevokedList};
pub use signature::Signature;
pub use values::{
    AesKey, Cid, CidStar, HashSecret, MessageDigest, Pi, Rho, SeedU, SkSeed, Tau, WotsPk, WotsSeed,
    Zeta,
};

/// A member id: assigned sequentially from 0 at join.
pub type MemberId = u64;

/// This crate's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
