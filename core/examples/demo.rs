//! The whole DGSP life cycle on one machine, with sizes and timings:
//! keygen → join → CSR → issue → import → sign → verify → open → judge → revoke →
//! verify fails as revoked.
//!
//! `cargo run --release -p dgsp-core --example demo -- [PARAM_SET ...]`
//! (default: shake-256f and sha2-128f; `all` runs all 24 sets).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use dgsp_core::{
    Error, InMemoryPlm, InMemoryRevokedList, Kind, Manager, MemberKey, ParamSet, Signature,
};

fn timed<T>(label: &str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    println!("  {label:<34} {:>10}", fmt(start.elapsed()));
    out
}

fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.1} µs")
    }
}

fn run(params: ParamSet) -> Result<(), Error> {
    let mut rng = rand_core::OsRng;
    println!(
        "\n== {params} (N = {} bytes, WOTS+ len = {})",
        params.n(),
        params.wots_len()
    );
    let (plm, revoked) = (InMemoryPlm::new(), InMemoryRevokedList::new());
    let manager = timed("manager keygen", || Manager::generate(params, &mut rng));
    let group = manager.public_key().clone();

    let (id, cid_star) = timed("join alice", || manager.join(&plm, "alice"))?;
    manager.join(&plm, "bob")?;
    let alice = MemberKey::generate(params, id, cid_star, &mut rng);
    let items = timed("CSR, 8 items (member)", || alice.csr(8, &mut rng));
    let pks: Vec<_> = items.iter().map(|i| *i.wots_pk()).collect();
    let certs = timed("issue 8 certificates (parallel)", || {
        manager.issue(&plm, id, alice.cid_star(), &pks)
    })?;
    let mut keys = Vec::new();
    let mut items = items.into_iter();
    let first = items.next().expect("8 items");
    keys.push(timed("import 1 certificate (checked)", || {
        alice.import(&group, first, &certs[0])
    })?);
    for (item, cert) in items.zip(&certs[1..]) {
        keys.push(alice.import(&group, item, cert)?);
    }

    let msg = b"DGSP demo: approve invoice 2026-117";
    let key = keys.remove(0);
    let sig = timed("sign (one-time key used up)", || key.sign(msg));
    timed("verify", || group.verify(msg, &sig, &revoked))?;
    let opening = timed("open (verifies first)", || manager.open(msg, &sig))?;
    timed("judge", || group.judge(msg, &sig, opening.id, &opening.pi))?;
    println!(
        "  opened to member {} (certificate #{})",
        opening.id, opening.counter
    );

    let zetas = timed("revoke alice", || manager.revoke(&plm, &revoked, id))?;
    match group.verify(msg, &sig, &revoked) {
        Err(Error::Revoked) => println!(
            "  after revocation: verify says revoked ({} zetas published)",
            zetas.len()
        ),
        other => panic!("a revoked signature must not verify: {other:?}"),
    }
    let unused = keys.remove(0).sign(b"signed after revocation");
    assert!(matches!(
        group.verify(b"signed after revocation", &unused, &revoked),
        Err(Error::Revoked)
    ));

    println!(
        "  sizes: group public key {} B, manager secret key {} B, member key {} B,",
        Kind::ManagerPublicKey.encoded_len(params),
        Kind::ManagerSecretKey.encoded_len(params),
        Kind::MemberKey.encoded_len(params)
    );
    println!(
        "         certificate {} B, signature {} B",
        Kind::Certificate.encoded_len(params),
        Signature::encoded_len(params)
    );
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sets: Result<Vec<ParamSet>, _> = match args.as_slice() {
        [] => Ok(vec![ParamSet::Shake256f, ParamSet::Sha2_128f]),
        [all] if all == "all" => Ok(ParamSet::ALL.to_vec()),
        names => names.iter().map(|n| n.parse()).collect(),
    };
    let sets = match sets {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    for params in sets {
        if let Err(e) = run(params) {
            eprintln!("error: {params}: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
