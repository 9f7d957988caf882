//! The group manager's operations: join, certificate issuance, opening and revocation.

use core::fmt;
use core::ops::Range;

use subtle::ConstantTimeEq;

use crate::derive;
use crate::error::{DecodeError, Error};
use crate::keys::{ManagerPublicKey, ManagerSecretKey};
use crate::params::ParamSet;
use crate::plm::Plm;
use crate::revoked::RevokedList;
use crate::signature::Signature;
use crate::values::{Cid, CidStar, Pi, WotsPk, Zeta};
use crate::zeta::ZetaCipher;
use crate::MemberId;

// Key generation and certificate signing (feature `sign`).
#[cfg(feature = "sign")]
use {
    crate::certificate::{cert_message, Certificate},
    crate::spx,
    rand_core::CryptoRngCore,
    rayon::prelude::*,
};

/// What opening a signature reveals to the manager.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opening {
    /// The signer.
    pub id: MemberId,
    /// Which of the signer's certificates was used.
    pub counter: u64,
    /// The proof a third party checks with [`ManagerPublicKey::judge`].
    pub pi: Pi,
}

/// The group manager: the secret key plus its expanded forms.
///
/// Generating a group (`generate`) and anything that signs (`issue`, `certify`,
/// `sign_checkpoint`, `sign_snapshot`)
/// require the `sign` feature; a manager loaded from its secret key with [`new`](Self::new)
/// can join, open and revoke without it.
pub struct Manager {
    sk: ManagerSecretKey,
    pk: ManagerPublicKey,
    cipher: ZetaCipher,
}

impl fmt::Debug for Manager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Manager({:?})", self.pk)
    }
}

impl Manager {
    /// Generates a new group of parameter set `params`.
    #[cfg(feature = "sign")]
    pub fn generate(params: ParamSet, rng: &mut impl CryptoRngCore) -> Self {
        Self::new(ManagerSecretKey::generate(params, rng))
    }

    /// Loads a manager from its secret key.
    pub fn new(sk: ManagerSecretKey) -> Self {
        let pk = sk.public_key();
        let cipher = ZetaCipher::new(&sk.aes_key);
        Manager { sk, pk, cipher }
    }

    /// The parameter set.
    pub fn params(&self) -> ParamSet {
        self.sk.params()
    }

    /// The group public key.
    pub fn public_key(&self) -> &ManagerPublicKey {
        &self.pk
    }

    /// The secret key (for storing it, encrypted).
    pub fn secret_key(&self) -> &ManagerSecretKey {
        &self.sk
    }

    /// The member's `cid` (manager-private: with it, anyone could compute `pi`).
    pub fn cid(&self, id: MemberId) -> Cid {
        derive::cid(self.params(), &self.sk.hash_secret, id)
    }

    /// The member's `cid*`, as handed out at join.
    pub fn cid_star(&self, id: MemberId) -> CidStar {
        derive::cid_star(self.params(), &self.cid(id), id)
    }

    /// Checks `cid*` for member `id` in constant time.
    pub fn check_cid_star(&self, id: MemberId, cid_star: &CidStar) -> Result<(), Error> {
        let ok: bool = self
            .cid_star(id)
            .as_bytes()
            .ct_eq(cid_star.as_bytes())
            .into();
        if ok {
            Ok(())
        } else {
            Err(Error::CidStarMismatch(id))
        }
    }

    /// Admits `username`: assigns the next id and returns `(id, cid*)` for the member.
    pub fn join<P: Plm + ?Sized>(
        &self,
        plm: &P,
        username: &str,
    ) -> Result<(MemberId, CidStar), Error> {
        let id = plm.add_member(username)?;
        Ok((id, self.cid_star(id)))
    }

    /// Issues one certificate per WOTS+ public key to member `id`.
    ///
    /// Refuses, changing nothing, unless the member exists, is active and `cid*` matches;
    /// then reserves the counter range atomically and signs the certificates in parallel.
    #[cfg(feature = "sign")]
    pub fn issue<P: Plm + ?Sized>(
        &self,
        plm: &P,
        id: MemberId,
        cid_star: &CidStar,
        wots_pks: &[WotsPk],
    ) -> Result<Vec<Certificate>, Error> {
        self.check_request(wots_pks)?;
        let record = plm
            .member(id)?
            .ok_or(crate::StoreError::UnknownMember(id))?;
        if !record.active {
            return Err(crate::StoreError::Inactive(id).into());
        }
        self.check_cid_star(id, cid_star)?;
        let first = plm.reserve_counters(id, wots_pks.len() as u64)?;
        Ok(self.certify(id, first, wots_pks))
    }

    /// Checks a certificate request's shape: non-empty, every key `N` bytes.
    pub fn check_request(&self, wots_pks: &[WotsPk]) -> Result<(), Error> {
        if wots_pks.is_empty() {
            return Err(Error::EmptyRequest);
        }
        let n = self.params().n();
        if let Some(bad) = wots_pks.iter().find(|pk| pk.as_bytes().len() != n) {
            return Err(DecodeError::WrongFieldLength {
                field: "wots_pk",
                expected: n,
                found: bad.as_bytes().len(),
            }
            .into());
        }
        Ok(())
    }

    /// Signs certificates for counters `first, first + 1, ...` without touching a PLM: for
    /// stores that reserve the counter range themselves (the caller guarantees the range
    /// is reserved for `id` and the member is entitled to it). Runs in parallel.
    #[cfg(feature = "sign")]
    pub fn certify(&self, id: MemberId, first: u64, wots_pks: &[WotsPk]) -> Vec<Certificate> {
        let params = self.params();
        let cid = self.cid(id);
        wots_pks
            .par_iter()
            .enumerate()
            .map(|(k, wots_pk)| {
                let zeta = self.cipher.zeta(id, first + k as u64);
                let pi = derive::pi(params, wots_pk, &cid);
                let tau = derive::tau(params, wots_pk, &pi, id);
                let msg = cert_message(wots_pk.as_bytes(), &zeta, tau.as_bytes());
                Certificate::new(params, zeta, pi, spx::sign(params, &self.sk.spx_sk, &msg))
            })
            .collect()
    }

    /// Opens a valid signature to its signer. Never opens an invalid one (revoked
    /// signatures can still be opened).
    pub fn open(&self, message: &[u8], sig: &Signature) -> Result<Opening, Error> {
        let wots_pk = self.pk.verify_ignoring_revocation(message, sig)?;
        let (id, counter) = self.cipher.open(sig.zeta());
        let pi = derive::pi(self.params(), &wots_pk, &self.cid(id));
        Ok(Opening { id, counter, pi })
    }

    /// The zetas of member `id`'s certificates with counters in `counters` (in parallel).
    pub fn zetas(&self, id: MemberId, counters: Range<u64>) -> Vec<Zeta> {
        self.cipher.zetas(id, counters.start, counters.end)
    }

    /// Revokes member `id`: deactivates it for good, then puts the zetas of every
    /// certificate it was issued on the revoked list and returns them.
    ///
    /// Idempotent: revoking again recomputes the same zetas and re-inserts them, which also
    /// heals a previous call whose insert failed after the deactivation.
    pub fn revoke<P: Plm + ?Sized, R: RevokedList + ?Sized>(
        &self,
        plm: &P,
        revoked: &R,
        id: MemberId,
    ) -> Result<Vec<Zeta>, Error> {
        let d = plm.deactivate(id)?;
        let zetas = self.zetas(id, 0..d.counter);
        revoked.insert(&zetas)?;
        Ok(zetas)
    }
}
