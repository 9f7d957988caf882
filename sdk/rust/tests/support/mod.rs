//! The group every SDK test builds: a manager, alice and bob (one certificate and one
//! signature on [`MSG`] each), bob revoked, two signed snapshots (`s1` empty, `s2` holding
//! bob's zetas), and the answers a gateway holding `s2` gives. Each test crate uses part of
//! it.
#![allow(dead_code)]

use dgsp_core::checkpoint::{origin_for, Checkpoint, SnapshotRef as NamedSnapshot};
use dgsp_core::revocation::{RevocationSet, SignedSnapshot, SnapshotRecord};
use dgsp_core::{
    Certificate, InMemoryPlm, InMemoryRevokedList, Manager, MemberKey, ParamSet, Signature,
};
use dgsp_verifier::wire::answer::{
    b64, CheckpointEvidence, Freshness, Note, ProofRef, Revocation, SnapshotRef, Status,
    VerifyAnswer,
};
use dgsp_verifier::TrustRoot;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// "Now" for every policy (Unix ms).
pub const T: u64 = 1_795_000_000_000;

/// The message alice and bob sign.
pub const MSG: &[u8] = b"a report signed by a member of the group";

/// A new member `name` of `manager`'s group with one certificate, and its signature on
/// [`MSG`].
pub fn sign(manager: &Manager, plm: &InMemoryPlm, name: &str, rng: &mut ChaCha20Rng) -> Signature {
    let (id, cid_star) = manager.join(plm, name).unwrap();
    let member = MemberKey::generate(manager.params(), id, cid_star, rng);
    let item = member.csr(1, rng).remove(0);
    let certs = manager
        .issue(plm, id, member.cid_star(), &[*item.wots_pk()])
        .unwrap();
    let cert = Certificate::from_bytes(&certs[0].to_bytes()).unwrap();
    member
        .import(manager.public_key(), item, &cert)
        .unwrap()
        .sign(MSG)
}

/// The group.
pub struct Group {
    pub manager: Manager,
    pub alice: Signature,
    pub bob: Signature,
    pub set: RevocationSet,
    pub s1: SignedSnapshot,
    pub s2: SignedSnapshot,
}

impl Group {
    /// The group of `params`, from `seed`.
    pub fn new(params: ParamSet, seed: u64) -> Self {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let manager = Manager::generate(params, &mut rng);
        let plm = InMemoryPlm::new();
        let alice = sign(&manager, &plm, "alice", &mut rng);
        let bob = sign(&manager, &plm, "bob", &mut rng);
        let bob_zetas = manager
            .revoke(&plm, &InMemoryRevokedList::new(), 1)
            .unwrap();
        let empty = RevocationSet::from_zetas(std::iter::empty());
        let set = RevocationSet::from_zetas(bob_zetas.iter().copied());
        let fp = manager.public_key().fingerprint();
        let r1 = SnapshotRecord::genesis(fp, 5, 0, empty.root(), T - 60_000);
        let r2 = r1.next(9, set.len(), set.root(), T - 1_000);
        let (s1, s2) = (manager.sign_snapshot(&r1), manager.sign_snapshot(&r2));
        Group {
            manager,
            alice,
            bob,
            set,
            s1,
            s2,
        }
    }

    /// A checkpoint note signed at `time` naming `named`.
    pub fn note(&self, named: &SignedSnapshot, time: u64) -> String {
        self.manager.sign_checkpoint(&Checkpoint {
            origin: origin_for(self.manager.public_key()),
            size: 10,
            root: [7; 32],
            time_unix_ms: Some(time),
            snapshot: Some(NamedSnapshot::of(&named.record)),
        })
    }

    /// The answer a gateway holding `set` under snapshot `s2` gives for `sig`.
    pub fn answer(&self, sig: &Signature) -> VerifyAnswer {
        let revoked = self.set.contains(sig.zeta());
        VerifyAnswer {
            valid: !revoked,
            status: if revoked { Status::Revoked } else { Status::Ok },
            params: self.manager.params().name().into(),
            zeta: Some(b64(sig.zeta().as_bytes())),
            revocation: Some(Revocation {
                revoked,
                pending_snapshot: false,
                snapshot: Some(SnapshotRef::of(&self.s2)),
                proof: Some(ProofRef::of(&self.set.prove(sig.zeta()))),
            }),
            freshness: Freshness {
                applied_seq: 10,
                checkpoint: Some(CheckpointEvidence {
                    size: 10,
                    time_unix_ms: T - 500,
                    snapshot_number: Some(2),
                    note: Some(Note::new(self.note(&self.s2, T - 500))),
                    witnessed: None,
                }),
                age_ms: Some(500),
                max_staleness_ms: 60_000,
                stale: false,
            },
            detail: revoked.then(|| "its certificate is revoked".into()),
        }
    }
}

impl Group {
    /// The trust root of this group.
    pub fn root(&self) -> TrustRoot {
        TrustRoot::from_key_bytes(&self.manager.public_key().to_bytes()).unwrap()
    }
}
