//! Cross-language known-answer tests: the core must reproduce, byte for byte, the vectors
//! that `tests/vectors/gen_vectors.py` (an independent Python implementation written from
//! the spec) generates for all twelve parameter sets.

use std::path::PathBuf;

use dgsp_core::hazmat::{self, Label};
use dgsp_core::{AesKey, HashSecret, MessageDigest, ParamSet, SeedU, WotsSeed, Zeta};
use serde::Deserialize;

#[derive(Deserialize)]
struct File {
    spec: String,
    param_set: String,
    param_id: u8,
    n: usize,
    wots_len: usize,
    labelled_hashes: Vec<Hl>,
    groups: Vec<Group>,
    wots: Vec<Wots>,
}

#[derive(Deserialize)]
struct Hl {
    label: String,
    input: String,
    output: String,
}

#[derive(Deserialize)]
struct Group {
    hash_secret: String,
    aes_key: String,
    members: Vec<Member>,
}

#[derive(Deserialize)]
struct Member {
    id: u64,
    cid: String,
    cid_star: String,
    zetas: Vec<ZetaCase>,
}

#[derive(Deserialize)]
struct ZetaCase {
    ctr: u64,
    zeta: String,
}

#[derive(Deserialize)]
struct Wots {
    seed_u: String,
    wots_seed: String,
    rho: String,
    sk_seed: String,
    wots_pk: String,
    message: String,
    digest: String,
    digits: Vec<u8>,
    wots_sig: String,
    id: u64,
    cid: String,
    pi: String,
    tau: String,
}

fn unhex(s: &str) -> Vec<u8> {
    hex::decode(s).expect("vector files hold valid hex")
}

fn load(params: ParamSet) -> File {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vectors")
        .join(format!("{}.json", params.name()));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run gen_vectors.py)", path.display()));
    serde_json::from_str(&text).expect("vector file parses")
}

fn label(name: &str) -> Label {
    *Label::ALL
        .iter()
        .find(|l| l.as_str() == name)
        .unwrap_or_else(|| panic!("unknown label {name}"))
}

#[test]
fn every_parameter_set_matches_the_python_vectors() {
    for params in ParamSet::ALL {
        let f = load(params);
        let set = params.name();
        assert_eq!(f.spec, "dgsp-v1");
        assert_eq!(f.param_set, set);
        assert_eq!(f.param_id, params.id());
        assert_eq!(f.n, params.n());
        assert_eq!(f.wots_len, params.wots_len());

        assert_eq!(f.labelled_hashes.len(), 21, "{set}");
        for hl in &f.labelled_hashes {
            let got = hazmat::labelled_hash(params, label(&hl.label), &unhex(&hl.input));
            assert_eq!(hex::encode(got), hl.output, "{set} HL({})", hl.label);
        }

        assert!(!f.groups.is_empty());
        for g in &f.groups {
            let hs = HashSecret::from_slice(params, &unhex(&g.hash_secret)).unwrap();
            let key = AesKey::from_slice(params, &unhex(&g.aes_key)).unwrap();
            for m in &g.members {
                let cid = hazmat::cid(params, &hs, m.id).unwrap();
                assert_eq!(hex::encode(cid.as_bytes()), m.cid, "{set} cid({})", m.id);
                let cid_star = hazmat::cid_star(params, &cid, m.id).unwrap();
                assert_eq!(hex::encode(cid_star.as_bytes()), m.cid_star, "{set} cid*");
                for z in &m.zetas {
                    let zeta = hazmat::zeta(&key, m.id, z.ctr);
                    assert_eq!(hex::encode(zeta.as_bytes()), z.zeta, "{set} zeta");
                    let parsed = Zeta::from_slice(&unhex(&z.zeta)).unwrap();
                    assert_eq!(hazmat::open_zeta(&key, &parsed), (m.id, z.ctr));
                }
            }
        }

        let hs0 = HashSecret::from_slice(params, &unhex(&f.groups[0].hash_secret)).unwrap();
        assert!(f.wots.len() >= 3, "{set}");
        let mut nonzero_checksum = false;
        for w in &f.wots {
            let seed_u = SeedU::from_slice(params, &unhex(&w.seed_u)).unwrap();
            let wots_seed = WotsSeed::from_slice(params, &unhex(&w.wots_seed)).unwrap();
            let rho = hazmat::rho(params, &wots_seed).unwrap();
            assert_eq!(hex::encode(rho.as_bytes()), w.rho, "{set} rho");
            let sk = hazmat::sk_seed(params, &seed_u, &wots_seed).unwrap();
            assert_eq!(hex::encode(sk.expose_secret()), w.sk_seed, "{set} sk_seed");
            let pk = hazmat::wots_public_key(params, &rho, &sk).unwrap();
            assert_eq!(hex::encode(pk.as_bytes()), w.wots_pk, "{set} wots_pk");

            let msg = unhex(&w.message);
            let d = hazmat::message_digest(params, &rho, &msg).unwrap();
            assert_eq!(hex::encode(d.as_bytes()), w.digest, "{set} digest");
            let digits = hazmat::wots_digits(params, &d).unwrap();
            assert_eq!(&digits[..params.wots_len()], &w.digits[..], "{set} digits");
            nonzero_checksum |= digits[params.wots_len1()..params.wots_len()]
                .iter()
                .any(|&x| x != 0);

            let sig = hazmat::wots_sign(params, &rho, &sk, &d).unwrap();
            assert_eq!(hex::encode(&sig), w.wots_sig, "{set} wots_sig");
            let d_from_file = MessageDigest::from_slice(params, &unhex(&w.digest)).unwrap();
            let back =
                hazmat::wots_public_key_from_signature(params, &rho, &sig, &d_from_file).unwrap();
            assert_eq!(back, pk);

            let cid = hazmat::cid(params, &hs0, w.id).unwrap();
            assert_eq!(hex::encode(cid.as_bytes()), w.cid, "{set} wots cid");
            let pi = hazmat::pi(params, &pk, &cid).unwrap();
            assert_eq!(hex::encode(pi.as_bytes()), w.pi, "{set} pi");
            let tau = hazmat::tau(params, &pk, &pi, w.id).unwrap();
            assert_eq!(hex::encode(tau.as_bytes()), w.tau, "{set} tau");
        }
        assert!(
            nonzero_checksum,
            "{set}: vectors exercise a nonzero checksum"
        );
    }
}
