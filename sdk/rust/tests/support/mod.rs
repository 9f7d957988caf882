//! The group every SDK test builds: a manager, alice and bob (one certificate and one
//! signature on [`MSG`] each), bob revoked, two signed snapshots (`s1` empty, `s2` holding
//! bob's zetas), and the answers a gateway holding `s2` gives; the group's ML-DSA-44 log
//! key and witnesses with fixed seeds, for witnessed checkpoints. Each test crate uses part
//! of it.
#![allow(dead_code)]

use dgsp_core::checkpoint::{origin_for, Checkpoint, SnapshotRef as NamedSnapshot};
use dgsp_core::log_key::LogKeyStatement;
use dgsp_core::revocation::{RevocationSet, SignedSnapshot, SnapshotRecord};
use dgsp_core::{
    Certificate, InMemoryPlm, InMemoryRevokedList, Manager, MemberKey, ParamSet, Signature,
};
use dgsp_verifier::wire::answer::{
    b64, CheckpointEvidence, Freshness, Note, ProofRef, Revocation, SnapshotRef, Status,
    VerifyAnswer,
};
use dgsp_verifier::wire::note::{witnessed_note, MlDsaCosigner};
use dgsp_verifier::TrustRoot;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// "Now" for every policy (Unix ms).
pub const T: u64 = 1_795_000_000_000;

/// "Now" in the witnesses' unit (Unix s).
pub const T_S: u64 = T / 1000;

/// The tree size every checkpoint of [`Group::note`] names.
pub const SIZE: u64 = 10;

/// The root every checkpoint of [`Group::note`] names.
pub const ROOT: [u8; 32] = [7; 32];

/// A witness with a fixed key: `<name>.example`, from the seed `[seed; 32]`.
pub fn witness(name: &str, seed: u8) -> MlDsaCosigner {
    MlDsaCosigner::from_seed(&format!("{name}.example"), &[seed; 32]).unwrap()
}

/// The policy's witnesses w1, w2, w3 (seeds 1, 2, 3), and w4 (seed 4), in no policy.
pub fn witnesses() -> [MlDsaCosigner; 4] {
    [
        witness("w1", 1),
        witness("w2", 2),
        witness("w3", 3),
        witness("w4", 4),
    ]
}

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
            size: SIZE,
            root: ROOT,
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
    /// The group's log key (generation 0), derived from the manager key as the registry
    /// derives it.
    pub fn log_key(&self) -> MlDsaCosigner {
        let origin = origin_for(self.manager.public_key());
        MlDsaCosigner::from_seed(&origin, &self.manager.log_key_seed(0)).unwrap()
    }

    /// The group key's statement naming [`Group::log_key`].
    pub fn log_key_statement(&self) -> String {
        self.manager
            .sign_log_key(&LogKeyStatement {
                origin: origin_for(self.manager.public_key()),
                vkey: self.log_key().vkey(),
                generation: 0,
                time_unix_ms: T - 86_400_000,
            })
            .unwrap()
    }

    /// The witness policy: the log key, w1 w2 w3 of [`witnesses`], two of three.
    pub fn witness_policy(&self) -> String {
        let [w1, w2, w3, _] = witnesses();
        format!(
            "# group {}: two of three witnesses\nlog {}\nwitness w1 {}\nwitness w2 {}\nwitness w3 {}\ngroup two-of-three 2 w1 w2 w3\nquorum two-of-three\n",
            origin_for(self.manager.public_key()),
            self.log_key().vkey(),
            w1.vkey(),
            w2.vkey(),
            w3.vkey()
        )
    }

    /// The witnessed note of the tree (`size`, `root`), signed by the log key at `log_ts`
    /// (Unix s), with `cosignatures` lines.
    pub fn witnessed(
        &self,
        size: u64,
        root: &[u8; 32],
        log_ts: u64,
        cosignatures: &[String],
    ) -> String {
        let origin = origin_for(self.manager.public_key());
        let log_line = self.log_key().cosign(&origin, size, root, log_ts).unwrap();
        witnessed_note(&origin, size, root, &log_line, cosignatures)
    }

    /// `w`'s cosignature line on the tree (`size`, `root`) at `ts` (Unix s).
    pub fn cosign(&self, w: &MlDsaCosigner, size: u64, root: &[u8; 32], ts: u64) -> String {
        w.cosign(&origin_for(self.manager.public_key()), size, root, ts)
            .unwrap()
    }

    /// The answer for `sig` carrying `witnessed` as its witnessed checkpoint.
    pub fn answer_witnessed(&self, sig: &Signature, witnessed: Option<String>) -> VerifyAnswer {
        let mut a = self.answer(sig);
        a.freshness.checkpoint.as_mut().unwrap().witnessed = witnessed.map(Note::new);
        a
    }

    /// The trust root of this group.
    pub fn root(&self) -> TrustRoot {
        TrustRoot::from_key_bytes(&self.manager.public_key().to_bytes()).unwrap()
    }
}
