//! The host side of the WebAssembly smoke test (`./scripts/wasm-smoke.sh`): makes a group,
//! one member and one signature, and writes `pk.bin`, `msg.bin` and `sig.bin` to DIR, for
//! the verify-only dgsp-core in wasm32 to check under Node.js.
//!
//! `cargo run -p dgsp-core --example wasm_smoke_gen -- DIR [PARAM_SET]` (default sha2-128f)

use dgsp_core::{InMemoryPlm, Manager, MemberKey, ParamSet};

fn main() {
    let dir = std::path::PathBuf::from(
        std::env::args()
            .nth(1)
            .expect("usage: wasm_smoke_gen DIR [PARAM_SET]"),
    );
    let params: ParamSet = std::env::args()
        .nth(2)
        .map_or(ParamSet::Sha2_128f, |s| s.parse().expect("parameter set"));
    let mut rng = rand_core::OsRng;
    let plm = InMemoryPlm::new();
    let manager = Manager::generate(params, &mut rng);
    let (id, cid_star) = manager.join(&plm, "wasm").unwrap();
    let member = MemberKey::generate(params, id, cid_star, &mut rng);
    let item = member.csr(1, &mut rng).pop().unwrap();
    let cert = manager
        .issue(&plm, id, member.cid_star(), &[*item.wots_pk()])
        .unwrap()
        .remove(0);
    let key = member.import(manager.public_key(), item, &cert).unwrap();
    let msg = b"verified in WebAssembly";
    let sig = key.sign(msg);
    std::fs::write(dir.join("pk.bin"), manager.public_key().to_bytes()).unwrap();
    std::fs::write(dir.join("msg.bin"), msg).unwrap();
    std::fs::write(dir.join("sig.bin"), sig.to_bytes()).unwrap();
}
