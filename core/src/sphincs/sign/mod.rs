//! The native signer: SPHINCS+ round 3.1 ("simple", byte-identical to PQClean given the same
//! `OptRand`) on ids 1-12 and FIPS 205 SLH-DSA (pure mode, empty context; byte-identical to
//! RustCrypto's `slh-dsa`, deterministic and hedged) on ids 13-24, on the verifier's
//! multi-lane kernels.
//!
//! # How a signature is made
//!
//! Everything but the WOTS+ signatures of the hypertree is known from the message digest
//! alone: which FORS key pair and which tree of each layer sign. So a signature is two
//! passes of a few thousand independent hash calls each, run through the lanes together,
//! and a third that only reads what they kept:
//!
//! 1. **FORS** (`fors`): the `k · 2^a` leaf secrets (`PRF`), the leaves (`F`), every level
//!    of all `k` trees (`H`), the authentication paths and `T_k` of the roots.
//! 2. **Every layer's tree** (`hypertree`): the chain starts of all `2^h'` WOTS+ key pairs
//!    of all `d` layers (`PRF`), their chains (`F`, fifteen steps each, through the
//!    lane-refill scheduler, every position of the signing key pairs' chains kept), one
//!    `T_len` per key pair (through the lanes), then every level of all `d` trees. The top
//!    tree's root must be `PK.root`: a signer whose key or computation is wrong stops here
//!    instead of signing (see [`SigningKey::sign`]).
//! 3. **The `d` WOTS+ signatures**: layer 0 signs the FORS public key, layer `i` the root of
//!    layer `i - 1`, now all known; each signed chain value is read from the positions
//!    kept in pass 2, so no `F` call is made twice.
//!
//! # Secrets
//!
//! `SK.seed` and `SK.prf` are wiped when the key is dropped; the scratch buffers that held
//! chain positions and FORS secrets, and the kernels' lane arrays, are wiped when a
//! signature is done. The kernels' own transient states (registers, and the few spilled to the
//! stack) are not.

mod fors;
mod hypertree;
mod prf_msg;
mod tree;

use core::fmt;

use zeroize::{Zeroize, Zeroizing};

use super::hash::Hasher;
use super::params::{Params, Standard};
use super::{h_msg, VerifyingKey, PURE_EMPTY_CONTEXT};
use crate::error::DecodeError;
use crate::params::ParamSet;

/// A manager secret key ready to sign: `SK.seed`, `SK.prf`, `PK.seed`, `PK.root`, and the
/// hash state precomputed from `PK.seed`. Its secret parts are wiped on drop; `Debug` shows
/// only the parameter set and the public key.
#[derive(Clone)]
pub struct SigningKey {
    set: ParamSet,
    p: Params,
    /// `SK.seed || SK.prf` (`N` bytes each, the rest zero).
    secret: Zeroizing<[u8; 64]>,
    /// `PK.seed || PK.root`.
    pk: [u8; 64],
    hasher: Hasher,
}

impl SigningKey {
    /// The key pair of three `N`-byte seeds: FIPS 205 `slh_keygen_internal(SK.seed, SK.prf,
    /// PK.seed)`, which is also PQClean's `crypto_sign_seed_keypair` for round 3.1 sets
    /// (`PK.root` is the top tree's root; one layer of the hypertree is computed).
    ///
    /// A seed of another length is [`DecodeError::WrongFieldLength`].
    pub fn from_seeds(
        params: ParamSet,
        sk_seed: &[u8],
        sk_prf: &[u8],
        pk_seed: &[u8],
    ) -> Result<Self, DecodeError> {
        let n = params.n();
        for (field, seed) in [
            ("sk_seed", sk_seed),
            ("sk_prf", sk_prf),
            ("pk_seed", pk_seed),
        ] {
            if seed.len() != n {
                return Err(DecodeError::WrongFieldLength {
                    field,
                    expected: n,
                    found: seed.len(),
                });
            }
        }
        let mut key = Self::assemble(params, sk_seed, sk_prf, pk_seed, &[0u8; 32][..n]);
        let root = hypertree::top_root(&key.p, &key.hasher, key.sk_seed());
        key.pk[n..2 * n].copy_from_slice(&root[..n]);
        Ok(key)
    }

    /// The `4N`-byte secret key `SK.seed || SK.prf || PK.seed || PK.root` (the layout of
    /// PQClean, `slh-dsa` and FIPS 205). Only the length is checked here; that `PK.root`
    /// belongs to the seeds is checked by every signature ([`SigningKey::sign`]) and, at
    /// the cost of one hypertree layer, by [`SigningKey::check`].
    ///
    /// Any other length is [`DecodeError::WrongFieldLength`] (`field: "spx_sk"`).
    pub fn from_bytes(params: ParamSet, sk: &[u8]) -> Result<Self, DecodeError> {
        let n = params.n();
        if sk.len() != params.spx_sk_len() {
            return Err(DecodeError::WrongFieldLength {
                field: "spx_sk",
                expected: params.spx_sk_len(),
                found: sk.len(),
            });
        }
        Ok(Self::assemble(
            params,
            &sk[..n],
            &sk[n..2 * n],
            &sk[2 * n..3 * n],
            &sk[3 * n..],
        ))
    }

    fn assemble(
        params: ParamSet,
        sk_seed: &[u8],
        sk_prf: &[u8],
        pk_seed: &[u8],
        pk_root: &[u8],
    ) -> Self {
        let p = Params::of(params);
        let n = p.n;
        let mut secret = Zeroizing::new([0u8; 64]);
        secret[..n].copy_from_slice(sk_seed);
        secret[32..32 + n].copy_from_slice(sk_prf);
        let mut pk = [0u8; 64];
        pk[..n].copy_from_slice(pk_seed);
        pk[n..2 * n].copy_from_slice(pk_root);
        SigningKey {
            set: params,
            p,
            secret,
            pk,
            hasher: Hasher::new(&p, pk_seed),
        }
    }

    /// Whether `PK.root` is the root the seeds give (one hypertree layer of work).
    pub fn check(&self) -> bool {
        let n = self.p.n;
        hypertree::top_root(&self.p, &self.hasher, self.sk_seed())[..n] == self.pk[n..2 * n]
    }

    /// The parameter set.
    pub fn params(&self) -> ParamSet {
        self.set
    }

    /// The public key bytes `PK.seed || PK.root` (`2N`).
    pub fn public_key(&self) -> &[u8] {
        &self.pk[..2 * self.p.n]
    }

    /// The verifying key of this key.
    pub fn verifying_key(&self) -> VerifyingKey {
        VerifyingKey::new(self.set, self.public_key())
            .expect("a signing key's public key has its set's length")
    }

    /// The `4N`-byte secret key `SK.seed || SK.prf || PK.seed || PK.root`.
    pub fn to_bytes(&self) -> Zeroizing<Vec<u8>> {
        let n = self.p.n;
        let mut out = Zeroizing::new(Vec::with_capacity(4 * n));
        out.extend_from_slice(self.sk_seed());
        out.extend_from_slice(&self.secret[32..32 + n]);
        out.extend_from_slice(self.public_key());
        out
    }

    fn sk_seed(&self) -> &[u8] {
        &self.secret[..self.p.n]
    }

    /// Signs `msg` as DGSP does: a SPHINCS+ round 3.1 signature, or FIPS 205 pure
    /// `slh_sign(msg, ctx = "")`. `opt_rand` (`N` bytes) is PQClean's `OptRand` / FIPS 205's
    /// `addrnd`; `None` is the deterministic variant (`opt_rand = PK.seed`).
    ///
    /// # Errors
    /// [`SignError::OptRandLength`] if `opt_rand` is not `N` bytes;
    /// [`SignError::RootMismatch`] if the hypertree computed for this signature does not end
    /// at `PK.root` (a secret key whose parts do not belong together, or a fault during the
    /// computation): nothing is returned then, since a signature from a faulty computation
    /// can give away one-time keys.
    pub fn sign(&self, msg: &[u8], opt_rand: Option<&[u8]>) -> Result<Vec<u8>, SignError> {
        let prefix = match self.p.standard {
            Standard::Round3 => &[][..],
            Standard::Fips205 => PURE_EMPTY_CONTEXT,
        };
        self.sign_parts([prefix, msg], opt_rand)
    }

    /// [`sign`](Self::sign) without the FIPS 205 pure-mode prefix: `msg` is what is signed
    /// (`slh_sign_internal`). The same as `sign` for round 3.1 keys.
    ///
    /// # Errors
    /// As [`sign`](Self::sign).
    pub fn sign_internal(&self, msg: &[u8], opt_rand: Option<&[u8]>) -> Result<Vec<u8>, SignError> {
        self.sign_parts([&[], msg], opt_rand)
    }

    /// Signs the concatenation of `msg`'s two parts.
    fn sign_parts(&self, msg: [&[u8]; 2], opt_rand: Option<&[u8]>) -> Result<Vec<u8>, SignError> {
        let p = &self.p;
        let n = p.n;
        let opt_rand = match opt_rand {
            Some(r) if r.len() != n => {
                return Err(SignError::OptRandLength {
                    expected: n,
                    found: r.len(),
                })
            }
            Some(r) => r,
            None => &self.pk[..n],
        };
        let mut r = [0u8; 32];
        prf_msg::prf_msg(p, &self.secret[32..32 + n], opt_rand, msg, &mut r[..n]);
        self.sign_randomized(&r[..n], msg)
    }

    /// The signature of `msg` with randomizer `R` (`N` bytes): everything after `PRF_msg`.
    fn sign_randomized(&self, r: &[u8], msg: [&[u8]; 2]) -> Result<Vec<u8>, SignError> {
        let p = &self.p;
        let n = p.n;
        let mut sig = vec![0u8; p.sig_bytes()];
        sig[..n].copy_from_slice(r);
        let d = h_msg::digest(p, &self.hasher, r, self.public_key(), msg);

        let (fors_sig, ht_sig) = sig[n..].split_at_mut(p.fors_bytes());
        let fors_pk = fors::sign(p, &self.hasher, self.sk_seed(), &d, fors_sig);
        let root = hypertree::sign(
            p,
            &self.hasher,
            self.sk_seed(),
            d.tree,
            d.leaf,
            &fors_pk,
            ht_sig,
        );
        if root[..n] != self.pk[n..2 * n] {
            sig.zeroize();
            return Err(SignError::RootMismatch);
        }
        Ok(sig)
    }
}

/// Why [`SigningKey::sign`] made no signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignError {
    /// `opt_rand` must be `N` bytes.
    #[error("opt_rand is {found} bytes, the parameter set needs {expected}")]
    OptRandLength {
        /// `N`.
        expected: usize,
        /// What was given.
        found: usize,
    },
    /// The hypertree computed while signing does not end at the key's `PK.root`.
    #[error("the hypertree does not end at PK.root: the secret key is inconsistent or the computation faulted; no signature was made")]
    RootMismatch,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SigningKey({}, pk ", self.set)?;
        for b in self.public_key() {
            write!(f, "{b:02x}")?;
        }
        f.write_str(")")
    }
}

#[cfg(test)]
mod tests;
