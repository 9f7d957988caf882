//! What the long differential tests share: the random mutations they apply to a signed
//! message before asking two verifiers for their verdicts, and the loop over the cases.

use dgsp_core::ParamSet;
use rand_chacha::rand_core::RngCore;

/// Number of mutation kinds [`mutate`] picks from (kind 0 leaves the pair untouched).
pub const KINDS: u32 = 8;

/// Applies one random mutation to the message `m` and the signature `s` and returns its
/// kind: 0 untouched; 1-3 one signature byte xored with a non-zero value; 4 one to four
/// random bytes xored; 5 the signature truncated or extended; 6 a new random message; 7 a
/// message bit flipped or a byte appended.
pub fn mutate(rng: &mut impl RngCore, m: &mut Vec<u8>, s: &mut Vec<u8>) -> u32 {
    let kind = rng.next_u32() % KINDS;
    match kind {
        0 => {}
        1..=3 => {
            let pos = rng.next_u32() as usize % s.len();
            s[pos] ^= (rng.next_u32() % 255 + 1) as u8;
        }
        4 => {
            for _ in 0..1 + rng.next_u32() % 4 {
                let pos = rng.next_u32() as usize % s.len();
                s[pos] ^= rng.next_u32() as u8;
            }
        }
        5 => {
            let new_len = if rng.next_u32().is_multiple_of(2) {
                rng.next_u32() as usize % s.len()
            } else {
                s.len() + 1 + rng.next_u32() as usize % 64
            };
            s.resize(new_len, rng.next_u32() as u8);
        }
        6 => {
            *m = vec![0u8; rng.next_u32() as usize % 100];
            rng.fill_bytes(m);
        }
        _ => {
            if m.is_empty() || rng.next_u32().is_multiple_of(2) {
                m.push(rng.next_u32() as u8);
            } else {
                let pos = rng.next_u32() as usize % m.len();
                m[pos] ^= 1 << (rng.next_u32() % 8);
            }
        }
    }
    kind
}

/// One key of a long differential: what it signed, and the two verifiers' verdicts.
pub trait Fixture {
    /// The key's parameter set (named in failure messages).
    fn set(&self) -> ParamSet;
    /// The (message, signature) pairs it signed.
    fn signed(&self) -> &[(Vec<u8>, Vec<u8>)];
    /// The native verifier's verdict on `(m, s)` and the oracle's.
    fn verdicts(&self, m: &[u8], s: &[u8]) -> (bool, bool);
}

/// Runs `cases` random cases and counts the native verdicts (accepted, rejected): each case
/// picks one of `fixtures`, one of its signed pairs and one mutation ([`mutate`]), and
/// asserts that the two verifiers agree and that an untouched pair (kind 0) is accepted.
pub fn run_cases<F: Fixture>(rng: &mut impl RngCore, cases: u64, fixtures: &[F]) -> (u64, u64) {
    let (mut accepted, mut rejected) = (0u64, 0u64);
    for case in 0..cases {
        let f = &fixtures[rng.next_u32() as usize % fixtures.len()];
        let pairs = f.signed();
        let (m, s) = &pairs[rng.next_u32() as usize % pairs.len()];
        let (mut m, mut s) = (m.clone(), s.clone());
        let kind = mutate(rng, &mut m, &mut s);
        let (ours, theirs) = f.verdicts(&m, &s);
        assert_eq!(ours, theirs, "case {case} ({}, kind {kind})", f.set());
        assert!(
            kind != 0 || ours,
            "case {case} ({}): an untouched signature rejected",
            f.set()
        );
        if ours {
            accepted += 1;
        } else {
            rejected += 1;
        }
    }
    (accepted, rejected)
}

/// The number of cases a long differential runs: env `var`, else `default`.
pub fn env_u64(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
