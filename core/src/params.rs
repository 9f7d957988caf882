//! The 24 parameter sets, chosen at run time: the twelve SPHINCS+ round 3.1 "simple" sets
//! (spec section 1, ids 1-12) and their twelve FIPS 205 SLH-DSA twins (spec section 7,
//! ids 13-24), which change only the manager's signature scheme.

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

/// Which specification the manager's signature scheme follows (spec sections 1 and 7).
///
/// The two families share every constant (`N`, tree heights, sizes) and every DGSP layer;
/// they differ in the manager's signatures only. A key, certificate or signature of one
/// family never verifies under the other: the parameter id in every header differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Standard {
    /// SPHINCS+ round 3.1 ("simple"), as PQClean implements it (ids 1-12): what the published
    /// `dgsp` crate and spec v1 started from.
    Round3,
    /// FIPS 205 SLH-DSA (ids 13-24): the standard since 2024, pure mode with the empty
    /// context; recommended for new groups.
    Fips205,
}

impl Standard {
    /// The machine-readable tag used in JSON (`round3` or `fips205`).
    pub const fn tag(self) -> &'static str {
        match self {
            Standard::Round3 => "round3",
            Standard::Fips205 => "fips205",
        }
    }

    /// A short human name: `SPHINCS+ round 3.1` or `FIPS 205 SLH-DSA`.
    pub const fn name(self) -> &'static str {
        match self {
            Standard::Round3 => "SPHINCS+ round 3.1",
            Standard::Fips205 => "FIPS 205 SLH-DSA",
        }
    }
}

impl fmt::Display for Standard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A DGSP parameter set: the manager's hash-based signature scheme (a SPHINCS+ round 3.1
/// "simple" set, or its FIPS 205 SLH-DSA twin) plus the matching DGSP sizes.
///
/// One binary handles all 24; the set travels in every encoded object's header
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
    /// `slh-dsa-sha2-128s` (id 13)
    SlhDsaSha2_128s = 13,
    /// `slh-dsa-sha2-128f` (id 14)
    SlhDsaSha2_128f = 14,
    /// `slh-dsa-sha2-192s` (id 15)
    SlhDsaSha2_192s = 15,
    /// `slh-dsa-sha2-192f` (id 16)
    SlhDsaSha2_192f = 16,
    /// `slh-dsa-sha2-256s` (id 17)
    SlhDsaSha2_256s = 17,
    /// `slh-dsa-sha2-256f` (id 18)
    SlhDsaSha2_256f = 18,
    /// `slh-dsa-shake-128s` (id 19)
    SlhDsaShake128s = 19,
    /// `slh-dsa-shake-128f` (id 20)
    SlhDsaShake128f = 20,
    /// `slh-dsa-shake-192s` (id 21)
    SlhDsaShake192s = 21,
    /// `slh-dsa-shake-192f` (id 22)
    SlhDsaShake192f = 22,
    /// `slh-dsa-shake-256s` (id 23)
    SlhDsaShake256s = 23,
    /// `slh-dsa-shake-256f` (id 24)
    SlhDsaShake256f = 24,
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
    /// All 24 sets, in id order.
    pub const ALL: [ParamSet; 24] = [
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
        ParamSet::SlhDsaSha2_128s,
        ParamSet::SlhDsaSha2_128f,
        ParamSet::SlhDsaSha2_192s,
        ParamSet::SlhDsaSha2_192f,
        ParamSet::SlhDsaSha2_256s,
        ParamSet::SlhDsaSha2_256f,
        ParamSet::SlhDsaShake128s,
        ParamSet::SlhDsaShake128f,
        ParamSet::SlhDsaShake192s,
        ParamSet::SlhDsaShake192f,
        ParamSet::SlhDsaShake256s,
        ParamSet::SlhDsaShake256f,
    ];

    /// The twelve SPHINCS+ round 3.1 sets (ids 1-12).
    pub const ROUND3: [ParamSet; 12] = {
        let mut out = [ParamSet::Sha2_128s; 12];
        let mut i = 0;
        while i < 12 {
            out[i] = Self::ALL[i];
            i += 1;
        }
        out
    };

    /// The twelve FIPS 205 SLH-DSA sets (ids 13-24).
    pub const FIPS205: [ParamSet; 12] = {
        let mut out = [ParamSet::Sha2_128s; 12];
        let mut i = 0;
        while i < 12 {
            out[i] = Self::ALL[i + 12];
            i += 1;
        }
        out
    };

    /// The one-byte id used in encoding headers.
    pub const fn id(self) -> u8 {
        self as u8
    }

    /// The set with this header id, if any.
    pub const fn from_id(id: u8) -> Option<ParamSet> {
        if id >= 1 && id as usize <= Self::ALL.len() {
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
            ParamSet::SlhDsaSha2_128s => "slh-dsa-sha2-128s",
            ParamSet::SlhDsaSha2_128f => "slh-dsa-sha2-128f",
            ParamSet::SlhDsaSha2_192s => "slh-dsa-sha2-192s",
            ParamSet::SlhDsaSha2_192f => "slh-dsa-sha2-192f",
            ParamSet::SlhDsaSha2_256s => "slh-dsa-sha2-256s",
            ParamSet::SlhDsaSha2_256f => "slh-dsa-sha2-256f",
            ParamSet::SlhDsaShake128s => "slh-dsa-shake-128s",
            ParamSet::SlhDsaShake128f => "slh-dsa-shake-128f",
            ParamSet::SlhDsaShake192s => "slh-dsa-shake-192s",
            ParamSet::SlhDsaShake192f => "slh-dsa-shake-192f",
            ParamSet::SlhDsaShake256s => "slh-dsa-shake-256s",
            ParamSet::SlhDsaShake256f => "slh-dsa-shake-256f",
        }
    }

    /// Position among the twelve shapes of one family: 0 for `*-128s` ... 11 for `shake-256f`.
    const fn shape(self) -> u8 {
        (self as u8 - 1) % 12
    }

    /// The specification of the manager's signature scheme.
    pub const fn standard(self) -> Standard {
        if (self as u8) <= 12 {
            Standard::Round3
        } else {
            Standard::Fips205
        }
    }

    /// The set with the same constants under the other [`Standard`]: `sha2-128f` <->
    /// `slh-dsa-sha2-128f`.
    pub const fn twin(self) -> ParamSet {
        let i = self as usize - 1;
        Self::ALL[(i + 12) % 24]
    }

    /// The round 3.1 set with the same constants (`self` for ids 1-12).
    pub const fn round3(self) -> ParamSet {
        Self::ALL[self.shape() as usize]
    }

    /// The hash family.
    pub const fn hash_family(self) -> HashFamily {
        if self.shape() < 6 {
            HashFamily::Sha2
        } else {
            HashFamily::Shake
        }
    }

    /// The security parameter `N` in bytes: 16, 24 or 32.
    pub const fn n(self) -> usize {
        match self.shape() % 6 {
            0 | 1 => 16,
            2 | 3 => 24,
            _ => 32,
        }
    }

    /// Whether this is a "fast" (`f`) set.
    pub const fn is_fast(self) -> bool {
        self.shape() % 2 == 1
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

    /// Length of the manager's SPHINCS+ / SLH-DSA public key `PK.seed || PK.root`: `2N`.
    pub const fn spx_pk_len(self) -> usize {
        2 * self.n()
    }

    /// Length of its secret key `SK.seed || SK.prf || PK.seed || PK.root`: `4N`.
    pub const fn spx_sk_len(self) -> usize {
        4 * self.n()
    }

    /// Length of a manager signature (SPHINCS+ round 3.1 and its SLH-DSA twin alike).
    pub const fn spx_sig_len(self) -> usize {
        match self.shape() % 6 {
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
        assert_eq!(ParamSet::from_id(25), None);
        assert_eq!(ParamSet::ALL.len(), 24);
        for (r, f) in ParamSet::ROUND3.into_iter().zip(ParamSet::FIPS205) {
            assert_eq!(r.standard(), Standard::Round3);
            assert_eq!(f.standard(), Standard::Fips205);
            assert_eq!((r.twin(), f.twin(), f.round3(), r.round3()), (f, r, r, r));
            assert_eq!(f.name(), format!("slh-dsa-{}", r.name()));
            assert_eq!(f.id(), r.id() + 12);
            assert_eq!(
                (f.n(), f.hash_family(), f.is_fast(), f.spx_sig_len()),
                (r.n(), r.hash_family(), r.is_fast(), r.spx_sig_len())
            );
        }
        assert_eq!(ParamSet::SlhDsaShake256f.id(), 24);
        assert_eq!(ParamSet::SlhDsaSha2_128f.hash_family(), HashFamily::Sha2);
        assert_eq!(ParamSet::SlhDsaShake128s.hash_family(), HashFamily::Shake);
        assert!("sha2-128".parse::<ParamSet>().is_err());
        assert_eq!(ParamSet::Shake256f.n(), 32);
        assert_eq!(ParamSet::Sha2_192s.n(), 24);
        assert_eq!(ParamSet::Shake128s.hash_family(), HashFamily::Shake);
        assert_eq!(ParamSet::Sha2_256f.hash_family(), HashFamily::Sha2);
        assert!(ParamSet::Sha2_128f.is_fast() && !ParamSet::Shake256s.is_fast());
    }
}
