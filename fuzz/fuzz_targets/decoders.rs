//! Every binary decoder of `dgsp-core` that takes untrusted bytes, and checkpoint notes:
//! the first input byte picks the decoder, the rest is its input. A decoder must return an
//! error or a value — never panic — and a value must re-encode to exactly its input (the
//! encodings are canonical), so no two byte strings decode to the same object.
//!
//!   cargo +nightly fuzz run decoders corpus/decoders seeds/decoders
//!
//! Seeds (`fuzz/seeds/decoders/`, one valid object per decoder, prefixed with its
//! selector) are written by `DGSP_FUZZ_SEEDS=fuzz/seeds/decoders cargo test -p dgsp-core
//! --test decoding fuzz_seeds`.

#![no_main]

use std::sync::OnceLock;

use dgsp_core::revocation::{RevocationProof, SignedSnapshot, SnapshotRecord};
use dgsp_core::{
    peek_header, Certificate, Manager, ManagerPublicKey, ManagerSecretKey, MemberKey, ParamSet,
    Signature,
};
use libfuzzer_sys::fuzz_target;

/// A fixed group for the checkpoint-note parser (the note must parse before any signature
/// check, so parsing is what is fuzzed).
fn group() -> &'static ManagerPublicKey {
    static GROUP: OnceLock<ManagerPublicKey> = OnceLock::new();
    GROUP.get_or_init(|| {
        use rand_core::SeedableRng;
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
        Manager::generate(ParamSet::SlhDsaSha2_128f, &mut rng)
            .public_key()
            .clone()
    })
}

fn round_trip(input: &[u8], again: &[u8], what: &str) {
    assert_eq!(again, input, "{what}: a decoded value re-encodes differently");
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    let _ = peek_header(input);
    match selector % 9 {
        0 => {
            if let Ok(v) = ManagerPublicKey::from_bytes(input) {
                round_trip(input, &v.to_bytes(), "public key");
            }
        }
        1 => {
            if let Ok(v) = ManagerSecretKey::from_bytes(input) {
                round_trip(input, &v.to_bytes(), "secret key");
            }
        }
        2 => {
            if let Ok(v) = Certificate::from_bytes(input) {
                round_trip(input, &v.to_bytes(), "certificate");
            }
        }
        3 => {
            if let Ok(v) = Signature::from_bytes(input) {
                round_trip(input, &v.to_bytes(), "signature");
            }
        }
        4 => {
            if let Ok(v) = MemberKey::from_bytes(input) {
                round_trip(input, &v.to_bytes(), "member key");
            }
        }
        5 => {
            if let Ok(v) = RevocationProof::from_bytes(input) {
                round_trip(input, &v.to_bytes(), "revocation proof");
            }
        }
        6 => {
            if let Ok(v) = SnapshotRecord::from_bytes(input) {
                round_trip(input, &v.to_bytes(), "snapshot record");
            }
        }
        7 => {
            if let Ok(v) = SignedSnapshot::from_bytes(input) {
                round_trip(input, &v.to_bytes(), "signed snapshot");
            }
        }
        _ => {
            if let Ok(note) = std::str::from_utf8(input) {
                let _ = group().verify_checkpoint(note);
            }
        }
    }
});
