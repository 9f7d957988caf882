//! Cross-language known-answer tests: the core must reproduce, byte for byte, the vectors
//! that `tests/vectors/gen_vectors.py` (an independent Python implementation written from
//! the spec) generates for all 24 parameter sets — for the FIPS 205 sets also the manager's
//! SLH-DSA key and certificate signature, made by the PyPI `slh-dsa` package.

use std::path::PathBuf;

use dgsp_core::hazmat::{self, Label};
use dgsp_core::{
    AesKey, Error, HashSecret, Kind, Manager, ManagerPublicKey, ManagerSecretKey, MessageDigest,
    ParamSet, SeedU, Signature, Standard, WotsSeed, Zeta,
};
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
    /// Only for the FIPS 205 sets (ids 13-24).
    manager: Option<ManagerVectors>,
}

#[derive(Deserialize)]
struct ManagerVectors {
    sk_seed: String,
    sk_prf: String,
    pk_seed: String,
    spx_pk: String,
    spx_sk: String,
    addrnd: String,
    certificate: CertVector,
}

#[derive(Deserialize)]
struct CertVector {
    wots: usize,
    ctr: u64,
    zeta: String,
    message: String,
    spx_sig: String,
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

/// One test per set (the FIPS 205 ones re-sign with `s` parameters: seconds each), so the
/// harness runs them in parallel.
macro_rules! kat_tests {
    ($($name:ident => $set:ident),* $(,)?) => {
        $(#[test]
        fn $name() {
            check_set(ParamSet::$set);
        })*

        #[test]
        fn every_parameter_set_has_a_test() {
            let mut covered = vec![$(ParamSet::$set),*];
            covered.sort();
            assert_eq!(covered, ParamSet::ALL);
        }
    };
}

kat_tests! {
    sha2_128s => Sha2_128s, sha2_128f => Sha2_128f, sha2_192s => Sha2_192s,
    sha2_192f => Sha2_192f, sha2_256s => Sha2_256s, sha2_256f => Sha2_256f,
    shake_128s => Shake128s, shake_128f => Shake128f, shake_192s => Shake192s,
    shake_192f => Shake192f, shake_256s => Shake256s, shake_256f => Shake256f,
    slh_dsa_sha2_128s => SlhDsaSha2_128s, slh_dsa_sha2_128f => SlhDsaSha2_128f,
    slh_dsa_sha2_192s => SlhDsaSha2_192s, slh_dsa_sha2_192f => SlhDsaSha2_192f,
    slh_dsa_sha2_256s => SlhDsaSha2_256s, slh_dsa_sha2_256f => SlhDsaSha2_256f,
    slh_dsa_shake_128s => SlhDsaShake128s, slh_dsa_shake_128f => SlhDsaShake128f,
    slh_dsa_shake_192s => SlhDsaShake192s, slh_dsa_shake_192f => SlhDsaShake192f,
    slh_dsa_shake_256s => SlhDsaShake256s, slh_dsa_shake_256f => SlhDsaShake256f,
}

fn check_set(params: ParamSet) {
    {
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

        match (params.standard(), &f.manager) {
            (Standard::Round3, None) => {}
            (Standard::Fips205, Some(m)) => check_manager(params, &f, m),
            (s, m) => panic!("{set}: {s} with manager vectors: {}", m.is_some()),
        }
    }
}

/// The FIPS 205 manager: the key from its seeds, the certificate signature byte for byte
/// (deterministic variant), and a whole DGSP signature assembled from the vectors that
/// verifies and opens — and not under the round 3.1 twin's id.
fn check_manager(params: ParamSet, f: &File, m: &ManagerVectors) {
    let set = params.name();
    let header = |kind: Kind| vec![0xD6, 0x01, params.id(), kind as u8];
    let spx_pk = unhex(&m.spx_pk);
    assert_eq!(m.addrnd, m.pk_seed, "{set}: the deterministic variant");
    assert_eq!(&unhex(&m.spx_sk)[2 * params.n()..], &spx_pk[..], "{set}");
    let w = &f.wots[m.certificate.wots];
    let c = &m.certificate;
    let g = &f.groups[0];
    let key = AesKey::from_slice(params, &unhex(&g.aes_key)).unwrap();
    let zeta = hazmat::zeta(&key, w.id, c.ctr);
    assert_eq!(
        hex::encode(zeta.as_bytes()),
        c.zeta,
        "{set} certificate zeta"
    );
    let wots_pk = dgsp_core::WotsPk::from_slice(params, &unhex(&w.wots_pk)).unwrap();
    let tau = dgsp_core::Tau::from_slice(params, &unhex(&w.tau)).unwrap();
    let message = hazmat::certificate_message(&wots_pk, &zeta, &tau);
    assert_eq!(
        hex::encode(&message),
        c.message,
        "{set} certificate message"
    );

    #[cfg(feature = "oracle")]
    {
        let (pk, sk) = hazmat::slh_keypair_from_seeds(
            params,
            &unhex(&m.sk_seed),
            &unhex(&m.sk_prf),
            &unhex(&m.pk_seed),
        )
        .unwrap();
        assert_eq!(hex::encode(&pk), m.spx_pk, "{set} spx_pk from the seeds");
        assert_eq!(hex::encode(&sk), m.spx_sk, "{set} spx_sk from the seeds");
        let sig = hazmat::slh_sign_deterministic(params, &sk, &message).unwrap();
        assert_eq!(hex::encode(&sig), c.spx_sig, "{set} certificate signature");
        assert!(hazmat::slh_sign_deterministic(params.twin(), &sk, &message).is_none());

        // The native signer: the same key from the seeds, the same signature.
        let key = dgsp_core::sphincs::SigningKey::from_seeds(
            params,
            &unhex(&m.sk_seed),
            &unhex(&m.sk_prf),
            &unhex(&m.pk_seed),
        )
        .unwrap();
        assert_eq!(
            hex::encode(key.public_key()),
            m.spx_pk,
            "{set} native spx_pk"
        );
        assert_eq!(
            hex::encode(&key.to_bytes()[..]),
            m.spx_sk,
            "{set} native spx_sk"
        );
        let native = key.sign(&message, None).unwrap();
        assert_eq!(
            hex::encode(&native),
            c.spx_sig,
            "{set} native certificate signature"
        );
        let hedged = key.sign(&message, Some(&unhex(&m.pk_seed))).unwrap();
        assert_eq!(
            native, hedged,
            "{set}: addrnd = PK.seed is the deterministic variant"
        );
    }

    // The group key and a signature of entry `wots` assembled from the vectors.
    let pk =
        ManagerPublicKey::from_bytes(&[header(Kind::ManagerPublicKey), spx_pk].concat()).unwrap();
    let sig_bytes = [
        header(Kind::Signature),
        unhex(&w.wots_sig),
        unhex(&w.rho),
        unhex(&c.zeta),
        unhex(&c.spx_sig),
        unhex(&w.tau),
    ]
    .concat();
    let sig = Signature::from_bytes(&sig_bytes).unwrap();
    let msg = unhex(&w.message);
    pk.verify_ignoring_revocation(&msg, &sig)
        .unwrap_or_else(|e| panic!("{set}: the vectors' signature does not verify: {e}"));
    assert!(pk.verify_ignoring_revocation(b"another", &sig).is_err());
    let hs0 = HashSecret::from_slice(params, &unhex(&g.hash_secret)).unwrap();
    let cid = hazmat::cid(params, &hs0, w.id).unwrap();
    let pi = hazmat::pi(params, &wots_pk, &cid).unwrap();
    pk.judge(&msg, &sig, w.id, &pi).unwrap();

    // The manager's secret key (kind 2) and its opening.
    let sk_bytes = [
        header(Kind::ManagerSecretKey),
        unhex(&g.hash_secret),
        unhex(&g.aes_key),
        unhex(&m.spx_sk),
    ]
    .concat();
    let manager = Manager::new(ManagerSecretKey::from_bytes(&sk_bytes).unwrap());
    assert_eq!(manager.public_key(), &pk);
    let opening = manager.open(&msg, &sig).unwrap();
    assert_eq!(
        (opening.id, opening.counter),
        (w.id, c.ctr),
        "{set} opening"
    );

    // Under the round 3.1 twin's id, the same bytes are simply invalid.
    let relabel = |b: &[u8]| {
        let mut b = b.to_vec();
        b[2] = params.twin().id();
        b
    };
    let twin_pk = ManagerPublicKey::from_bytes(&relabel(&pk.to_bytes())).unwrap();
    let twin_sig = Signature::from_bytes(&relabel(&sig_bytes)).unwrap();
    assert!(matches!(
        twin_pk.verify_ignoring_revocation(&msg, &twin_sig),
        Err(Error::InvalidSignature)
    ));
    assert!(matches!(
        pk.verify_ignoring_revocation(&msg, &twin_sig),
        Err(Error::FamilyMismatch { .. })
    ));
}
