//! Zeta: the certificate serial number `AES_enc(aes_key, be64(id) || be64(counter))`
//! (spec section 4), with AES-128, AES-192 or AES-256 matching `N`.
//!
//! Zetas look random to everyone but the manager, who decrypts them to open signatures
//! and recomputes them all to revoke a member.

use aes::cipher::generic_array::GenericArray;
use aes::cipher::{BlockDecrypt, BlockEncrypt, KeyInit};
use aes::{Aes128, Aes192, Aes256};
use rayon::prelude::*;

use crate::values::{AesKey, Zeta};
use crate::MemberId;

/// Counters per parallel work item when deriving many zetas.
const CHUNK: usize = 4096;

/// The manager's zeta cipher (key schedule expanded once; zeroized on drop).
pub(crate) enum ZetaCipher {
    A128(Aes128),
    A192(Aes192),
    A256(Aes256),
}

fn block(id: MemberId, counter: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&id.to_be_bytes());
    b[8..].copy_from_slice(&counter.to_be_bytes());
    b
}

impl ZetaCipher {
    /// Expands `key` (16, 24 or 32 bytes).
    pub(crate) fn new(key: &AesKey) -> Self {
        let k = key.expose_secret();
        match k.len() {
            16 => ZetaCipher::A128(Aes128::new(GenericArray::from_slice(k))),
            24 => ZetaCipher::A192(Aes192::new(GenericArray::from_slice(k))),
            _ => ZetaCipher::A256(Aes256::new(GenericArray::from_slice(k))),
        }
    }

    fn encrypt_in_place(&self, blocks: &mut [GenericArray<u8, aes::cipher::consts::U16>]) {
        match self {
            ZetaCipher::A128(c) => c.encrypt_blocks(blocks),
            ZetaCipher::A192(c) => c.encrypt_blocks(blocks),
            ZetaCipher::A256(c) => c.encrypt_blocks(blocks),
        }
    }

    /// The zeta of `(id, counter)`.
    pub(crate) fn zeta(&self, id: MemberId, counter: u64) -> Zeta {
        let mut b = [GenericArray::from(block(id, counter))];
        self.encrypt_in_place(&mut b);
        Zeta(b[0].into())
    }

    /// The zetas of `(id, c)` for every `c` in `start..end`, computed in parallel.
    pub(crate) fn zetas(&self, id: MemberId, start: u64, end: u64) -> Vec<Zeta>
    where
        Self: Sync,
    {
        let count = end.saturating_sub(start) as usize;
        let mut out = vec![Zeta([0; 16]); count];
        out.par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(chunk, zs)| {
                let first = start + (chunk * CHUNK) as u64;
                let mut blocks: Vec<_> = (0..zs.len() as u64)
                    .map(|k| GenericArray::from(block(id, first + k)))
                    .collect();
                self.encrypt_in_place(&mut blocks);
                for (z, b) in zs.iter_mut().zip(blocks) {
                    z.0 = b.into();
                }
            });
        out
    }

    /// Decrypts a zeta back to `(id, counter)`.
    pub(crate) fn open(&self, zeta: &Zeta) -> (MemberId, u64) {
        let mut b = GenericArray::from(zeta.0);
        match self {
            ZetaCipher::A128(c) => c.decrypt_block(&mut b),
            ZetaCipher::A192(c) => c.decrypt_block(&mut b),
            ZetaCipher::A256(c) => c.decrypt_block(&mut b),
        }
        let mut id = [0u8; 8];
        let mut ctr = [0u8; 8];
        id.copy_from_slice(&b[..8]);
        ctr.copy_from_slice(&b[8..]);
        (u64::from_be_bytes(id), u64::from_be_bytes(ctr))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ParamSet;

    #[test]
    fn batch_equals_single_and_decrypts_back() {
        for p in [
            ParamSet::Sha2_128f,
            ParamSet::Sha2_192f,
            ParamSet::Shake256f,
        ] {
            let key = AesKey::from_slice(p, &vec![0x42; p.n()]).unwrap();
            let c = ZetaCipher::new(&key);
            let all = c.zetas(9, 10, 10 + 2 * CHUNK as u64 + 5);
            assert_eq!(all.len(), 2 * CHUNK + 5);
            for (k, z) in all.iter().enumerate().step_by(977) {
                assert_eq!(*z, c.zeta(9, 10 + k as u64));
                assert_eq!(c.open(z), (9, 10 + k as u64));
            }
            assert!(c.zetas(9, 5, 5).is_empty());
        }
    }
}
