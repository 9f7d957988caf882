//! Our side of the benchmarks: a fixture per parameter set and one benchmark per
//! operation, measured with the same settings as the reference (see `reference_dgsp.rs`).

use std::cell::RefCell;

use criterion::measurement::WallTime;
use criterion::{black_box, BatchSize, BenchmarkGroup};
use dgsp_core::{
    Certificate, CsrItem, InMemoryPlm, InMemoryRevokedList, Manager, MemberKey, Opening, ParamSet,
    Plm, Signature, SigningKey, WotsPk, WotsSeed,
};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// The message every signing benchmark signs.
pub const MESSAGE: &[u8] = b"DGSP benchmark message: the quick brown fox jumps over the lazy dog";

/// A group with one member, stock keys and one signature.
pub struct Fixture {
    pub params: ParamSet,
    pub manager: Manager,
    pub plm: InMemoryPlm,
    pub revoked: InMemoryRevokedList,
    pub member: MemberKey,
    pub stock_pks: Vec<WotsPk>,
    /// seed of the stock item: `signing_key` rebuilds the item from it for each run
    /// (`CsrItem` is not `Clone`; a bench may sign with one key many times, a wallet never)
    stock_seed: WotsSeed,
    stock_pk: WotsPk,
    stock_cert: Certificate,
    pub sig: Signature,
    pub opening: Opening,
    rng: RefCell<ChaCha20Rng>,
    names: RefCell<u64>,
}

impl Fixture {
    /// Sets up a group of `params`; checks that verify, open and judge succeed.
    pub fn new(params: ParamSet) -> Self {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let manager = Manager::generate(params, &mut rng);
        let (plm, revoked) = (InMemoryPlm::new(), InMemoryRevokedList::new());
        let (id, cid_star) = manager.join(&plm, "bench-member").unwrap();
        let member = MemberKey::generate(params, id, cid_star, &mut rng);
        let items = member.csr(9, &mut rng);
        let stock_pks: Vec<WotsPk> = items.iter().map(|i| *i.wots_pk()).collect();
        let certs = manager
            .issue(&plm, id, member.cid_star(), &stock_pks[..2])
            .unwrap();
        let mut items = items.into_iter();
        let stock_seed = items.next().unwrap().wots_seed().clone();
        let key = member
            .import(manager.public_key(), items.next().unwrap(), &certs[1])
            .unwrap();
        let sig = key.sign(MESSAGE);
        manager
            .public_key()
            .verify(MESSAGE, &sig, &revoked)
            .unwrap();
        let opening = manager.open(MESSAGE, &sig).unwrap();
        manager
            .public_key()
            .judge(MESSAGE, &sig, opening.id, &opening.pi)
            .unwrap();
        Fixture {
            params,
            manager,
            plm,
            revoked,
            member,
            stock_pk: stock_pks[0],
            stock_pks: stock_pks[1..].to_vec(),
            stock_seed,
            stock_cert: certs[0].clone(),
            sig,
            opening,
            rng: RefCell::new(rng),
            names: RefCell::new(0),
        }
    }

    fn fresh_name(&self) -> String {
        let mut n = self.names.borrow_mut();
        *n += 1;
        format!("user-{}", *n)
    }

    /// A one-time key ready to sign (untimed setup of `sign`).
    pub fn signing_key(&self) -> SigningKey {
        self.member
            .import(
                self.manager.public_key(),
                CsrItem::from_seed(&self.member, self.stock_seed.clone()),
                &self.stock_cert,
            )
            .unwrap()
    }

    /// What `dgsp-manager member sign` rebuilds per signature from its wallet slot, the
    /// certificate checked at import and not again (`MemberKey::resume`).
    pub fn resumed_key(&self) -> SigningKey {
        let item = CsrItem::from_stored(&self.member, self.stock_seed.clone(), self.stock_pk);
        self.member
            .resume(self.manager.public_key(), item, &self.stock_cert)
            .unwrap()
    }

    /// A fresh active member that was issued `certs` certificates (untimed setup of `revoke`).
    pub fn member_with(&self, certs: u64) -> u64 {
        let id = self.plm.add_member(&self.fresh_name()).unwrap();
        self.plm.reserve_counters(id, certs).unwrap();
        id
    }
}

/// Registers one operation of ours as `id` in `group`. Panics on an unknown `op`.
pub fn bench_op(group: &mut BenchmarkGroup<'_, WallTime>, fx: &Fixture, op: &str, id: &str) {
    let pk = fx.manager.public_key();
    match op {
        "keygen" => group.bench_function(id, |b| {
            b.iter(|| black_box(Manager::generate(fx.params, &mut *fx.rng.borrow_mut())))
        }),
        "join" => group.bench_function(id, |b| {
            b.iter_batched(
                || fx.fresh_name(),
                |u| black_box(fx.manager.join(&fx.plm, &u).unwrap()),
                BatchSize::SmallInput,
            )
        }),
        "csr_1" | "csr_8" => {
            let n = if op == "csr_1" { 1 } else { 8 };
            group.bench_function(id, |b| {
                b.iter(|| black_box(fx.member.csr(n, &mut *fx.rng.borrow_mut())))
            })
        }
        "issue_1" | "issue_8" => {
            let n = if op == "issue_1" { 1 } else { 8 };
            let (mid, cs) = (fx.member.id(), fx.member.cid_star());
            group.bench_function(id, |b| {
                b.iter(|| {
                    black_box(
                        fx.manager
                            .issue(&fx.plm, mid, cs, &fx.stock_pks[..n])
                            .unwrap(),
                    )
                })
            })
        }
        "import" => group.bench_function(id, |b| b.iter(|| black_box(fx.signing_key()))),
        "sign" => group.bench_function(id, |b| {
            b.iter_batched(
                || fx.signing_key(),
                |k| black_box(k.sign(MESSAGE)),
                BatchSize::SmallInput,
            )
        }),
        // What the reference's sign does: the one-time key recomputed from its seed (a CSR
        // item's work, WOTS+ key generation), then signed; like with like against it.
        "sign_from_seed" => group.bench_function(id, |b| {
            b.iter(|| {
                let item = CsrItem::from_seed(&fx.member, fx.stock_seed.clone());
                let key = fx.member.resume(pk, item, &fx.stock_cert).unwrap();
                black_box(key.sign(MESSAGE))
            })
        }),
        // The wallet's whole per-signature work: the slot's key rebuilt, then signed.
        "wallet_sign" => {
            group.bench_function(id, |b| b.iter(|| black_box(fx.resumed_key().sign(MESSAGE))))
        }
        "verify" => group.bench_function(id, |b| {
            b.iter(|| pk.verify(MESSAGE, &fx.sig, &fx.revoked).unwrap())
        }),
        "open" => group.bench_function(id, |b| {
            b.iter(|| black_box(fx.manager.open(MESSAGE, &fx.sig).unwrap()))
        }),
        "judge" => group.bench_function(id, |b| {
            b.iter(|| {
                pk.judge(MESSAGE, &fx.sig, fx.opening.id, &fx.opening.pi)
                    .unwrap()
            })
        }),
        "revoke" | "revoke_100k" => {
            let certs = if op == "revoke" { 1 } else { 100_000 };
            group.bench_function(id, |b| {
                b.iter_batched(
                    || fx.member_with(certs),
                    |m| black_box(fx.manager.revoke(&fx.plm, &fx.revoked, m).unwrap()),
                    BatchSize::SmallInput,
                )
            })
        }
        other => panic!("unknown operation {other:?}"),
    };
}
