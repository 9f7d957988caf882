//! Quick in-crate checks against PQClean (the full differential suite is
//! `core/tests/sphincs_diff.rs`).

use super::*;
#[cfg(not(target_family = "wasm"))]
use crate::spx;

// PQClean is C: not built for WebAssembly (the wasm32-wasip1 run leaves this test out).
#[cfg(not(target_family = "wasm"))]
#[test]
fn accepts_pqclean_signatures_and_rejects_flips() {
    for set in [
        ParamSet::Sha2_128f,
        ParamSet::Shake128f,
        ParamSet::Sha2_192f,
    ] {
        let (pk, sk) = spx::oracle::keypair(set, &mut rand_core::OsRng);
        let vk = VerifyingKey::new(set, &pk).unwrap();
        let msgs: [&[u8]; 2] = [b"", b"hello"];
        let sigs: Vec<Vec<u8>> = msgs
            .iter()
            .map(|m| spx::oracle::sign(set, &sk, m))
            .collect();
        for (m, s) in msgs.iter().zip(&sigs) {
            assert!(vk.verify(m, s), "{set}");
            let mut bad = s.clone();
            let last = bad.len() - 1;
            bad[last] ^= 1;
            assert!(!vk.verify(m, &bad), "{set}");
            assert!(!vk.verify(b"other", s), "{set}");
        }
        let batch: Vec<(&[u8], &[u8])> = vec![
            (msgs[0], &sigs[0]),
            (msgs[1], &sigs[0]),
            (msgs[1], &sigs[1]),
            (msgs[1], &sigs[1][1..]),
            (msgs[0], &sigs[0]),
        ];
        assert_eq!(vk.verify_batch(&batch), [true, false, true, false, true]);
    }
}

#[test]
fn wrong_key_length_is_refused() {
    let e = VerifyingKey::new(ParamSet::Sha2_128f, &[0; 31]).unwrap_err();
    assert!(matches!(
        e,
        DecodeError::WrongFieldLength {
            field: "spx_pk",
            expected: 32,
            found: 31
        }
    ));
    let vk = VerifyingKey::new(ParamSet::Sha2_128f, &[0; 32]).unwrap();
    assert!(!vk.verify(b"", &[]));
    assert!(format!("{vk:?}").contains("sha2-128f"));
}
