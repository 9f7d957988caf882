//! Differential fuzz target: the native SPHINCS+ / SLH-DSA verifier (`dgsp_core::sphincs`)
//! and the signing library must give the same verdict on every input, single and batched,
//! on all 24 parameter sets: PQClean for the twelve round 3.1 sets, RustCrypto's `slh-dsa`
//! (FIPS 205 pure mode, empty context) for the twelve FIPS 205 sets.
//!
//! The input picks a parameter set and an attack shape:
//! - a mutation of a genuine signature (xor at fuzzer-chosen offsets, truncation,
//!   extension), of its message, or of the public key;
//! - or raw bytes as the signature.
//!
//! Genuine material is made once per process, when the fuzzer first picks the set: for a
//! round 3.1 set a PQClean key and three signatures (C, outside the sanitizer's
//! instrumentation: milliseconds, up to about a second on the `s` sets); for a FIPS 205 set
//! the manager key and certificate signature of the committed known-answer vectors
//! (`core/tests/vectors/slh-dsa-*.json`, made by the Python reference), because `slh-dsa`
//! signing under AddressSanitizer takes longer than libFuzzer's timeout on the `s` sets.
//! Both verifiers must accept the untouched signatures; any disagreement panics.
#![no_main]

use std::sync::OnceLock;

use dgsp_core::hazmat::{spx_keypair, spx_sign, spx_verify_oracle};
use dgsp_core::sphincs::VerifyingKey;
use dgsp_core::ParamSet;
use libfuzzer_sys::fuzz_target;

/// Every set: the "s" sets differ from the "f" sets only in the tree shapes, but those
/// shapes (more FORS leaves per tree, taller hypertree layers) are code paths of their own.
const SETS: [ParamSet; 24] = ParamSet::ALL;

/// Messages signed per round 3.1 set.
const MESSAGES: [&[u8]; 3] = [b"", b"DGSP fuzz", &[0xA5; 200]];

/// The known-answer vectors of the FIPS 205 sets, in `ParamSet::ALL` order (ids 13-24).
const FIPS205_VECTORS: [&str; 12] = [
    include_str!("../../core/tests/vectors/slh-dsa-sha2-128s.json"),
    include_str!("../../core/tests/vectors/slh-dsa-sha2-128f.json"),
    include_str!("../../core/tests/vectors/slh-dsa-sha2-192s.json"),
    include_str!("../../core/tests/vectors/slh-dsa-sha2-192f.json"),
    include_str!("../../core/tests/vectors/slh-dsa-sha2-256s.json"),
    include_str!("../../core/tests/vectors/slh-dsa-sha2-256f.json"),
    include_str!("../../core/tests/vectors/slh-dsa-shake-128s.json"),
    include_str!("../../core/tests/vectors/slh-dsa-shake-128f.json"),
    include_str!("../../core/tests/vectors/slh-dsa-shake-192s.json"),
    include_str!("../../core/tests/vectors/slh-dsa-shake-192f.json"),
    include_str!("../../core/tests/vectors/slh-dsa-shake-256s.json"),
    include_str!("../../core/tests/vectors/slh-dsa-shake-256f.json"),
];

struct Genuine {
    pk: Vec<u8>,
    vk: VerifyingKey,
    /// Messages and their signatures under `pk`.
    signed: Vec<(Vec<u8>, Vec<u8>)>,
}

/// A FIPS 205 set's manager key and certificate signature from its vector file.
fn from_vectors(params: ParamSet) -> (Vec<u8>, Vec<(Vec<u8>, Vec<u8>)>) {
    let text = FIPS205_VECTORS[usize::from(params.id()) - 13];
    let v: serde_json::Value = serde_json::from_str(text).expect("committed vectors parse");
    assert_eq!(v["param_set"], params.name(), "vector file order");
    let field =
        |x: &serde_json::Value| hex::decode(x.as_str().expect("a hex string")).expect("hex");
    let m = &v["manager"];
    let cert = &m["certificate"];
    (
        field(&m["spx_pk"]),
        vec![(field(&cert["message"]), field(&cert["spx_sig"]))],
    )
}

fn genuine(set_index: usize) -> &'static Genuine {
    static CELLS: [OnceLock<Genuine>; SETS.len()] = [const { OnceLock::new() }; SETS.len()];
    CELLS[set_index].get_or_init(|| {
        let params = SETS[set_index];
        let (pk, signed) = if params.id() >= 13 {
            from_vectors(params)
        } else {
            let (pk, sk) = spx_keypair(params);
            let signed = MESSAGES
                .iter()
                .map(|m| (m.to_vec(), spx_sign(params, &sk, m)))
                .collect();
            (pk, signed)
        };
        let vk = VerifyingKey::new(params, &pk).expect("a genuine public key decodes");
        for (m, s) in &signed {
            assert!(
                vk.verify(m, s),
                "{params}: native rejects a genuine signature"
            );
            assert!(
                spx_verify_oracle(params, &pk, m, s),
                "{params}: the library rejects it"
            );
        }
        Genuine { pk, vk, signed }
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
    let which = data[1] as usize % g.signed.len();
    let rest = &data[3..];
    let (genuine_msg, genuine_sig) = &g.signed[which];
    let mut msg = genuine_msg.clone();
    let mut sig = genuine_sig.clone();
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
    let oracle = spx_verify_oracle(params, &pk, &msg, &sig);
    let vk = if pk == g.pk {
        g.vk.clone()
    } else {
        VerifyingKey::new(params, &pk).expect("same length as a genuine key")
    };
    let ours = vk.verify(&msg, &sig);
    assert_eq!(
        ours, oracle,
        "{params}: native {ours}, the library {oracle}"
    );
    // The same verdict from a batch, beside a genuine signature of the same key when the
    // key is genuine (lanes shared across items must not leak between them).
    let mut batch: Vec<(&[u8], &[u8])> = vec![(&msg, &sig)];
    if pk == g.pk {
        batch.push((genuine_msg, genuine_sig));
    }
    let verdicts = vk.verify_batch(&batch);
    assert_eq!(verdicts[0], oracle, "{params}: batch verdict differs");
    if verdicts.len() > 1 {
        assert!(
            verdicts[1],
            "{params}: a genuine signature rejected in a batch"
        );
    }
});
