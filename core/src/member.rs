//! The member's side: certificate requests (CSRs), importing certificates, and signing.

use core::fmt;

use rand_core::CryptoRngCore;
use rayon::prelude::*;

use crate::certificate::{cert_message, Certificate};
use crate::derive;
use crate::error::Error;
use crate::keys::{ManagerPublicKey, MemberKey};
use crate::params::ParamSet;
use crate::signature::Signature;
use crate::values::{Rho, SkSeed, Tau, WotsPk, WotsSeed, Zeta};
use crate::wots;

/// Above this many items a CSR derives its WOTS+ keys in parallel.
const PARALLEL_CSR: usize = 4;

/// One prepared WOTS+ key (one future signature) awaiting its certificate. Secret: keep
/// the `wots_seed`, send only [`CsrItem::wots_pk`] to the manager.
///
/// A `CsrItem` is deliberately neither `Clone` nor `Copy`: [`MemberKey::import`] consumes
/// it into a [`SigningKey`], and [`SigningKey::sign`] consumes that, so one item yields at
/// most one signature through the types. (A wallet that stores the seed and rebuilds the
/// item with [`CsrItem::from_seed`] takes that duty over: it must never rebuild an item
/// whose key has signed.)
///
/// ```compile_fail,E0599
/// fn import_twice(item: dgsp_core::CsrItem) -> (dgsp_core::CsrItem, dgsp_core::CsrItem) {
///     // A second copy of the one-time key does not compile.
///     (item.clone(), item)
/// }
/// ```
pub struct CsrItem {
    params: ParamSet,
    wots_seed: WotsSeed,
    rho: Rho,
    sk_seed: SkSeed,
    wots_pk: WotsPk,
}

impl CsrItem {
    /// Rebuilds an item from its seed (how a wallet stores it). Each call yields a new
    /// item for the same one-time key: the caller must rebuild only items whose key has not
    /// signed yet.
    pub fn from_seed(member: &MemberKey, wots_seed: WotsSeed) -> Self {
        let params = member.params();
        let rho = derive::rho(params, &wots_seed);
        let sk_seed = derive::sk_seed(params, &member.seed_u, &wots_seed);
        let wots_pk = wots::public_key(params, &rho, &sk_seed);
        CsrItem {
            params,
            wots_seed,
            rho,
            sk_seed,
            wots_pk,
        }
    }

    /// Rebuilds an item from what a wallet stores for it: the seed and the WOTS+ public key
    /// [`CsrItem::from_seed`] derived from it, taken as given (two derivations instead of the
    /// key generation). The caller vouches that `wots_pk` is the seed's key (the wallet checks
    /// it at import and keeps both sealed); a wrong one yields signatures that fail
    /// verification. The same duty as `from_seed`: rebuild only items that have not signed.
    pub fn from_stored(member: &MemberKey, wots_seed: WotsSeed, wots_pk: WotsPk) -> Self {
        let params = member.params();
        CsrItem {
            params,
            rho: derive::rho(params, &wots_seed),
            sk_seed: derive::sk_seed(params, &member.seed_u, &wots_seed),
            wots_seed,
            wots_pk,
        }
    }

    /// The WOTS+ public key the manager certifies.
    pub fn wots_pk(&self) -> &WotsPk {
        &self.wots_pk
    }

    /// The item's secret seed, for storage.
    pub fn wots_seed(&self) -> &WotsSeed {
        &self.wots_seed
    }
}

impl fmt::Debug for CsrItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CsrItem({:?}, <redacted>)", self.wots_pk)
    }
}

impl MemberKey {
    /// Prepares `count` fresh WOTS+ keys. Send their [`CsrItem::wots_pk`]s with `cid*`.
    pub fn csr(&self, count: usize, rng: &mut impl CryptoRngCore) -> Vec<CsrItem> {
        let seeds: Vec<WotsSeed> = (0..count)
            .map(|_| WotsSeed::random(self.params(), rng))
            .collect();
        if count > PARALLEL_CSR {
            seeds
                .into_par_iter()
                .map(|s| CsrItem::from_seed(self, s))
                .collect()
        } else {
            seeds
                .into_iter()
                .map(|s| CsrItem::from_seed(self, s))
                .collect()
        }
    }

    /// Checks a certificate against the group key and binds it to its CSR item. A
    /// certificate that fails the check is refused and must not be stored.
    pub fn import(
        &self,
        group: &ManagerPublicKey,
        item: CsrItem,
        cert: &Certificate,
    ) -> Result<SigningKey, Error> {
        let key = self.resume(group, item, cert)?;
        let msg = cert_message(key.item.wots_pk.as_bytes(), cert.zeta(), key.tau.as_bytes());
        if !group.verifying_key().verify(&msg, cert.spx_signature()) {
            return Err(Error::InvalidCertificate);
        }
        Ok(key)
    }

    /// Binds a certificate that [`MemberKey::import`] already accepted to its CSR item,
    /// without checking it again: what a wallet does per signature, with the item rebuilt by
    /// [`CsrItem::from_stored`].
    ///
    /// Only the parameter sets are checked and `tau` derived: not the certificate's SPHINCS+
    /// verification, which on sha2-128f is about 22 times the work of [`SigningKey::sign`]
    /// (5 times on shake-256f; docs/benchmarks.md). The caller
    /// vouches that `import` accepted `cert` for this item's key, kept where nobody else can
    /// change it (the wallet's sealed file). A certificate of another key yields a
    /// signature that fails verification, never one under another key.
    pub fn resume(
        &self,
        group: &ManagerPublicKey,
        item: CsrItem,
        cert: &Certificate,
    ) -> Result<SigningKey, Error> {
        let params = group.params();
        for found in [self.params(), item.params, cert.params()] {
            if found != params {
                return Err(Error::mismatch(params, found));
            }
        }
        let tau = derive::tau(params, &item.wots_pk, cert.pi(), self.id());
        Ok(SigningKey {
            item,
            zeta: *cert.zeta(),
            tau,
            spx_sig: cert.spx_signature().to_vec(),
        })
    }
}

/// A certified WOTS+ key: signs exactly one message. [`SigningKey::sign`] consumes it, so
/// the type system forbids a second signature with the same key.
pub struct SigningKey {
    item: CsrItem,
    zeta: Zeta,
    tau: Tau,
    spx_sig: Vec<u8>,
}

impl SigningKey {
    /// The certificate's zeta.
    pub fn zeta(&self) -> &Zeta {
        &self.zeta
    }

    /// The underlying CSR item (for storage).
    pub fn item(&self) -> &CsrItem {
        &self.item
    }

    /// Signs `message`, using this key up.
    pub fn sign(self, message: &[u8]) -> Signature {
        let params = self.item.params;
        let d = derive::message_digest(params, &self.item.rho, message);
        let wots_sig = wots::sign(params, &self.item.rho, &self.item.sk_seed, &d);
        Signature::new(
            params,
            wots_sig,
            self.item.rho,
            self.zeta,
            self.spx_sig,
            self.tau,
        )
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SigningKey({:?}, <redacted>)", self.zeta)
    }
}
