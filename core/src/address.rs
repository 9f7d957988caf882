//! The SPHINCS+ 32-byte hash address (ADRS) and its 22-byte compressed form (spec 2.2).
//!
//! DGSP's WOTS+ keys live at `layer = 73`, `tree = 0`, `keypair = 0`, outside every address
//! the SPHINCS+ hypertree itself uses. Every setter really changes the address: chain `i`
//! and step `j` enter every chain hash.

/// `type` of a WOTS+ chain hash.
pub const WOTS_HASH: u32 = 0;
/// `type` of the WOTS+ public-key compression.
pub const WOTS_PK: u32 = 1;
/// `type` of the WOTS+ secret-key PRF.
pub const WOTS_PRF: u32 = 5;
/// The layer DGSP uses for its WOTS+ keys.
pub const DGSP_LAYER: u32 = 73;

/// A SPHINCS+ address: eight big-endian 32-bit words
/// `layer, tree[0..3], type, keypair, chain, hash`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Adrs([u8; 32]);

impl Adrs {
    /// The DGSP WOTS+ address of the given `type`, with chain and hash 0.
    pub fn dgsp(kind: u32) -> Self {
        let mut a = Adrs([0; 32]);
        a.0[0..4].copy_from_slice(&DGSP_LAYER.to_be_bytes());
        a.set_type(kind);
        a
    }

    /// Sets the `type` word.
    pub fn set_type(&mut self, kind: u32) {
        self.0[16..20].copy_from_slice(&kind.to_be_bytes());
    }

    /// Sets the `chain` word.
    pub fn set_chain(&mut self, chain: u32) {
        self.0[24..28].copy_from_slice(&chain.to_be_bytes());
    }

    /// Sets the `hash` word.
    pub fn set_hash(&mut self, hash: u32) {
        self.0[28..32].copy_from_slice(&hash.to_be_bytes());
    }

    /// The full 32-byte form (SHAKE sets).
    pub fn bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The 22-byte compressed form (SHA-2 sets): `layer` low byte, the low 64 bits of
    /// `tree`, `type` low byte, then `keypair`, `chain` and `hash` as full words.
    pub fn compressed(&self) -> [u8; 22] {
        let mut c = [0u8; 22];
        c[0] = self.0[3];
        c[1..9].copy_from_slice(&self.0[8..16]);
        c[9] = self.0[19];
        c[10..22].copy_from_slice(&self.0[20..32]);
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setters_change_the_address() {
        let mut a = Adrs::dgsp(WOTS_HASH);
        let before = a;
        a.set_chain(3);
        assert_ne!(a, before);
        let after_chain = a;
        a.set_hash(9);
        assert_ne!(a, after_chain);
        assert_eq!(&a.bytes()[..4], &[0, 0, 0, 73]);
        assert_eq!(&a.bytes()[24..], &[0, 0, 0, 3, 0, 0, 0, 9]);
        let c = a.compressed();
        assert_eq!(c[0], 73);
        assert_eq!(c[9], WOTS_HASH as u8);
        assert_eq!(&c[14..], &[0, 0, 0, 3, 0, 0, 0, 9]);
        assert_eq!(
            &c[18..],
            &[0, 0, 0, 9],
            "the hash word ends the compressed form"
        );
    }
}
