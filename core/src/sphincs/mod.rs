//! A native verifier for the manager's hash-based signatures, in safe Rust: SPHINCS+ round 3.1
//! ("simple", byte-compatible with PQClean's `pqcrypto-sphincsplus`) on ids 1-12, and FIPS 205
//! SLH-DSA (pure mode, empty context; checked against RustCrypto's `slh-dsa`) on ids 13-24.
//!
//! Keys are generated and signatures made by PQClean (round 3.1) or `slh-dsa` (FIPS 205) in
//! the crate's `spx` module; everything that *checks* a manager signature in this crate goes
//! through [`VerifyingKey`].
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

pub(crate) mod address;
mod fors;
mod h_msg;
pub(crate) mod hash;
mod hypertree;
mod merkle;
pub(crate) mod params;
#[cfg(any(feature = "sign", all(test, not(target_family = "wasm"))))]
mod sign;
mod wots;

pub use self::params::Standard;
#[cfg(feature = "sign")]
pub use self::sign::{SignError, SigningKey};

/// FIPS 205's pure-mode message `M' = 0x00 || len(ctx) || ctx || M` (Algorithms 22 and 24),
/// what [`VerifyingKey::verify_internal`] takes under [`Standard::Fips205`]; `None` when the
/// context is longer than 255 bytes. ([`VerifyingKey::verify`] adds the empty context's
/// prefix `0x00 0x00` itself, without a copy.)
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

/// The pure-mode prefix of the empty context, `0x00 || len("")`: what DGSP's FIPS 205 sets
/// sign in front of every message (spec section 7).
const PURE_EMPTY_CONTEXT: &[u8] = &[0, 0];

/// A manager public key ready to verify: the parameter set, the key bytes
/// `PK.seed || PK.root`, and the hash state precomputed from `PK.seed`.
#[derive(Clone)]
pub struct VerifyingKey {
    set: ParamSet,
    p: Params,
    pk: [u8; 64],
    hasher: Hasher,
}

impl VerifyingKey {
    /// A verifying key for `params` from the `2N`-byte public key `PK.seed || PK.root`:
    /// SPHINCS+ round 3.1 for ids 1-12, FIPS 205 SLH-DSA for ids 13-24
    /// ([`ParamSet::standard`]).
    ///
    /// Any other length is [`DecodeError::WrongFieldLength`] (`field: "spx_pk"`).
    pub fn new(params: ParamSet, pk: &[u8]) -> Result<Self, DecodeError> {
        if pk.len() != params.spx_pk_len() {
            return Err(DecodeError::WrongFieldLength {
                field: "spx_pk",
                expected: params.spx_pk_len(),
                found: pk.len(),
            });
        }
        let p = Params::of(params);
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

    /// Whether `sig` is a valid signature of `msg` under this key: SPHINCS+ round 3.1
    /// verification, or FIPS 205 `slh_verify(msg, sig, ctx = "", pk)` (pure mode, the empty
    /// context), as DGSP signs. Any problem (wrong length, any content) is `false`; never
    /// panics.
    pub fn verify(&self, msg: &[u8], sig: &[u8]) -> bool {
        self.verify_batch(&[(msg, sig)])[0]
    }

    /// [`verify`](Self::verify) without the FIPS 205 pure-mode prefix: `msg` is what is
    /// hashed (`slh_verify_internal`; pass [`fips205_message`] for another context). The same
    /// as `verify` for round 3.1 keys.
    pub fn verify_internal(&self, msg: &[u8], sig: &[u8]) -> bool {
        self.verify_items(&[(msg, sig)], &[])[0]
    }

    /// Verifies `(message, signature)` pairs: one verdict per item, each the same as
    /// [`verify`](Self::verify) on that item, computed with the items' hash calls run
    /// together (chunks of [`BATCH_CHUNK`]).
    pub fn verify_batch(&self, items: &[(&[u8], &[u8])]) -> Vec<bool> {
        let prefix = match self.p.standard {
            Standard::Round3 => &[][..],
            Standard::Fips205 => PURE_EMPTY_CONTEXT,
        };
        self.verify_items(items, prefix)
    }

    /// The batch verifier; `prefix` is hashed in front of every message.
    fn verify_items(&self, items: &[(&[u8], &[u8])], prefix: &[u8]) -> Vec<bool> {
        let mut verdicts = vec![false; items.len()];
        let wanted = self.p.sig_bytes();
        let ok: Vec<usize> = (0..items.len())
            .filter(|&i| items[i].1.len() == wanted)
            .collect();
        for chunk in ok.chunks(BATCH_CHUNK) {
            let mut batch: Vec<Item<'_>> = chunk
                .iter()
                .map(|&i| self.start(prefix, items[i].0, items[i].1))
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

    /// `H_msg` of one item (its signature has the right length) over `prefix || msg`.
    fn start<'a>(&self, prefix: &[u8], msg: &[u8], sig: &'a [u8]) -> Item<'a> {
        let n = self.p.n;
        let d = h_msg::digest(
            &self.p,
            &self.hasher,
            &sig[..n],
            self.as_bytes(),
            [prefix, msg],
        );
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
