//! Typed keys: the manager's key pair and a member's secret, with `to_bytes` / `from_bytes`
//! in the encodings of spec section 5.

use core::fmt;
use core::hash::{Hash, Hasher};

use rand_core::CryptoRngCore;
use sha3::{Digest, Sha3_256};
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use crate::encoding::{self, Kind};
use crate::error::DecodeError;
use crate::params::ParamSet;
use crate::sphincs;
use crate::values::{AesKey, CidStar, HashSecret, SeedU};
use crate::MemberId;

/// The group's public key: the manager's SPHINCS+ public key. Verifiers need only this.
///
/// It carries a ready [`sphincs::VerifyingKey`] (the hash state precomputed from the key's
/// public seed); equality and hashing look at the parameter set and key bytes only.
#[derive(Clone)]
pub struct ManagerPublicKey {
    params: ParamSet,
    spx_pk: Vec<u8>,
    vk: sphincs::VerifyingKey,
}

impl PartialEq for ManagerPublicKey {
    fn eq(&self, other: &Self) -> bool {
        self.params == other.params && self.spx_pk == other.spx_pk
    }
}

impl Eq for ManagerPublicKey {}

impl Hash for ManagerPublicKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.params.hash(state);
        self.spx_pk.hash(state);
    }
}

impl ManagerPublicKey {
    /// Builds the key from its raw SPHINCS+ public key (`2N` bytes, checked).
    fn from_spx(params: ParamSet, spx_pk: &[u8]) -> Result<Self, DecodeError> {
        Ok(ManagerPublicKey {
            params,
            spx_pk: spx_pk.to_vec(),
            vk: sphincs::VerifyingKey::new(params, spx_pk)?,
        })
    }

    /// The native SPHINCS+ verifier for this key.
    pub fn verifying_key(&self) -> &sphincs::VerifyingKey {
        &self.vk
    }

    /// The parameter set of the group.
    pub fn params(&self) -> ParamSet {
        self.params
    }

    /// The raw SPHINCS+ public key (`2N` bytes).
    pub fn spx_bytes(&self) -> &[u8] {
        &self.spx_pk
    }

    /// Encodes as kind 1: header `|| spx_pk`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = encoding::start(self.params, Kind::ManagerPublicKey);
        out.extend_from_slice(&self.spx_pk);
        out
    }

    /// Decodes a kind-1 encoding.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let (params, mut f) = encoding::open(bytes, Kind::ManagerPublicKey)?;
        Self::from_spx(params, f.take(params.spx_pk_len()))
    }

    /// SHA3-256 of the encoding: a short, stable name for the group's trust anchor.
    pub fn fingerprint(&self) -> [u8; 32] {
        Sha3_256::digest(self.to_bytes()).into()
    }
}

impl fmt::Debug for ManagerPublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fp = self.fingerprint();
        write!(f, "ManagerPublicKey({}, fingerprint ", self.params)?;
        for b in &fp[..8] {
            write!(f, "{b:02x}")?;
        }
        f.write_str("..)")
    }
}

/// The manager's secret key: `hash_secret`, `aes_key` and the SPHINCS+ secret key.
/// Zeroized on drop; `Debug` shows only the parameter set.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct ManagerSecretKey {
    #[zeroize(skip)]
    params: ParamSet,
    pub(crate) hash_secret: HashSecret,
    pub(crate) aes_key: AesKey,
    pub(crate) spx_sk: Vec<u8>,
}

impl ManagerSecretKey {
    /// A fresh manager key: a SPHINCS+ key pair from the OS, the two symmetric secrets from `rng`.
    /// Requires the `sign` feature.
    #[cfg(feature = "sign")]
    pub fn generate(params: ParamSet, rng: &mut impl CryptoRngCore) -> Self {
        let (_pk, spx_sk) = crate::spx::keypair(params, rng);
        ManagerSecretKey {
            params,
            hash_secret: HashSecret::random(params, rng),
            aes_key: AesKey::random(params, rng),
            spx_sk: spx_sk.to_vec(),
        }
    }

    /// The parameter set.
    pub fn params(&self) -> ParamSet {
        self.params
    }

    /// The matching public key (a SPHINCS+ secret key ends with its public key).
    pub fn public_key(&self) -> ManagerPublicKey {
        let n = self.params.n();
        ManagerPublicKey::from_spx(self.params, &self.spx_sk[2 * n..4 * n])
            .expect("a decoded secret key is 4N bytes, so its public half is 2N")
    }

    /// Encodes as kind 2: header `|| hash_secret || aes_key || spx_sk`. The buffer is
    /// zeroized when dropped.
    pub fn to_bytes(&self) -> Zeroizing<Vec<u8>> {
        let mut out = encoding::start(self.params, Kind::ManagerSecretKey);
        out.extend_from_slice(self.hash_secret.expose_secret());
        out.extend_from_slice(self.aes_key.expose_secret());
        out.extend_from_slice(&self.spx_sk);
        Zeroizing::new(out)
    }

    /// Decodes a kind-2 encoding. With the `sign` feature the SPHINCS+ key's `PK.root` is
    /// also checked against its seeds ([`DecodeError::InconsistentKey`] otherwise), at the
    /// cost of one hypertree layer (about a twentieth of a signature on the `f` sets, an
    /// eighth on the `s` sets), so that a key that decodes signs.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let (params, mut f) = encoding::open(bytes, Kind::ManagerSecretKey)?;
        let n = params.n();
        let key = ManagerSecretKey {
            params,
            hash_secret: HashSecret::from_slice(params, f.take(n))?,
            aes_key: AesKey::from_slice(params, f.take(n))?,
            spx_sk: f.take(params.spx_sk_len()).to_vec(),
        };
        #[cfg(feature = "sign")]
        if !crate::spx::is_consistent(params, &key.spx_sk) {
            return Err(DecodeError::InconsistentKey { field: "spx_sk" });
        }
        Ok(key)
    }
}

impl fmt::Debug for ManagerSecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ManagerSecretKey({}, <redacted>)", self.params)
    }
}

/// A member's secret: `seed_u`, the member id and `cid*` (kind 5). Zeroized on drop.
#[derive(Clone, PartialEq, Eq, Zeroize, ZeroizeOnDrop)]
pub struct MemberKey {
    #[zeroize(skip)]
    params: ParamSet,
    pub(crate) seed_u: SeedU,
    #[zeroize(skip)]
    id: MemberId,
    #[zeroize(skip)]
    cid_star: CidStar,
}

impl MemberKey {
    /// A fresh member key for the `(id, cid*)` the manager returned at join.
    pub fn generate(
        params: ParamSet,
        id: MemberId,
        cid_star: CidStar,
        rng: &mut impl CryptoRngCore,
    ) -> Self {
        MemberKey {
            params,
            seed_u: SeedU::random(params, rng),
            id,
            cid_star,
        }
    }

    /// The parameter set.
    pub fn params(&self) -> ParamSet {
        self.params
    }

    /// The member id assigned at join.
    pub fn id(&self) -> MemberId {
        self.id
    }

    /// The member's `cid*`, presented with every certificate request.
    pub fn cid_star(&self) -> &CidStar {
        &self.cid_star
    }

    /// Encodes as kind 5: header `|| seed_u || be64(id) || cid*`; zeroized when dropped.
    pub fn to_bytes(&self) -> Zeroizing<Vec<u8>> {
        let mut out = encoding::start(self.params, Kind::MemberKey);
        out.extend_from_slice(self.seed_u.expose_secret());
        out.extend_from_slice(&self.id.to_be_bytes());
        out.extend_from_slice(self.cid_star.as_bytes());
        Zeroizing::new(out)
    }

    /// Decodes a kind-5 encoding.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let (params, mut f) = encoding::open(bytes, Kind::MemberKey)?;
        let n = params.n();
        let seed_u = SeedU::from_slice(params, f.take(n))?;
        let mut id = [0u8; 8];
        id.copy_from_slice(f.take(8));
        Ok(MemberKey {
            params,
            seed_u,
            id: u64::from_be_bytes(id),
            cid_star: CidStar::from_slice(params, f.take(n))?,
        })
    }
}

impl fmt::Debug for MemberKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MemberKey({}, id {}, <redacted>)", self.params, self.id)
    }
}
