//! The run's randomness: one seed, printed first, from which every task draws its own
//! stream. The seed fixes every decision the suite makes (which member, which mode, which
//! fault, when); thread and network timing still vary between runs.

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// A seeded stream.
pub struct Rng(ChaCha8Rng);

impl Rng {
    /// The stream of task `stream` (0, 1, ...) of the run seeded `seed`.
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut r = ChaCha8Rng::seed_from_u64(seed);
        r.set_stream(stream);
        Rng(r)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        // Rejection sampling: no modulo bias.
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let v = self.0.next_u64();
            if v < zone {
                return v % n;
            }
        }
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// An index drawn by weight.
    pub fn weighted(&mut self, weights: &[u64]) -> usize {
        let total: u64 = weights.iter().sum();
        let mut x = self.below(total);
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                return i;
            }
            x -= w;
        }
        weights.len() - 1
    }

    /// `n` random bytes.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = vec![0; n];
        self.0.fill_bytes(&mut v);
        v
    }

    /// A fresh idempotency key.
    pub fn key(&mut self) -> String {
        hex::encode(self.bytes(12))
    }
}
