//! SPHINCS+ hash addresses (ADRS) and their two byte encodings.
//!
//! An address is eight 32-bit words `layer, tree (3 words), type, keypair, chain/height,
//! hash/index`. The SHAKE sets hash all 32 bytes, big-endian; the SHA-2 sets hash the
//! 22-byte compressed form: the low byte of `layer`, the low 64 bits of `tree`, the low
//! byte of `type`, then `keypair`, `chain/height` and `hash/index` as full words. These are
//! exactly the byte offsets of PQClean's `shake_offsets.h` and `sha2_offsets.h` (the
//! one-byte fields there are the low bytes of our words, the rest of the word being zero
//! because every value fits).

/// `type` of a WOTS+ chain hash.
pub(crate) const WOTS_HASH: u8 = 0;
/// `type` of the WOTS+ public-key compression.
pub(crate) const WOTS_PK: u8 = 1;
/// `type` of a hypertree (XMSS) node.
pub(crate) const TREE: u8 = 2;
/// `type` of a FORS tree node (leaves included).
pub(crate) const FORS_TREE: u8 = 3;
/// `type` of the FORS roots compression.
pub(crate) const FORS_ROOTS: u8 = 4;
/// `type` of the PRF deriving a WOTS+ chain's secret start (signing only).
#[cfg(any(feature = "sign", all(test, not(target_family = "wasm"))))]
pub(crate) const WOTS_PRF: u8 = 5;
/// `type` of the PRF deriving a FORS leaf's secret value (signing only).
#[cfg(any(feature = "sign", all(test, not(target_family = "wasm"))))]
pub(crate) const FORS_PRF: u8 = 6;

/// One address. The `tree` field is at most 64 bits in every parameter set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Address {
    /// Hypertree layer (0 = the bottom layer, which also holds FORS).
    pub layer: u8,
    /// Tree index within the layer.
    pub tree: u64,
    /// Address type.
    pub kind: u8,
    /// Key pair (leaf) index.
    pub keypair: u32,
    /// Chain index (WOTS+) or node height (trees).
    pub word6: u32,
    /// Hash index in the chain (WOTS+) or node index (trees).
    pub word7: u32,
}

/// Offset of `word7` (hash / tree index) inside the compressed address.
pub(crate) const COMPRESSED_WORD7: usize = 18;

impl Address {
    /// The address of a node or chain step of `kind` in tree `tree` of `layer`.
    pub(crate) fn new(layer: u8, tree: u64, kind: u8, keypair: u32) -> Self {
        Address {
            layer,
            tree,
            kind,
            keypair,
            word6: 0,
            word7: 0,
        }
    }

    /// The full 32-byte form (SHAKE sets).
    pub(crate) fn full(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        b[3] = self.layer;
        b[8..16].copy_from_slice(&self.tree.to_be_bytes());
        b[19] = self.kind;
        b[20..24].copy_from_slice(&self.keypair.to_be_bytes());
        b[24..28].copy_from_slice(&self.word6.to_be_bytes());
        b[28..32].copy_from_slice(&self.word7.to_be_bytes());
        b
    }

    /// The full form as four little-endian 64-bit Keccak lanes.
    pub(crate) fn lanes(&self) -> [u64; 4] {
        [
            u64::from(self.layer) << 24,
            self.tree.swap_bytes(),
            (u64::from(self.kind) << 24) | (u64::from(self.keypair.swap_bytes()) << 32),
            u64::from(self.word6.swap_bytes()) | (u64::from(self.word7.swap_bytes()) << 32),
        ]
    }

    /// The 22-byte compressed form (SHA-2 sets).
    pub(crate) fn compressed(&self) -> [u8; 22] {
        let mut c = [0u8; 22];
        c[0] = self.layer;
        c[1..9].copy_from_slice(&self.tree.to_be_bytes());
        c[9] = self.kind;
        c[10..14].copy_from_slice(&self.keypair.to_be_bytes());
        c[14..18].copy_from_slice(&self.word6.to_be_bytes());
        c[18..22].copy_from_slice(&self.word7.to_be_bytes());
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_put_fields_at_the_pqclean_offsets() {
        let a = Address {
            layer: 5,
            tree: 0x0102_0304_0506_0708,
            kind: FORS_TREE,
            keypair: 0x1A2,
            word6: 9,
            word7: 0x0B0C_0D0E,
        };
        let f = a.full();
        // shake_offsets.h: layer 3, tree 8, type 19, kp 22/23, chain/height 27, hash/index 28..32
        assert_eq!(f[3], 5);
        assert_eq!(&f[8..16], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(f[19], FORS_TREE);
        assert_eq!((f[22], f[23]), (0x01, 0xA2));
        assert_eq!(f[27], 9);
        assert_eq!(&f[28..32], &[0x0B, 0x0C, 0x0D, 0x0E]);
        // sha2_offsets.h: layer 0, tree 1, type 9, kp 12/13, chain/height 17, hash/index 18..22
        let c = a.compressed();
        assert_eq!(c[0], 5);
        assert_eq!(&c[1..9], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(c[9], FORS_TREE);
        assert_eq!((c[12], c[13]), (0x01, 0xA2));
        assert_eq!(c[17], 9);
        assert_eq!(&c[COMPRESSED_WORD7..], &[0x0B, 0x0C, 0x0D, 0x0E]);
        // lanes are the little-endian reading of the full form
        let lanes = a.lanes();
        for (i, lane) in lanes.iter().enumerate() {
            let mut b = [0u8; 8];
            b.copy_from_slice(&f[8 * i..8 * i + 8]);
            assert_eq!(*lane, u64::from_le_bytes(b));
        }
    }
}
