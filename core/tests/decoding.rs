//! Decoding any byte string gives a typed error or a value, never a panic (spec section 5).

use dgsp_core::{
    peek_header, Certificate, DecodeError, Kind, ManagerPublicKey, ManagerSecretKey, MemberKey,
    ParamSet, Signature,
};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

const KINDS: [Kind; 5] = [
    Kind::ManagerPublicKey,
    Kind::ManagerSecretKey,
    Kind::Certificate,
    Kind::Signature,
    Kind::MemberKey,
];

/// Decodes `bytes` as every kind; returns how many decoders accepted it.
fn decode_all(bytes: &[u8]) -> usize {
    [
        ManagerPublicKey::from_bytes(bytes).is_ok(),
        ManagerSecretKey::from_bytes(bytes).is_ok(),
        Certificate::from_bytes(bytes).is_ok(),
        Signature::from_bytes(bytes).is_ok(),
        MemberKey::from_bytes(bytes).is_ok(),
    ]
    .into_iter()
    .filter(|ok| *ok)
    .count()
}

/// A well-formed encoding of `kind`: random fields, except that a manager secret key's
/// SPHINCS+ key is a real one (with `sign`, decoding checks that its `PK.root` belongs to its
/// seeds).
fn valid(params: ParamSet, kind: Kind, rng: &mut ChaCha20Rng) -> Vec<u8> {
    let mut b = vec![0u8; kind.encoded_len(params)];
    rng.fill_bytes(&mut b);
    b[..4].copy_from_slice(&[0xD6, 0x01, params.id(), kind as u8]);
    #[cfg(feature = "sign")]
    if kind == Kind::ManagerSecretKey {
        let n = params.n();
        let spx = b.len() - 4 * n;
        let key = dgsp_core::sphincs::SigningKey::from_seeds(
            params,
            &b[spx..spx + n],
            &b[spx + n..spx + 2 * n],
            &b[spx + 2 * n..spx + 3 * n],
        )
        .unwrap();
        b[spx..].copy_from_slice(&key.to_bytes());
    }
    b
}

/// A manager secret key whose `PK.root` is not its tree's root is refused, with the field.
#[cfg(feature = "sign")]
#[test]
fn an_inconsistent_manager_key_is_refused() {
    let mut rng = ChaCha20Rng::seed_from_u64(9);
    let mut b = valid(ParamSet::Sha2_128f, Kind::ManagerSecretKey, &mut rng);
    assert!(ManagerSecretKey::from_bytes(&b).is_ok());
    let last = b.len() - 1;
    b[last] ^= 1;
    assert_eq!(
        ManagerSecretKey::from_bytes(&b).unwrap_err(),
        DecodeError::InconsistentKey { field: "spx_sk" }
    );
}

#[test]
fn well_formed_encodings_decode_and_round_trip() {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    for params in ParamSet::ALL {
        for kind in KINDS {
            let b = valid(params, kind, &mut rng);
            assert_eq!(decode_all(&b), 1, "{params} {kind:?}");
            assert_eq!(peek_header(&b).unwrap(), (params, kind as u8));
            let again = match kind {
                Kind::ManagerPublicKey => ManagerPublicKey::from_bytes(&b).unwrap().to_bytes(),
                Kind::ManagerSecretKey => ManagerSecretKey::from_bytes(&b)
                    .unwrap()
                    .to_bytes()
                    .to_vec(),
                Kind::Certificate => Certificate::from_bytes(&b).unwrap().to_bytes(),
                Kind::Signature => Signature::from_bytes(&b).unwrap().to_bytes(),
                Kind::MemberKey => MemberKey::from_bytes(&b).unwrap().to_bytes().to_vec(),
            };
            assert_eq!(again, b, "{params} {kind:?} round trip");
        }
    }
}

/// The sizes published in docs/format.md.
#[test]
fn encoded_sizes_match_the_published_table() {
    let table = [
        (ParamSet::Sha2_128s, [36, 100, 7892, 8468, 44]),
        (ParamSet::Sha2_128f, [36, 100, 17124, 17700, 44]),
        (ParamSet::Sha2_192s, [52, 148, 16268, 17516, 60]),
        (ParamSet::Sha2_192f, [52, 148, 35708, 36956, 60]),
        (ParamSet::Sha2_256s, [68, 196, 29844, 32020, 76]),
        (ParamSet::Sha2_256f, [68, 196, 49908, 52084, 76]),
    ];
    for (sha2, sizes) in table {
        let shake = ParamSet::from_id(sha2.id() + 6).unwrap();
        for params in [sha2, shake] {
            let got = KINDS.map(|k| k.encoded_len(params));
            assert_eq!(got, sizes, "{params}");
        }
    }
}

#[test]
fn every_header_defect_has_its_own_error() {
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let good = valid(ParamSet::Sha2_128f, Kind::Signature, &mut rng);
    let e = |b: &[u8]| Signature::from_bytes(b).unwrap_err();
    assert_eq!(e(&good[..3]), DecodeError::MissingHeader { len: 3 });
    assert_eq!(e(&[]), DecodeError::MissingHeader { len: 0 });
    let mut b = good.clone();
    b[0] = 0xD7;
    assert_eq!(e(&b), DecodeError::BadMarker(0xD7));
    let mut b = good.clone();
    b[1] = 2;
    assert_eq!(e(&b), DecodeError::UnsupportedVersion(2));
    for bad in [0u8, 25, 255] {
        let mut b = good.clone();
        b[2] = bad;
        assert_eq!(e(&b), DecodeError::UnknownParamSet(bad));
    }
    let mut b = good.clone();
    b[3] = 3;
    assert!(matches!(
        e(&b),
        DecodeError::WrongKind {
            expected: 4,
            found: 3,
            ..
        }
    ));
    assert!(matches!(
        e(&good[..good.len() - 1]),
        DecodeError::WrongLength { .. }
    ));
    let mut longer = good.clone();
    longer.push(0);
    assert!(matches!(e(&longer), DecodeError::WrongLength { .. }));
    // A valid signature header of another set with this body length: wrong length.
    let mut b = good.clone();
    b[2] = ParamSet::Shake128f.id();
    assert!(
        Signature::from_bytes(&b).is_ok(),
        "same sizes: sha2-128f and shake-128f"
    );
    b[2] = ParamSet::Sha2_192f.id();
    assert!(matches!(e(&b), DecodeError::WrongLength { .. }));
}

#[test]
fn random_and_truncated_inputs_never_panic() {
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    for _ in 0..20_000 {
        let len = (rng.next_u32() % 300) as usize;
        let mut b = vec![0u8; len];
        rng.fill_bytes(&mut b);
        if len >= 4 && rng.next_u32() % 2 == 0 {
            b[0] = 0xD6;
            b[1] = 0x01;
            b[2] %= 14;
            b[3] %= 7;
        }
        // Short keys of the right length are legitimately decodable; what matters is
        // that nothing panics and that no byte string is two kinds of object at once.
        assert!(decode_all(&b) <= 1);
    }
    // Every truncation of a valid object of each kind.
    for kind in KINDS {
        let b = valid(ParamSet::Shake128f, kind, &mut rng);
        for cut in 0..b.len() {
            assert_eq!(decode_all(&b[..cut]), 0, "{kind:?} cut at {cut}");
        }
    }
}

/// Seeds for the `decoders` fuzz target (fuzz/fuzz_targets/decoders.rs): one valid object
/// per decoder, prefixed with the target's selector byte, for a round 3.1 and a FIPS 205
/// set; real revocation proofs, snapshots and a checkpoint note. Always checks that every
/// seed decodes; writes them only when `DGSP_FUZZ_SEEDS` names a directory.
#[cfg(feature = "sign")]
#[test]
fn fuzz_seeds() {
    use dgsp_core::checkpoint::{Checkpoint, SnapshotRef};
    use dgsp_core::revocation::{RevocationSet, SnapshotRecord};
    use dgsp_core::{Manager, Zeta};

    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let mut seeds: Vec<(String, Vec<u8>)> = Vec::new();
    for params in [ParamSet::Sha2_128f, ParamSet::SlhDsaSha2_128f] {
        for (selector, kind) in KINDS.into_iter().enumerate() {
            let b = valid(params, kind, &mut rng);
            assert_eq!(decode_all(&b), 1);
            seeds.push((
                format!("{params}-{kind:?}"),
                [&[selector as u8][..], &b].concat(),
            ));
        }
    }
    let manager = Manager::generate(ParamSet::SlhDsaSha2_128f, &mut rng);
    let zetas: Vec<Zeta> = (0..40u8)
        .map(|i| Zeta::from_slice(&[i.wrapping_mul(37); 16]).unwrap())
        .collect();
    let set = RevocationSet::from_zetas(zetas.iter().copied());
    for (name, z) in [
        ("inclusion", zetas[3]),
        ("non-membership", Zeta::from_slice(&[0xee; 16]).unwrap()),
    ] {
        let proof = set.prove(&z).to_bytes();
        seeds.push((format!("proof-{name}"), [&[5u8][..], &proof].concat()));
    }
    let record = SnapshotRecord {
        group: manager.public_key().fingerprint(),
        number: 1,
        log_seq: 7,
        count: set.len(),
        root: set.root(),
        prev_hash: [0; 32],
        time_unix_ms: 1_795_000_000_000,
    };
    seeds.push((
        "snapshot-record".into(),
        [&[6u8][..], &record.to_bytes()].concat(),
    ));
    let signed = manager.sign_snapshot(&record);
    seeds.push((
        "signed-snapshot".into(),
        [&[7u8][..], &signed.to_bytes()].concat(),
    ));
    let note = manager.sign_checkpoint(&Checkpoint {
        origin: "dgsp/fuzz".into(),
        size: 7,
        root: [9; 32],
        time_unix_ms: Some(1_795_000_000_000),
        snapshot: Some(SnapshotRef::of(&record)),
    });
    manager.public_key().verify_checkpoint(&note).unwrap();
    seeds.push((
        "checkpoint-note".into(),
        [&[8u8][..], note.as_bytes()].concat(),
    ));

    if let Ok(dir) = std::env::var("DGSP_FUZZ_SEEDS") {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in &seeds {
            std::fs::write(std::path::Path::new(&dir).join(name), bytes).unwrap();
        }
    }
}
