//! The whole protocol, for every parameter set, and every way it must say "no".

// Makes manager keys and signs: needs the `sign` feature (on by default).
#![cfg(feature = "sign")]

use dgsp_core::hazmat;
use dgsp_core::{
    Certificate, CidStar, CsrItem, Error, InMemoryPlm, InMemoryRevokedList, Manager,
    ManagerPublicKey, ManagerSecretKey, MemberKey, ParamSet, Plm, Signature, SigningKey,
    StoreError,
};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;

struct Group {
    manager: Manager,
    plm: InMemoryPlm,
    revoked: InMemoryRevokedList,
    rng: ChaCha20Rng,
}

impl Group {
    fn new(params: ParamSet) -> Self {
        let mut rng = ChaCha20Rng::seed_from_u64(u64::from(params.id()));
        Group {
            manager: Manager::generate(params, &mut rng),
            plm: InMemoryPlm::new(),
            revoked: InMemoryRevokedList::new(),
            rng,
        }
    }

    fn pk(&self) -> &ManagerPublicKey {
        self.manager.public_key()
    }

    fn member(&mut self, name: &str) -> MemberKey {
        let (id, cid_star) = self.manager.join(&self.plm, name).unwrap();
        MemberKey::generate(self.manager.params(), id, cid_star, &mut self.rng)
    }

    /// `count` certified one-time keys for `member`.
    fn keys(&mut self, member: &MemberKey, count: usize) -> Vec<SigningKey> {
        let items = member.csr(count, &mut self.rng);
        let pks: Vec<_> = items.iter().map(|i| *i.wots_pk()).collect();
        let certs = self
            .manager
            .issue(&self.plm, member.id(), member.cid_star(), &pks)
            .unwrap();
        assert_eq!(certs.len(), count);
        items
            .into_iter()
            .zip(&certs)
            .map(|(item, cert)| {
                let cert = Certificate::from_bytes(&cert.to_bytes()).unwrap();
                member.import(self.pk(), item, &cert).unwrap()
            })
            .collect()
    }
}

fn full_flow(params: ParamSet) {
    let mut g = Group::new(params);
    let alice = g.member("alice");
    let bob = g.member("bob");
    assert_eq!((alice.id(), bob.id()), (0, 1));

    // Keys and member secrets survive their encodings.
    let pk = ManagerPublicKey::from_bytes(&g.pk().to_bytes()).unwrap();
    assert_eq!(&pk, g.pk());
    let sk = ManagerSecretKey::from_bytes(&g.manager.secret_key().to_bytes()).unwrap();
    assert_eq!(sk.public_key(), pk);
    assert_eq!(MemberKey::from_bytes(&alice.to_bytes()).unwrap(), alice);

    let mut alice_keys = g.keys(&alice, 2);
    let mut bob_keys = g.keys(&bob, 1);
    assert_ne!(alice_keys[0].zeta(), alice_keys[1].zeta());

    let msg = b"pay 10 to carol";
    let sig_a = alice_keys.remove(1).sign(msg);
    let bytes = sig_a.to_bytes();
    assert_eq!(bytes.len(), Signature::encoded_len(params));
    let sig_a = Signature::from_bytes(&bytes).unwrap();
    pk.verify(msg, &sig_a, &g.revoked).unwrap();

    // Open: alice, with her second certificate; a third party judges it correct.
    let opening = g.manager.open(msg, &sig_a).unwrap();
    assert_eq!((opening.id, opening.counter), (alice.id(), 1));
    pk.judge(msg, &sig_a, opening.id, &opening.pi).unwrap();

    let sig_b = bob_keys.remove(0).sign(b"another message");
    pk.verify(b"another message", &sig_b, &g.revoked).unwrap();
    assert_eq!(
        g.manager.open(b"another message", &sig_b).unwrap().id,
        bob.id()
    );

    // Revoke alice: both of her certificates go on the list; bob is unaffected.
    let zetas = g.manager.revoke(&g.plm, &g.revoked, alice.id()).unwrap();
    assert_eq!(zetas.len(), 2);
    assert!(matches!(
        pk.verify(msg, &sig_a, &g.revoked),
        Err(Error::Revoked)
    ));
    pk.verify(b"another message", &sig_b, &g.revoked).unwrap();
    // A revoked signature still opens and judges (the manager can still name the signer).
    assert_eq!(g.manager.open(msg, &sig_a).unwrap().id, alice.id());
    // The unused certificate of alice is revoked too.
    let late = alice_keys.remove(0).sign(b"after revocation");
    assert!(matches!(
        pk.verify(b"after revocation", &late, &g.revoked),
        Err(Error::Revoked)
    ));
    // No more certificates for alice.
    let item = alice.csr(1, &mut g.rng);
    let refused = g
        .manager
        .issue(&g.plm, alice.id(), alice.cid_star(), &[*item[0].wots_pk()]);
    assert!(matches!(
        refused,
        Err(Error::Store(StoreError::Inactive(0)))
    ));
}

macro_rules! flow_tests {
    ($($name:ident => $params:expr),* $(,)?) => {$(
        #[test]
        fn $name() {
            full_flow($params);
        }
    )*};
}

flow_tests! {
    flow_sha2_128f => ParamSet::Sha2_128f,
    flow_sha2_192f => ParamSet::Sha2_192f,
    flow_sha2_256f => ParamSet::Sha2_256f,
    flow_shake_128f => ParamSet::Shake128f,
    flow_shake_192f => ParamSet::Shake192f,
    flow_shake_256f => ParamSet::Shake256f,
    flow_sha2_128s => ParamSet::Sha2_128s,
    flow_sha2_192s => ParamSet::Sha2_192s,
    flow_sha2_256s => ParamSet::Sha2_256s,
    flow_shake_128s => ParamSet::Shake128s,
    flow_shake_192s => ParamSet::Shake192s,
    flow_shake_256s => ParamSet::Shake256s,
    flow_slh_dsa_sha2_128f => ParamSet::SlhDsaSha2_128f,
    flow_slh_dsa_sha2_192f => ParamSet::SlhDsaSha2_192f,
    flow_slh_dsa_sha2_256f => ParamSet::SlhDsaSha2_256f,
    flow_slh_dsa_shake_128f => ParamSet::SlhDsaShake128f,
    flow_slh_dsa_shake_192f => ParamSet::SlhDsaShake192f,
    flow_slh_dsa_shake_256f => ParamSet::SlhDsaShake256f,
    flow_slh_dsa_sha2_128s => ParamSet::SlhDsaSha2_128s,
    flow_slh_dsa_sha2_192s => ParamSet::SlhDsaSha2_192s,
    flow_slh_dsa_sha2_256s => ParamSet::SlhDsaSha2_256s,
    flow_slh_dsa_shake_128s => ParamSet::SlhDsaShake128s,
    flow_slh_dsa_shake_192s => ParamSet::SlhDsaShake192s,
    flow_slh_dsa_shake_256s => ParamSet::SlhDsaShake256s,
}

/// Spec section 6: in dgsp 0.1.2 every chain starts from the same secret and the checksum
/// digits are always 0, so the last three blocks of any signature are that secret. An
/// attacker takes them as the chain start and signs another message under the same
/// certificate. With real addresses and checksum this must fail, whichever block is used.
#[test]
fn forgery_from_one_signature_is_rejected() {
    for params in [ParamSet::Shake256f, ParamSet::Sha2_128f] {
        let mut g = Group::new(params);
        let alice = g.member("alice");
        let honest = g.keys(&alice, 1).remove(0).sign(b"honest message");
        let pk = g.pk().clone();
        pk.verify(b"honest message", &honest, &g.revoked).unwrap();

        let (n, len, len1) = (params.n(), params.wots_len(), params.wots_len1());
        let blocks: Vec<&[u8]> = honest.wots_signature().chunks(n).collect();
        // Our checksum is real: its digits are not all zero and the three tail blocks differ.
        let d = hazmat::message_digest(params, honest.rho(), b"honest message").unwrap();
        let digits = hazmat::wots_digits(params, &d).unwrap();
        assert!(digits[len1..len].iter().any(|&x| x != 0));
        assert!(blocks[len - 1] != blocks[len - 2] || blocks[len - 2] != blocks[len - 3]);

        let target = b"transfer everything to mallory";
        let d2 = hazmat::message_digest(params, honest.rho(), target).unwrap();
        let digits2 = hazmat::wots_digits(params, &d2).unwrap();
        for tail in 1..=3 {
            let start = blocks[len - tail];
            let mut forged_wots = Vec::with_capacity(len * n);
            for (i, &digit) in digits2[..len].iter().enumerate() {
                let mut x = start.to_vec();
                let steps = if i < len1 { u32::from(digit) } else { 0 };
                hazmat::wots_chain(params, honest.rho(), &mut x, i as u32, 0, steps).unwrap();
                forged_wots.extend_from_slice(&x);
            }
            let mut forged = honest.to_bytes();
            forged[4..4 + len * n].copy_from_slice(&forged_wots);
            let forged = Signature::from_bytes(&forged).unwrap();
            assert!(
                matches!(
                    pk.verify(target, &forged, &g.revoked),
                    Err(Error::InvalidSignature)
                ),
                "{params}: forgery from tail block {tail} must not verify"
            );
            assert!(matches!(
                g.manager.open(target, &forged),
                Err(Error::InvalidSignature)
            ));
        }
    }
}

/// One bit flipped anywhere meaningful in a signature: never accepted.
#[test]
fn every_field_flipped_is_rejected() {
    let params = ParamSet::Sha2_128f;
    let mut g = Group::new(params);
    let alice = g.member("alice");
    let sig = g.keys(&alice, 1).remove(0).sign(b"m");
    let pk = g.pk().clone();
    let bytes = sig.to_bytes();
    let (n, wl, sl) = (params.n(), params.wots_sig_len(), params.spx_sig_len());
    // (field, offset of its first byte, length)
    let fields = [
        ("wots_sig", 4, wl),
        ("rho", 4 + wl, n),
        ("zeta", 4 + wl + n, 16),
        ("spx_sig", 4 + wl + n + 16, sl),
        ("tau", 4 + wl + n + 16 + sl, n),
    ];
    assert_eq!(fields[4].1 + n, bytes.len());
    for (name, off, flen) in fields {
        let positions = [0, flen / 3, flen / 2, flen - 1];
        for pos in positions {
            for bit in [0u8, 7] {
                let mut t = bytes.clone();
                t[off + pos] ^= 1 << bit;
                let t = Signature::from_bytes(&t).unwrap();
                assert!(
                    matches!(
                        pk.verify(b"m", &t, &g.revoked),
                        Err(Error::InvalidSignature)
                    ),
                    "{name}[{pos}] bit {bit}"
                );
            }
        }
    }
    // Header bytes: decoding refuses.
    for i in 0..4 {
        let mut t = bytes.clone();
        t[i] ^= 0x40;
        assert!(Signature::from_bytes(&t).is_err(), "header byte {i}");
    }
    // Wrong message.
    assert!(matches!(
        pk.verify(b"M", &sig, &g.revoked),
        Err(Error::InvalidSignature)
    ));
    assert!(matches!(
        pk.verify(b"", &sig, &g.revoked),
        Err(Error::InvalidSignature)
    ));
    pk.verify(b"m", &sig, &g.revoked).unwrap();
}

/// Verifying from the digest (what the log records) agrees with verifying from the message:
/// the same WOTS+ key for a valid signature, a refusal for every flipped field, for another
/// message's digest, for a digest of the wrong length and for another parameter set.
#[test]
fn verify_from_the_digest_agrees_with_verify_from_the_message() {
    let params = ParamSet::Sha2_128f;
    let mut g = Group::new(params);
    let alice = g.member("alice");
    let sig = g.keys(&alice, 1).remove(0).sign(b"m");
    let pk = g.pk().clone();
    let d = sig.message_digest(b"m");
    assert_eq!(
        pk.verify_digest_ignoring_revocation(&d, &sig).unwrap(),
        pk.verify_ignoring_revocation(b"m", &sig).unwrap()
    );
    // Revocation is not its business (as for verify_ignoring_revocation).
    g.manager.revoke(&g.plm, &g.revoked, alice.id()).unwrap();
    pk.verify_digest_ignoring_revocation(&d, &sig).unwrap();

    assert!(matches!(
        pk.verify_digest_ignoring_revocation(&sig.message_digest(b"x"), &sig),
        Err(Error::InvalidSignature)
    ));
    // A flipped bit in the manager's certificate signature: judge still passes (it only
    // looks at the WOTS+ part and tau), verification from the digest does not.
    let o = g.manager.open(b"m", &sig).unwrap();
    let mut t = sig.to_bytes();
    t[4 + params.wots_sig_len() + params.n() + 16 + 5] ^= 1;
    let t = Signature::from_bytes(&t).unwrap();
    pk.judge_digest(&d, &t, o.id, &o.pi).unwrap();
    assert!(matches!(
        pk.verify_digest_ignoring_revocation(&d, &t),
        Err(Error::InvalidSignature)
    ));
    // A digest of another length: a decode error naming it, not a panic.
    let long = dgsp_core::MessageDigest::from_slice(ParamSet::Sha2_192f, &[1; 24]).unwrap();
    assert!(matches!(
        pk.verify_digest_ignoring_revocation(&long, &sig),
        Err(Error::Decode(dgsp_core::DecodeError::WrongFieldLength {
            field: "digest",
            expected: 16,
            found: 24
        }))
    ));
    // A signature of another parameter set.
    let mut other = Group::new(ParamSet::Shake128f);
    let bob = other.member("bob");
    let other_sig = other.keys(&bob, 1).remove(0).sign(b"m");
    assert!(matches!(
        pk.verify_digest_ignoring_revocation(&other_sig.message_digest(b"m"), &other_sig),
        Err(Error::ParamMismatch { .. })
    ));
}

#[test]
fn judge_rejects_a_wrong_id_or_pi_and_open_refuses_invalid() {
    let params = ParamSet::Shake128f;
    let mut g = Group::new(params);
    let alice = g.member("alice");
    let bob = g.member("bob");
    let sig = g.keys(&alice, 1).remove(0).sign(b"m");
    let bob_sig = g.keys(&bob, 1).remove(0).sign(b"m");
    let pk = g.pk().clone();
    let o = g.manager.open(b"m", &sig).unwrap();
    pk.judge(b"m", &sig, o.id, &o.pi).unwrap();
    assert!(matches!(
        pk.judge(b"m", &sig, bob.id(), &o.pi),
        Err(Error::WrongOpening)
    ));
    let bob_o = g.manager.open(b"m", &bob_sig).unwrap();
    assert!(matches!(
        pk.judge(b"m", &sig, o.id, &bob_o.pi),
        Err(Error::WrongOpening)
    ));
    assert!(matches!(
        pk.judge(b"m", &sig, bob.id(), &bob_o.pi),
        Err(Error::WrongOpening)
    ));
    let mut flipped = o.pi.as_bytes().to_vec();
    flipped[0] ^= 1;
    let bad_pi = dgsp_core::Pi::from_slice(params, &flipped).unwrap();
    assert!(matches!(
        pk.judge(b"m", &sig, o.id, &bad_pi),
        Err(Error::WrongOpening)
    ));
    // Judge on the wrong message: another WOTS+ key is recomputed, tau no longer matches.
    assert!(matches!(
        pk.judge(b"x", &sig, o.id, &o.pi),
        Err(Error::WrongOpening)
    ));
    // Judging from the digest (what the log records) gives the same answers.
    let d = sig.message_digest(b"m");
    pk.judge_digest(&d, &sig, o.id, &o.pi).unwrap();
    assert!(matches!(
        pk.judge_digest(&d, &sig, bob.id(), &o.pi),
        Err(Error::WrongOpening)
    ));
    assert!(matches!(
        pk.judge_digest(&sig.message_digest(b"x"), &sig, o.id, &o.pi),
        Err(Error::WrongOpening)
    ));
    // Open refuses an invalid signature.
    assert!(matches!(
        g.manager.open(b"x", &sig),
        Err(Error::InvalidSignature)
    ));
}

#[test]
fn issuance_refusals_change_nothing() {
    let params = ParamSet::Sha2_128f;
    let mut g = Group::new(params);
    let alice = g.member("alice");
    let bob = g.member("bob");
    g.keys(&alice, 2);
    let items = alice.csr(2, &mut g.rng);
    let pks: Vec<_> = items.iter().map(|i| *i.wots_pk()).collect();
    let before = g.plm.member(alice.id()).unwrap().unwrap();
    assert_eq!(before.counter, 2);

    // Wrong cid*: bob's, or alice's with one bit flipped.
    let r = g.manager.issue(&g.plm, alice.id(), bob.cid_star(), &pks);
    assert!(matches!(r, Err(Error::CidStarMismatch(0))));
    let mut cs = alice.cid_star().as_bytes().to_vec();
    cs[5] ^= 0x10;
    let cs = CidStar::from_slice(params, &cs).unwrap();
    assert!(matches!(
        g.manager.issue(&g.plm, alice.id(), &cs, &pks),
        Err(Error::CidStarMismatch(0))
    ));
    // Unknown member, empty request.
    assert!(matches!(
        g.manager.issue(&g.plm, 7, alice.cid_star(), &pks),
        Err(Error::Store(StoreError::UnknownMember(7)))
    ));
    assert!(matches!(
        g.manager.issue(&g.plm, alice.id(), alice.cid_star(), &[]),
        Err(Error::EmptyRequest)
    ));
    assert_eq!(g.plm.member(alice.id()).unwrap().unwrap(), before);

    // Inactive member: refused, counter frozen.
    g.manager.revoke(&g.plm, &g.revoked, alice.id()).unwrap();
    let frozen = g.plm.member(alice.id()).unwrap().unwrap();
    assert!(!frozen.active);
    assert!(matches!(
        g.manager.issue(&g.plm, alice.id(), alice.cid_star(), &pks),
        Err(Error::Store(StoreError::Inactive(0)))
    ));
    assert_eq!(g.plm.member(alice.id()).unwrap().unwrap(), frozen);
    // Revoking twice is idempotent.
    let len = g.revoked_len();
    let again = g.manager.revoke(&g.plm, &g.revoked, alice.id()).unwrap();
    assert_eq!(again.len(), 2);
    assert_eq!(g.revoked_len(), len);
}

impl Group {
    fn revoked_len(&self) -> u64 {
        use dgsp_core::RevokedList;
        self.revoked.len().unwrap()
    }
}

#[test]
fn import_refuses_a_certificate_that_does_not_cover_the_key() {
    let params = ParamSet::Sha2_128f;
    let mut g = Group::new(params);
    let alice = g.member("alice");
    let items = alice.csr(2, &mut g.rng);
    let pks: Vec<_> = items.iter().map(|i| *i.wots_pk()).collect();
    let certs = g
        .manager
        .issue(&g.plm, alice.id(), alice.cid_star(), &pks)
        .unwrap();
    let mut items = items.into_iter();
    let (first, second) = (items.next().unwrap(), items.next().unwrap());
    // A refused import consumes the item (CsrItem is not Clone): each attempt rebuilds it
    // from its stored seed, as a wallet does for a key that has not signed.
    let first_again = || CsrItem::from_seed(&alice, first.wots_seed().clone());
    // The second key's certificate does not cover the first key.
    assert!(matches!(
        alice.import(g.pk(), first_again(), &certs[1]),
        Err(Error::InvalidCertificate)
    ));
    // A tampered pi changes tau: refused.
    let mut t = certs[0].to_bytes();
    t[4 + 16] ^= 1;
    let t = Certificate::from_bytes(&t).unwrap();
    assert!(matches!(
        alice.import(g.pk(), first_again(), &t),
        Err(Error::InvalidCertificate)
    ));
    // Another group's key: refused.
    let other = Manager::generate(params, &mut g.rng);
    assert!(matches!(
        alice.import(other.public_key(), first_again(), &certs[0]),
        Err(Error::InvalidCertificate)
    ));
    alice.import(g.pk(), first, &certs[0]).unwrap();
    alice.import(g.pk(), second, &certs[1]).unwrap();
}

/// `resume` (what a wallet signs with, its certificates checked at import) signs exactly
/// as `import` does, checks the parameter sets, and a key paired with the wrong
/// certificate signs something that does not verify.
#[test]
fn resume_signs_as_import_does_without_checking_again() {
    for params in [ParamSet::Sha2_128f, ParamSet::Shake256f] {
        let mut g = Group::new(params);
        let alice = g.member("alice");
        let items = alice.csr(2, &mut g.rng);
        let pks: Vec<_> = items.iter().map(|i| *i.wots_pk()).collect();
        let certs = g
            .manager
            .issue(&g.plm, alice.id(), alice.cid_star(), &pks)
            .unwrap();
        let seeds: Vec<_> = items.iter().map(|i| i.wots_seed().clone()).collect();
        let imported = alice
            .import(g.pk(), items.into_iter().next().unwrap(), &certs[0])
            .unwrap()
            .sign(b"m");
        let stored = |i: usize| CsrItem::from_stored(&alice, seeds[i].clone(), pks[i]);
        let resumed = alice
            .resume(g.pk(), stored(0), &certs[0])
            .unwrap()
            .sign(b"m");
        assert_eq!(resumed.to_bytes(), imported.to_bytes());
        g.pk().verify(b"m", &resumed, &g.revoked).unwrap();

        // The first key with the second key's certificate: a signature, but not a valid one.
        let crossed = alice
            .resume(g.pk(), stored(0), &certs[1])
            .unwrap()
            .sign(b"m");
        assert!(g.pk().verify(b"m", &crossed, &g.revoked).is_err());

        // Another parameter set's group key: refused before `tau` is derived.
        let other = if params == ParamSet::Sha2_128f {
            ParamSet::Sha2_192f
        } else {
            ParamSet::Shake128f
        };
        let other = Manager::generate(other, &mut g.rng);
        assert!(matches!(
            alice.resume(other.public_key(), stored(1), &certs[1]),
            Err(Error::ParamMismatch { .. })
        ));
    }
}

#[test]
fn a_signature_of_another_parameter_set_is_a_mismatch() {
    let mut a = Group::new(ParamSet::Sha2_128f);
    let b = Group::new(ParamSet::Shake128f);
    let alice = a.member("alice");
    let sig = a.keys(&alice, 1).remove(0).sign(b"m");
    assert!(matches!(
        b.pk().verify(b"m", &sig, &b.revoked),
        Err(Error::ParamMismatch { .. })
    ));
    // Same set, another group: simply invalid.
    let other = Manager::generate(ParamSet::Sha2_128f, &mut ChaCha20Rng::seed_from_u64(5));
    assert!(matches!(
        other.public_key().verify(b"m", &sig, &a.revoked),
        Err(Error::InvalidSignature)
    ));
}

/// Spec section 7: a signature, certificate or member key of one family is refused under the
/// twin set of the other (same sizes) with a typed error, before any cryptography; and even
/// bytes re-labelled with the twin's id (key and signature alike) do not verify, because
/// FIPS 205 signs `0x00 0x00 || M` — also on the 192f sets, where both standards read the
/// FORS indices the same way.
#[test]
fn the_two_families_never_cross() {
    for params in [
        ParamSet::Sha2_128f,
        ParamSet::Sha2_192f,
        ParamSet::SlhDsaShake128f,
    ] {
        let twin = params.twin();
        let mut a = Group::new(params);
        let mut b = Group::new(twin);
        let alice = a.member("alice");
        let sig = a.keys(&alice, 1).remove(0).sign(b"m");
        let e = b.pk().verify(b"m", &sig, &b.revoked).unwrap_err();
        assert!(
            matches!(e, Error::FamilyMismatch { expected, found } if expected == twin && found == params),
            "{params}: {e:?}"
        );
        assert!(e.to_string().contains("FIPS 205 SLH-DSA"), "{e}");
        assert!(matches!(
            b.pk().judge(
                b"m",
                &sig,
                alice.id(),
                &a.manager.open(b"m", &sig).unwrap().pi
            ),
            Err(Error::FamilyMismatch { .. })
        ));

        // A certificate of this family imported against the twin group's key, and this
        // family's member key with the twin group: both refused.
        let item = alice.csr(1, &mut a.rng).remove(0);
        let cert = &a
            .manager
            .issue(&a.plm, alice.id(), alice.cid_star(), &[*item.wots_pk()])
            .unwrap()[0];
        assert!(matches!(
            alice.import(b.pk(), item, cert),
            Err(Error::FamilyMismatch { .. })
        ));
        let bob = b.member("bob");
        let item = bob.csr(1, &mut b.rng).remove(0);
        assert!(matches!(
            bob.import(a.pk(), item, cert),
            Err(Error::FamilyMismatch { .. })
        ));

        // Re-labelled: the same manager key bytes and signature bytes under the twin id.
        let relabel = |bytes: &[u8]| {
            let mut b = bytes.to_vec();
            b[2] = twin.id();
            b
        };
        let pk = ManagerPublicKey::from_bytes(&relabel(&a.pk().to_bytes())).unwrap();
        let forged = Signature::from_bytes(&relabel(&sig.to_bytes())).unwrap();
        assert_eq!((pk.params(), forged.params()), (twin, twin));
        assert!(
            matches!(
                pk.verify(b"m", &forged, &b.revoked),
                Err(Error::InvalidSignature)
            ),
            "{params}: a re-labelled signature verifies under the other standard"
        );
    }
}

/// 100 concurrent issuances for one member: no counter value, so no zeta, is shared.
#[test]
fn concurrent_issuances_never_share_a_zeta() {
    let params = ParamSet::Sha2_128f;
    let mut g = Group::new(params);
    let alice = g.member("alice");
    let items = alice.csr(100, &mut g.rng);
    let zetas: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = items
            .iter()
            .map(|item| {
                let (m, plm, a) = (&g.manager, &g.plm, &alice);
                s.spawn(move || {
                    m.issue(plm, a.id(), a.cid_star(), &[*item.wots_pk()])
                        .unwrap()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .map(|c| *c.zeta())
            .collect()
    });
    let mut unique = zetas.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 100);
    assert_eq!(g.plm.member(alice.id()).unwrap().unwrap().counter, 100);
    // And revocation covers exactly those 100.
    let mut revoked = g.manager.revoke(&g.plm, &g.revoked, alice.id()).unwrap();
    revoked.sort();
    assert_eq!(revoked, unique);
}

#[test]
fn verify_batch_gives_each_item_the_single_call_verdict() {
    let params = ParamSet::Sha2_128f;
    let mut g = Group::new(params);
    let alice = g.member("alice");
    let bob = g.member("bob");
    let mut alice_keys = g.keys(&alice, 5);
    let mut bob_keys = g.keys(&bob, 2);
    let msg = |i: usize| format!("message {i}").into_bytes();

    let mut items: Vec<(Vec<u8>, Signature)> = Vec::new();
    for i in 0..5 {
        items.push((msg(i), alice_keys.remove(0).sign(&msg(i))));
    }
    for i in 5..7 {
        items.push((msg(i), bob_keys.remove(0).sign(&msg(i))));
    }
    // Wrong message.
    items.push((b"not what was signed".to_vec(), items[0].1.clone()));
    // Tampered SPHINCS+ signature (the encoding ends with it) and tampered WOTS+ part.
    for pos in [items[1].1.to_bytes().len() - 1, 40] {
        let mut bytes = items[1].1.to_bytes();
        bytes[pos] ^= 0x10;
        items.push((msg(1), Signature::from_bytes(&bytes).unwrap()));
    }
    // Another parameter set.
    let mut other = Group::new(ParamSet::Shake128f);
    let carol = other.member("carol");
    let carol_sig = other.keys(&carol, 1).remove(0).sign(&msg(0));
    items.push((msg(0), carol_sig));
    // Bob is revoked: his (valid) signatures are Revoked, but valid ignoring revocation.
    g.manager.revoke(&g.plm, &g.revoked, bob.id()).unwrap();

    let all: Vec<(&[u8], &Signature)> = items.iter().map(|(m, s)| (m.as_slice(), s)).collect();
    for size in [0usize, 1, 4, all.len()] {
        let batch = &all[all.len() - size..];
        let got = g.pk().verify_batch(batch, &g.revoked);
        let got_ign = g.pk().verify_batch_ignoring_revocation(batch);
        assert_eq!((got.len(), got_ign.len()), (size, size));
        for (((m, s), b), bi) in batch.iter().zip(&got).zip(&got_ign) {
            let single = g.pk().verify(m, s, &g.revoked);
            assert_eq!(format!("{b:?}"), format!("{single:?}"));
            let single_ign = g.pk().verify_ignoring_revocation(m, s);
            assert_eq!(format!("{bi:?}"), format!("{single_ign:?}"));
        }
    }
    let got = g.pk().verify_batch(&all, &g.revoked);
    let kinds: Vec<&str> = got
        .iter()
        .map(|r| match r {
            Ok(()) => "ok",
            Err(Error::Revoked) => "revoked",
            Err(Error::InvalidSignature) => "invalid",
            Err(Error::ParamMismatch { .. }) => "mismatch",
            Err(_) => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "ok", "ok", "ok", "ok", "ok", "revoked", "revoked", "invalid", "invalid", "invalid",
            "mismatch"
        ]
    );
    let ign = g.pk().verify_batch_ignoring_revocation(&all);
    assert!(ign[5].is_ok() && ign[6].is_ok() && ign[7].is_err());
}
