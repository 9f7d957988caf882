//! Typed byte values of the scheme.
//!
//! Public `N`-byte values ([`Cid`], [`CidStar`], [`Pi`], [`Tau`], [`Rho`], [`WotsPk`],
//! [`MessageDigest`]) are small `Copy` types that know their length. Secret values
//! ([`SeedU`], [`WotsSeed`], [`HashSecret`], [`AesKey`]) are zeroized on drop, compared in
//! constant time and never shown by `Debug`.

use core::fmt;

use rand_core::CryptoRngCore;
use subtle::ConstantTimeEq;
use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::error::DecodeError;
use crate::params::{ParamSet, MAX_N};

macro_rules! public_value {
    ($(#[$doc:meta])* $name:ident, $field:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name {
            len: u8,
            bytes: [u8; MAX_N],
        }

        impl $name {
            /// Wraps `bytes`, which must be exactly `N` bytes for `params`.
            pub fn from_slice(params: ParamSet, bytes: &[u8]) -> Result<Self, DecodeError> {
                if bytes.len() != params.n() {
                    return Err(DecodeError::WrongFieldLength {
                        field: $field,
                        expected: params.n(),
                        found: bytes.len(),
                    });
                }
                Ok(Self::from_output(bytes))
            }

            /// Wraps hash output; the caller guarantees `bytes.len() <= MAX_N`.
            pub(crate) fn from_output(bytes: &[u8]) -> Self {
                let mut out = Self { len: bytes.len() as u8, bytes: [0; MAX_N] };
                out.bytes[..bytes.len()].copy_from_slice(bytes);
                out
            }

            /// The value's bytes (`N` of them).
            pub fn as_bytes(&self) -> &[u8] {
                &self.bytes[..self.len as usize]
            }
        }

        impl AsRef<[u8]> for $name {
            fn as_ref(&self) -> &[u8] {
                self.as_bytes()
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "("))?;
                for b in self.as_bytes() {
                    write!(f, "{b:02x}")?;
                }
                f.write_str(")")
            }
        }
    };
}

public_value!(
    /// `cid = HL("cid", hash_secret || be64(id))`: the manager's per-member secret-derived
    /// identifier. Only the manager can compute it; it is never published directly.
    Cid, "cid"
);
public_value!(
    /// `cid* = HL("cid*", cid || be64(id))`: given to the member at join; a certificate
    /// request must present it.
    CidStar, "cid*"
);
public_value!(
    /// `pi = HL("pi", wots_pk || cid)`: the opening proof that links a WOTS+ key to a member.
    Pi, "pi"
);
public_value!(
    /// `tau = HL("tau", wots_pk || pi || be64(id))`: the commitment carried in a signature
    /// and covered by the manager's certificate signature.
    Tau, "tau"
);
public_value!(
    /// `rho = HL("rho", wots_seed)`: the public seed of one WOTS+ key.
    Rho, "rho"
);
public_value!(
    /// A WOTS+ public key (spec section 3).
    WotsPk, "wots_pk"
);
public_value!(
    /// `d = HL("msg", rho || message)`: the digest a WOTS+ key signs.
    MessageDigest, "digest"
);

macro_rules! secret_value {
    ($(#[$doc:meta])* $name:ident, $field:literal) => {
        $(#[$doc])*
        #[derive(Clone, Zeroize, ZeroizeOnDrop)]
        pub struct $name {
            len: u8,
            bytes: [u8; MAX_N],
        }

        impl $name {
            /// Draws a fresh random value of `N` bytes for `params`.
            pub fn random(params: ParamSet, rng: &mut impl CryptoRngCore) -> Self {
                let mut out = Self { len: params.n() as u8, bytes: [0; MAX_N] };
                rng.fill_bytes(&mut out.bytes[..params.n()]);
                out
            }

            /// Wraps `bytes`, which must be exactly `N` bytes for `params`.
            pub fn from_slice(params: ParamSet, bytes: &[u8]) -> Result<Self, DecodeError> {
                if bytes.len() != params.n() {
                    return Err(DecodeError::WrongFieldLength {
                        field: $field,
                        expected: params.n(),
                        found: bytes.len(),
                    });
                }
                let mut out = Self { len: bytes.len() as u8, bytes: [0; MAX_N] };
                out.bytes[..bytes.len()].copy_from_slice(bytes);
                Ok(out)
            }

            /// The secret bytes. Handle with care: copies are not zeroized for you.
            pub fn expose_secret(&self) -> &[u8] {
                &self.bytes[..self.len as usize]
            }
        }

        impl PartialEq for $name {
            /// Constant-time comparison.
            fn eq(&self, other: &Self) -> bool {
                self.expose_secret().ct_eq(other.expose_secret()).into()
            }
        }

        impl Eq for $name {}

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(concat!(stringify!($name), "(<redacted>)"))
            }
        }
    };
}

secret_value!(
    /// A member's long-term secret seed `seed_u`.
    SeedU, "seed_u"
);
secret_value!(
    /// The secret seed of one CSR item (one future signature).
    WotsSeed, "wots_seed"
);
secret_value!(
    /// The manager's `hash_secret`, from which every `cid` is derived.
    HashSecret, "hash_secret"
);
secret_value!(
    /// The manager's AES key (`N` bytes: AES-128/192/256) that encrypts `(id, counter)` into zeta.
    AesKey, "aes_key"
);
secret_value!(
    /// `sk_seed = HL("wots-sk", seed_u || wots_seed)`: the WOTS+ secret seed.
    SkSeed, "sk_seed"
);

/// A 16-byte zeta: `AES_enc(aes_key, be64(id) || be64(counter))`, the public, unlinkable
/// serial number of one certificate. Revocation publishes zetas.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Zeta(pub [u8; 16]);

impl Zeta {
    /// The 16 bytes.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// Wraps a 16-byte slice.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, DecodeError> {
        let arr: [u8; 16] = bytes
            .try_into()
            .map_err(|_| DecodeError::WrongFieldLength {
                field: "zeta",
                expected: 16,
                found: bytes.len(),
            })?;
        Ok(Zeta(arr))
    }
}

impl fmt::Debug for Zeta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Zeta(")?;
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        f.write_str(")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_and_length_checked() {
        let s = SeedU::from_slice(ParamSet::Sha2_128f, &[7u8; 16]).unwrap();
        assert_eq!(format!("{s:?}"), "SeedU(<redacted>)");
        assert!(SeedU::from_slice(ParamSet::Sha2_128f, &[7u8; 15]).is_err());
        assert!(Pi::from_slice(ParamSet::Shake256f, &[1u8; 16]).is_err());
        let p = Pi::from_slice(ParamSet::Sha2_128f, &[0xab; 16]).unwrap();
        assert_eq!(format!("{p:?}"), format!("Pi({})", "ab".repeat(16)));
        assert!(Zeta::from_slice(&[0; 17]).is_err());
    }
}
