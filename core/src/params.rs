//! The twelve SPHINCS+ v3.1 "simple" parameter sets (spec section 1), chosen at run time.

use core::fmt;
use core::str::FromStr;

use crate::error::DecodeError;

/// Which hash family a parameter set is built on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HashFamily {
    /// SHA-256 / SHA-512 (SPHINCS+ "sha2" sets).
    Sha2,
    /// SHAKE256 (SPHINCS+ "shake" sets).
    Shake,
}

/// A DGSP parameter set: a SPHINCS+ v3.1 "simple" set plus the matching DGSP sizes.
///
/// One binary handles all twelve; the set travels in every encoded object's header
/// (spec section 5), so decoding tells which set an object belongs to.
///
/// The `f` ("fast") sets sign quickly and make large signatures; the `s` ("small") sets make
/// smaller signatures and are 10-20x slower to sign.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ParamSet {
    /// `sha2-128s` (id 1)
    Sha2_128s = 1,
    /// `sha2-128f` (id 2)
    Sha2_128f = 2,
    /// `sha2-192s` (id 3)
    Sha2_192s = 3,
    /// `sha2-192f` (id 4)
    Sha2_192f = 4,
    /// `sha2-256s` (id 5)
    Sha2_256s = 5,
    /// `sha2-256f` (id 6)
    Sha2_256f = 6,
    /// `shake-128s` (id 7)
    Shake128s = 7,
    /// `shake-128f` (id 8)
    Shake128f = 8,
    /// `shake-192s` (id 9)
    Shake192s = 9,
    /// `shake-192f` (id 10)
    Shake192f = 10,
    /// `shake-256s` (id 11)
    Shake256s = 11,
    /// `shake-256f` (id 12)
    Shake256f = 12,
}

/// WOTS+ Winternitz parameter `w` (spec section 3).
pub const WOTS_W: usize = 16;
/// Number of WOTS+ checksum digits (`len2`).
pub const WOTS_LEN2: usize = 3;
/// Largest security parameter `N` in bytes, over all sets.
pub const MAX_N: usize = 32;
/// Largest WOTS+ `len` over all sets (`2 * 32 + 3`).
pub const MAX_WOTS_LEN: usize = 2 * MAX_N + WOTS_LEN2;

impl ParamSet {
    /// All twelve sets, in id order.
    pub const ALL: [ParamSet; 12] = [
        ParamSet::Sha2_128s,
        ParamSet::Sha2_128f,
        ParamSet::Sha2_192s,
        ParamSet::Sha2_192f,
        ParamSet::Sha2_256s,
        ParamSet::Sha2_256f,
        ParamSet::Shake128s,
        ParamSet::Shake128f,
        ParamSet::Shake192s,
        ParamSet::Shake192f,
        ParamSet::Shake256s,
        ParamSet::Shake256f,
    ];

    /// The one-byte id used in encoding headers.
    pub const fn id(self) -> u8 {
        self as u8
    }

    /// The set with this header id, if any.
    pub const fn from_id(id: u8) -> Option<ParamSet> {
        if id >= 1 && id <= 12 {
            Some(Self::ALL[id as usize - 1])
        } else {
            None
        }
    }

    /// The canonical name (`sha2-128f`, `shake-256s`, ...), used in every flag, file and JSON field.
    pub const fn name(self) -> &'static str {
        match self {
            ParamSet::Sha2_128s => "sha2-128s",
            ParamSet::Sha2_128f => "sha2-128f",
            ParamSet::Sha2_192s => "sha2-192s",
            ParamSet::Sha2_192f => "sha2-192f",
            ParamSet::Sha2_256s => "sha2-256s",
            ParamSet::Sha2_256f => "sha2-256f",
            ParamSet::Shake128s => "shake-128s",
            ParamSet::Shake128f => "shake-128f",
            ParamSet::Shake192s => "shake-192s",
            ParamSet::Shake192f => "shake-192f",
            ParamSet::Shake256s => "shake-256s",
            ParamSet::Shake256f => "shake-256f",
        }
    }

    /// The hash family.
    pub const fn hash_family(self) -> HashFamily {
        if (self as u8) <= 6 {
            HashFamily::Sha2
        } else {
            HashFamily::Shake
        }
    }

    /// The security parameter `N` in bytes: 16, 24 or 32.
    pub const fn n(self) -> usize {
        match (self as u8 - 1) % 6 {
            0 | 1 => 16,
            2 | 3 => 24,
            _ => 32,
        }
    }

    /// Whether this is a "fast" (`f`) set.
    pub const fn is_fast(self) -> bool {
        (self as u8).is_multiple_of(2)
    }

    /// WOTS+ `len1 = 2N`: message digits.
    pub const fn wots_len1(self) -> usize {
        2 * self.n()
    }

    /// WOTS+ `len = len1 + len2`: number of chains (35, 51 or 67).
    pub const fn wots_len(self) -> usize {
        self.wots_len1() + WOTS_LEN2
    }

    /// Length in bytes of a WOTS+ signature: `len * N`.
    pub const fn wots_sig_len(self) -> usize {
        self.wots_len() * self.n()
    }

    /// Length of a SPHINCS+ public key: `2N`.
    pub const fn spx_pk_len(self) -> usize {
        2 * self.n()
    }

    /// Length of a SPHINCS+ secret key: `4N`.
    pub const fn spx_sk_len(self) -> usize {
        4 * self.n()
    }

    /// Length of a SPHINCS+ v3.1 signature for this set.
    pub const fn spx_sig_len(self) -> usize {
        match (self as u8 - 1) % 6 {
            0 => 7_856,
            1 => 17_088,
            2 => 16_224,
            3 => 35_664,
            4 => 29_792,
            _ => 49_856,
        }
    }

    /// AES key length in bytes for zeta encryption: equal to `N` (AES-128/192/256).
    pub const fn aes_key_len(self) -> usize {
        self.n()
    }
}

impl fmt::Display for ParamSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ParamSet {
    type Err = DecodeError;

    /// Parses a canonical name; the error lists the accepted names.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ParamSet::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| DecodeError::UnknownParamSetName(s.to_owned()))
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for ParamSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for ParamSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_names_and_sizes_round_trip() {
        for (i, p) in ParamSet::ALL.into_iter().enumerate() {
            assert_eq!(p.id() as usize, i + 1);
            assert_eq!(ParamSet::from_id(p.id()), Some(p));
            assert_eq!(p.name().parse::<ParamSet>().unwrap(), p);
            assert_eq!(p.wots_len(), 2 * p.n() + 3);
        }
        assert_eq!(ParamSet::from_id(0), None);
        assert_eq!(ParamSet::from_id(13), None);
        assert!("sha2-128".parse::<ParamSet>().is_err());
        assert_eq!(ParamSet::Shake256f.n(), 32);
        assert_eq!(ParamSet::Sha2_192s.n(), 24);
        assert_eq!(ParamSet::Shake128s.hash_family(), HashFamily::Shake);
        assert_eq!(ParamSet::Sha2_256f.hash_family(), HashFamily::Sha2);
        assert!(ParamSet::Sha2_128f.is_fast() && !ParamSet::Shake256s.is_fast());
    }
}
