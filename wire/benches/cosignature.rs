//! What witnessing costs a signer and a verifier (docs/benchmarks.md, "Witnesses"):
//! an ML-DSA-44 checkpoint signature (the log's, and each ML-DSA-44 witness's: the same
//! C2SP `subtree/v1` message), verifying one, and verifying a whole witnessed note with two
//! cosignatures against a 2-of-2 policy (the offline check a verifier runs per answer).
//! Also prints the sizes a witnessed note adds to an answer.
//!
//!     cargo bench -p dgsp-wire --bench cosignature

use criterion::{black_box, Criterion};
use dgsp_wire::note::checkpoint_body::CheckpointBody;
use dgsp_wire::note::cosignature::{verify_signature_line, MlDsaCosigner};
use dgsp_wire::note::policy::Policy;
use dgsp_wire::note::signed_note::SignatureLine;
use dgsp_wire::note::witnessed::{verify_witnessed, witnessed_note};

const ORIGIN: &str = "dgsp/0123456789abcdef0123456789abcdef";
const NOW: u64 = 1_795_000_000;

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let log = MlDsaCosigner::from_seed(ORIGIN, &[1; 32]).unwrap();
    let w1 = MlDsaCosigner::from_seed("witness-1.example", &[2; 32]).unwrap();
    let w2 = MlDsaCosigner::from_seed("witness-2.example", &[3; 32]).unwrap();
    let (size, root) = (123_456u64, [7u8; 32]);
    let body = CheckpointBody::plain(ORIGIN, size, root);
    let log_line = log.cosign(ORIGIN, size, &root, NOW).unwrap();
    let cosignatures = [
        w1.cosign(ORIGIN, size, &root, NOW).unwrap(),
        w2.cosign(ORIGIN, size, &root, NOW).unwrap(),
    ];
    let note = witnessed_note(ORIGIN, size, &root, &log_line, &cosignatures);
    let policy = Policy::parse(&format!(
        "log {}\nwitness w1 {}\nwitness w2 {}\ngroup both all w1 w2\nquorum both\n",
        log.vkey(),
        w1.vkey(),
        w2.vkey()
    ))
    .unwrap();
    verify_witnessed(&note, &policy, NOW, Some(60), 5).expect("the fixture verifies");
    let line = SignatureLine::parse(log_line.trim_end()).unwrap();
    println!(
        "sizes: log signature line {} bytes, one ML-DSA-44 cosignature line {} bytes, witnessed note with two cosignatures {} bytes",
        log_line.len(),
        cosignatures[0].len(),
        note.len()
    );

    let mut g = c.benchmark_group("ml-dsa-44 cosignature");
    g.bench_function("sign (subtree/v1 message)", |b| {
        let mut t = NOW;
        b.iter(|| {
            t += 1;
            black_box(log.cosign(ORIGIN, size, &root, t).unwrap())
        })
    });
    g.bench_function("verify one line", |b| {
        b.iter(|| black_box(verify_signature_line(log.verifier(), &body, &line).unwrap()))
    });
    g.bench_function("verify a witnessed note, 2-of-2 policy", |b| {
        b.iter(|| black_box(verify_witnessed(&note, &policy, NOW, Some(60), 5).unwrap()))
    });
    g.finish();
    c.final_summary();
}
