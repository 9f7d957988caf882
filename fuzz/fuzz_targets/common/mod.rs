//! What the targets share: the fixed group the seeds were made for, and a runtime for the
//! async extractors. The seeds of `gateway_feed`, `request_bodies` and `cli_files` are
//! written by `manager-cli/tests/fuzz_seeds.rs` for this same group (the same recipe: a
//! `ChaCha20Rng` seeded with [`SEED`], the group key first, then member 3's key and two
//! one-time keys), so signed entries, notes and snapshots of the seeds verify here.

#![allow(dead_code)]

use std::sync::OnceLock;

use dgsp_core::{CidStar, CsrItem, Manager, MemberKey, ParamSet};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// The seed of the fixtures' random generator (also in `manager-cli/tests/fuzz_seeds.rs`).
pub const SEED: u64 = 1717;
/// The fixed group's parameter set (a FIPS 205 set: its key generation is deterministic from
/// the generator, round 3.1 key generation is not).
pub const PARAMS: ParamSet = ParamSet::SlhDsaSha2_128f;
/// The member of the fixtures.
pub const MEMBER: u64 = 3;

/// The group, member 3's key and its two one-time keys, as the seeds make them.
pub struct Fixture {
    pub manager: Manager,
    pub member: MemberKey,
    pub items: Vec<CsrItem>,
}

pub fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let mut rng = ChaCha20Rng::seed_from_u64(SEED);
        let manager = Manager::generate(PARAMS, &mut rng);
        let cid_star = CidStar::from_slice(PARAMS, manager.cid_star(MEMBER).as_bytes())
            .expect("a cid* of the group's size");
        let member = MemberKey::generate(PARAMS, MEMBER, cid_star, &mut rng);
        let items = member.csr(2, &mut rng);
        Fixture {
            manager,
            member,
            items,
        }
    })
}

/// Runs an extractor's future to completion (they never wait on I/O here: the body is in
/// memory).
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a current-thread runtime")
    })
    .block_on(f)
}
