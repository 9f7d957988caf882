//! Differential fuzz target: the native SPHINCS+ verifier (`dgsp_core::sphincs`) and
//! PQClean must give the same verdict on every input, single and batched.
//!
//! The input picks a parameter set and an attack shape:
//! - a mutation of a genuine signature (xor at fuzzer-chosen offsets, truncation,
//!   extension), of its message, or of the public key;
//! - or raw bytes as the signature.
//!
//! Genuine material (one key and a few signatures per set) is made once per process with
//! PQClean. Both verifiers must accept the untouched signatures; any disagreement panics.
#![no_main]

use std::sync::OnceLock;

use dgsp_core::hazmat::{spx_keypair, spx_sign, spx_verify_pqclean};
use dgsp_core::sphincs::VerifyingKey;
use dgsp_core::ParamSet;
use libfuzzer_sys::fuzz_target;

/// The sets the fuzzer covers: every set whose signing is fast enough to set up in a
/// fraction of a second ("f" sets); the "s" sets share every code path but the tree shapes
/// and are covered by `core/tests/sphincs_diff.rs`.
const SETS: [ParamSet; 6] = [
    ParamSet::Sha2_128f,
    ParamSet::Sha2_192f,
    ParamSet::Sha2_256f,
    ParamSet::Shake128f,
    ParamSet::Shake192f,
    ParamSet::Shake256f,
];

/// Messages signed per set.
const MESSAGES: [&[u8]; 3] = [b"", b"DGSP fuzz", &[0xA5; 200]];

struct Genuine {
    pk: Vec<u8>,
    vk: VerifyingKey,
    sigs: Vec<Vec<u8>>,
}

fn genuine(set_index: usize) -> &'static Genuine {
    static CELLS: [OnceLock<Genuine>; 6] = [const { OnceLock::new() }; 6];
    CELLS[set_index].get_or_init(|| {
        let params = SETS[set_index];
        let (pk, sk) = spx_keypair(params);
        let sigs: Vec<Vec<u8>> = MESSAGES.iter().map(|m| spx_sign(params, &sk, m)).collect();
        let vk = VerifyingKey::new(params, &pk).expect("a PQClean public key decodes");
        for (m, s) in MESSAGES.iter().zip(&sigs) {
            assert!(vk.verify(m, s), "{params}: native rejects a genuine signature");
            assert!(spx_verify_pqclean(params, &pk, m, s));
        }
        Genuine { pk, vk, sigs }
    })
}

/// Applies `edits` (pairs of offset and xor byte) to `bytes`.
fn xor_edits(bytes: &mut [u8], edits: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    for e in edits.chunks_exact(4) {
        let at = u32::from_le_bytes([e[0], e[1], e[2], 0]) as usize % bytes.len();
        bytes[at] ^= e[3].max(1);
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let set_index = data[0] as usize % SETS.len();
    let params = SETS[set_index];
    let g = genuine(set_index);
    let which = data[1] as usize % MESSAGES.len();
    let rest = &data[3..];
    let mut msg = MESSAGES[which].to_vec();
    let mut sig = g.sigs[which].clone();
    let mut pk = g.pk.clone();
    match data[2] % 6 {
        0 => xor_edits(&mut sig, rest),
        1 => {
            let cut = rest.first().map_or(0, |&b| b as usize + 1);
            sig.truncate(sig.len().saturating_sub(cut));
        }
        2 => {
            xor_edits(&mut sig, rest);
            sig.extend_from_slice(&rest[..rest.len().min(4)]);
        }
        3 => {
            if rest.is_empty() {
                msg.push(0);
            } else {
                xor_edits(&mut msg, rest);
                msg.extend_from_slice(&rest[..rest.len() % 3]);
            }
        }
        4 => xor_edits(&mut pk, rest),
        _ => sig = rest.to_vec(),
    }
    let oracle = spx_verify_pqclean(params, &pk, &msg, &sig);
    let vk = if pk == g.pk {
        g.vk.clone()
    } else {
        VerifyingKey::new(params, &pk).expect("same length as a genuine key")
    };
    let ours = vk.verify(&msg, &sig);
    assert_eq!(ours, oracle, "{params}: native {ours}, PQClean {oracle}");
    // The same verdict from a batch, beside a genuine signature of the same key when the
    // key is genuine (lanes shared across items must not leak between them).
    let mut batch: Vec<(&[u8], &[u8])> = vec![(&msg, &sig)];
    if pk == g.pk {
        batch.push((MESSAGES[which], &g.sigs[which]));
    }
    let verdicts = vk.verify_batch(&batch);
    assert_eq!(verdicts[0], oracle, "{params}: batch verdict differs");
    if verdicts.len() > 1 {
        assert!(verdicts[1], "{params}: a genuine signature rejected in a batch");
    }
});
