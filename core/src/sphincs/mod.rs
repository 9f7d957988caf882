//! A native SPHINCS+ v3.1 ("simple") verifier for the twelve parameter sets, byte-compatible
//! with PQClean (`pqcrypto-sphincsplus`), in safe Rust.
//!
//! Keys are still generated and signatures made by PQClean (`spx`); everything that
//! *checks* a SPHINCS+ signature in this crate goes through [`VerifyingKey`].
//!
//! # Structure
//!
//! | module | what |
//! |---|---|
//! | `params` | the per-set constants (`n, h, d, h', a, k, len`) |
//! | `address` | ADRS, in its 32-byte (SHAKE) and 22-byte (SHA-2) encodings |
//! | `hash` | `F`, `H`, `T_l`, `H_msg` with the `PK.seed` state precomputed, multi-lane kernels |
//! | `h_msg` | digest -> FORS message, tree index, leaf index |
//! | `fors` | FORS public key from a signature |
//! | `wots` | WOTS+ chain lengths (message digits and checksum) |
//! | `merkle` | roots from authentication paths |
//! | `hypertree` | the `d` layers of WOTS+ and Merkle trees |
//!
//! # Speed
//!
//! A verification is a few thousand independent-enough hash calls: the chains of a WOTS+
//! signature, the leaves and levels of the FORS trees, different signatures. They run
//! four at a time through the multi-lane SHA-256 (SHA-NI), SHA-512 (AVX2) and Keccak
//! kernels of the crate's `hashes` module; [`VerifyingKey::verify_batch`] additionally runs the same
//! stage of several signatures together, which fills the lanes where one signature alone
//! cannot (the Merkle climbs of the hypertree, one node per level).

#![forbid(unsafe_code)]

mod address;
mod fors;
mod h_msg;
mod hash;
mod hypertree;
mod merkle;
mod params;
mod wots;

pub use self::params::Standard;

/// FIPS 205's pure-mode message `M' = 0x00 || len(ctx) || ctx || M` (Algorithms 22 and 24)
/// that [`VerifyingKey::verify`] takes under [`Standard::Fips205`]; `None` when the context
/// is longer than 255 bytes.
pub fn fips205_message(ctx: &[u8], msg: &[u8]) -> Option<Vec<u8>> {
    let len = u8::try_from(ctx.len()).ok()?;
    let mut m = Vec::with_capacity(2 + ctx.len() + msg.len());
    m.extend_from_slice(&[0, len]);
    m.extend_from_slice(ctx);
    m.extend_from_slice(msg);
    Some(m)
}

use core::fmt;

use crate::error::DecodeError;
use crate::params::ParamSet;

use self::hash::Hasher;
use self::params::Params;

/// How many signatures [`VerifyingKey::verify_batch`] processes together; longer batches
/// are split into chunks of this many (which bounds the scratch memory, about
/// `BATCH_CHUNK * len` chain jobs, while leaving every stage enough independent work to keep
/// the lanes full).
pub const BATCH_CHUNK: usize = 16;

/// One signature being verified.
pub(crate) struct Item<'a> {
    /// The whole signature (length already checked).
    sig: &'a [u8],
    /// The FORS message.
    md: [u8; 40],
    /// The current layer's tree index.
    tree: u64,
    /// The current layer's leaf index.
    leaf: u32,
    /// The current root: FORS public key, then each layer's tree root.
    root: [u8; 32],
}

/// A SPHINCS+ public key ready to verify: the parameter set, the key bytes
/// `PK.seed || PK.root`, and the hash state precomputed from `PK.seed`.
#[derive(Clone)]
pub struct VerifyingKey {
    set: ParamSet,
    p: Params,
    pk: [u8; 64],
    hasher: Hasher,
}

impl VerifyingKey {
    /// A SPHINCS+ round 3.1 verifying key for `params` from the `2N`-byte public key
    /// `PK.seed || PK.root`.
    ///
    /// Any other length is [`DecodeError::WrongFieldLength`] (`field: "spx_pk"`).
    pub fn new(params: ParamSet, pk: &[u8]) -> Result<Self, DecodeError> {
        Self::with_standard(params, Standard::Round3, pk)
    }

    /// A verifying key for `params` under `standard`: [`Standard::Fips205`] verifies
    /// SLH-DSA signatures of the same constants (`slh_verify_internal`: the message given to
    /// [`verify`](Self::verify) is FIPS 205's `M'`, see [`fips205_message`]).
    pub fn with_standard(
        params: ParamSet,
        standard: Standard,
        pk: &[u8],
    ) -> Result<Self, DecodeError> {
        if pk.len() != params.spx_pk_len() {
            return Err(DecodeError::WrongFieldLength {
                field: "spx_pk",
                expected: params.spx_pk_len(),
                found: pk.len(),
            });
        }
        let p = Params {
            standard,
            ..Params::of(params)
        };
        let mut bytes = [0u8; 64];
        bytes[..pk.len()].copy_from_slice(pk);
        Ok(VerifyingKey {
            set: params,
            p,
            pk: bytes,
            hasher: Hasher::new(&p, &pk[..p.n]),
        })
    }

    /// The parameter set.
    pub fn params(&self) -> ParamSet {
        self.set
    }

    /// The specification the key follows.
    pub fn standard(&self) -> Standard {
        self.p.standard
    }

    /// The public key bytes `PK.seed || PK.root` (`2N`).
    pub fn as_bytes(&self) -> &[u8] {
        &self.pk[..2 * self.p.n]
    }

    /// Whether `sig` is a valid signature of `msg` under this key. Any problem (wrong
    /// length, any content) is `false`; never panics.
    pub fn verify(&self, msg: &[u8], sig: &[u8]) -> bool {
        self.verify_batch(&[(msg, sig)])[0]
    }

    /// Verifies `(message, signature)` pairs: one verdict per item, each the same as
    /// [`verify`](Self::verify) on that item, computed with the items' hash calls run
    /// together (chunks of [`BATCH_CHUNK`]).
    pub fn verify_batch(&self, items: &[(&[u8], &[u8])]) -> Vec<bool> {
        let mut verdicts = vec![false; items.len()];
        let wanted = self.p.sig_bytes();
        let ok: Vec<usize> = (0..items.len())
            .filter(|&i| items[i].1.len() == wanted)
            .collect();
        for chunk in ok.chunks(BATCH_CHUNK) {
            let mut batch: Vec<Item<'_>> = chunk
                .iter()
                .map(|&i| self.start(items[i].0, items[i].1))
                .collect();
            fors::public_keys(&self.p, &self.hasher, &mut batch);
            hypertree::climb(&self.p, &self.hasher, &mut batch);
            let n = self.p.n;
            for (&i, it) in chunk.iter().zip(&batch) {
                verdicts[i] = it.root[..n] == self.pk[n..2 * n];
            }
        }
        verdicts
    }

    /// `H_msg` of one item (its signature has the right length).
    fn start<'a>(&self, msg: &[u8], sig: &'a [u8]) -> Item<'a> {
        let n = self.p.n;
        let d = h_msg::digest(&self.p, &self.hasher, &sig[..n], self.as_bytes(), msg);
        Item {
            sig,
            md: d.md,
            tree: d.tree,
            leaf: d.leaf,
            root: [0; 32],
        }
    }
}

impl fmt::Debug for VerifyingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VerifyingKey({}, pk ", self.set)?;
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        f.write_str(")")
    }
}

#[cfg(test)]
mod tests;
