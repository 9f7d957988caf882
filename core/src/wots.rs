//! WOTS+ with `w = 16` (spec section 3), with real chain and hash addresses and the real
//! checksum. A WOTS+ key signs exactly one digest; DGSP certifies each key once.

use zeroize::Zeroize;

use crate::address::{DGSP_LAYER, WOTS_HASH, WOTS_PK, WOTS_PRF};
use crate::params::{ParamSet, MAX_N, MAX_WOTS_LEN, WOTS_W};
use crate::sphincs::address::Address;
use crate::sphincs::hash::{ChainJob, Hasher};
use crate::sphincs::params::Params;
use crate::values::{MessageDigest, Rho, SkSeed, WotsPk};

/// Highest chain position (`w - 1`).
const TOP: u8 = (WOTS_W - 1) as u8;

/// The `len` base-16 digits of a digest: `len1 = 2N` message digits, most significant
/// nibble first, then three checksum digits of `(sum(15 - m_i)) << 4` as a big-endian u16.
pub fn digits(params: ParamSet, d: &MessageDigest) -> [u8; MAX_WOTS_LEN] {
    let mut out = [0u8; MAX_WOTS_LEN];
    let len1 = params.wots_len1();
    for (i, b) in d.as_bytes().iter().enumerate() {
        out[2 * i] = b >> 4;
        out[2 * i + 1] = b & 0x0f;
    }
    let checksum: u32 = out[..len1].iter().map(|&m| 15 - u32::from(m)).sum();
    let c = ((checksum << 4) as u16).to_be_bytes();
    out[len1] = c[0] >> 4;
    out[len1 + 1] = c[0] & 0x0f;
    out[len1 + 2] = c[1] >> 4;
    out
}

/// The SPHINCS+ tweakable hashes keyed by a member key's `rho`: its chains run through the
/// same multi-lane kernels as the SPHINCS+ verifier's and signer's (`sphincs::hash`).
fn hasher(params: ParamSet, rho: &Rho) -> Hasher {
    Hasher::new(&Params::of(params), rho.as_bytes())
}

/// The DGSP WOTS+ address of `kind` and chain `chain` (spec section 3: layer 73, tree and
/// key pair 0), hash index 0: the same bytes as [`crate::address::Adrs::dgsp`].
fn adrs(kind: u32, chain: usize) -> Address {
    Address {
        layer: DGSP_LAYER as u8,
        tree: 0,
        kind: kind as u8,
        keypair: 0,
        word6: chain as u32,
        word7: 0,
    }
}

/// Advances chain `i` of `buf` (`len` chains of `N` bytes) through positions
/// `start[i]..end[i]`, all chains through the lanes together. With `secret`, the kernels'
/// lanes and the jobs are wiped after (a key's own chains; a verifier's are public).
fn run_chains(
    params: ParamSet,
    h: &Hasher,
    buf: &mut [u8],
    start: &[u8],
    end: &[u8],
    secret: bool,
) {
    let n = params.n();
    let mut jobs = [ChainJob {
        adrs: Address::default(),
        x: [0; 32],
        start: 0,
        end: 0,
    }; MAX_WOTS_LEN];
    let len = buf.len() / n;
    for (i, (job, x)) in jobs.iter_mut().zip(buf.chunks_exact(n)).enumerate() {
        job.adrs = adrs(WOTS_HASH, i);
        job.x[..n].copy_from_slice(x);
        job.start = start[i];
        job.end = end[i];
    }
    if secret {
        h.chains_secret(n, &mut jobs[..len]);
    } else {
        h.chains(n, &mut jobs[..len]);
    }
    for (job, x) in jobs.iter().zip(buf.chunks_exact_mut(n)) {
        x.copy_from_slice(&job.x[..n]);
    }
    if secret {
        jobs.iter_mut().for_each(Zeroize::zeroize);
    }
}

/// `steps` chain steps of `x` (`N` bytes) in chain `chain` from position `start`; the
/// caller checked `start + steps <= w - 1`.
pub(crate) fn chain(params: ParamSet, rho: &Rho, x: &mut [u8], chain: u32, start: u32, steps: u32) {
    let n = params.n();
    let mut job = [ChainJob {
        adrs: adrs(WOTS_HASH, chain as usize),
        x: [0; 32],
        start: start as u8,
        end: (start + steps) as u8,
    }];
    job[0].x[..n].copy_from_slice(x);
    hasher(params, rho).chains_secret(n, &mut job);
    x.copy_from_slice(&job[0].x[..n]);
    job[0].zeroize();
}

/// The secret chain starts `PRF(rho, ADRS{type = WOTS_PRF, chain = i}, sk_seed)`, `len · N`
/// bytes, into `out`.
fn chain_starts(params: ParamSet, h: &Hasher, sk_seed: &SkSeed, out: &mut [u8]) {
    let n = params.n();
    h.f_each(
        n,
        out.len() / n,
        |i| (adrs(WOTS_PRF, i), sk_seed.expose_secret()),
        |i, y| out[i * n..(i + 1) * n].copy_from_slice(y),
    );
}

/// Compresses the chain ends into the public key: `T_len(rho, ADRS{type = WOTS_PK}, ends)`.
fn compress(params: ParamSet, h: &Hasher, ends: &[u8]) -> WotsPk {
    let mut pk = [0u8; MAX_N];
    h.t(&adrs(WOTS_PK, 0), ends, &mut pk[..params.n()]);
    WotsPk::from_output(&pk[..params.n()])
}

/// The public key of the WOTS+ key `(rho, sk_seed)`.
pub fn public_key(params: ParamSet, rho: &Rho, sk_seed: &SkSeed) -> WotsPk {
    let h = hasher(params, rho);
    let (n, len) = (params.n(), params.wots_len());
    let mut buf = [0u8; MAX_WOTS_LEN * MAX_N];
    let ends = &mut buf[..len * n];
    chain_starts(params, &h, sk_seed, ends);
    run_chains(
        params,
        &h,
        ends,
        &[0; MAX_WOTS_LEN][..len],
        &[TOP; MAX_WOTS_LEN][..len],
        true,
    );
    let pk = compress(params, &h, ends);
    buf.zeroize();
    pk
}

/// Signs the digest `d`: chain `i` from the secret start to position `digit_i`.
pub fn sign(params: ParamSet, rho: &Rho, sk_seed: &SkSeed, d: &MessageDigest) -> Vec<u8> {
    let h = hasher(params, rho);
    let len = params.wots_len();
    let digits = digits(params, d);
    let mut sig = vec![0u8; params.wots_sig_len()];
    chain_starts(params, &h, sk_seed, &mut sig);
    run_chains(
        params,
        &h,
        &mut sig,
        &[0; MAX_WOTS_LEN][..len],
        &digits[..len],
        true,
    );
    sig
}

/// The public key a signature of `d` implies: chain `i` from position `digit_i` to the top.
/// `sig` must be `len · N` bytes (checked by the caller's decoding).
pub fn public_key_from_signature(
    params: ParamSet,
    rho: &Rho,
    sig: &[u8],
    d: &MessageDigest,
) -> WotsPk {
    let h = hasher(params, rho);
    let (n, len) = (params.n(), params.wots_len());
    let digits = digits(params, d);
    let mut buf = [0u8; MAX_WOTS_LEN * MAX_N];
    let ends = &mut buf[..len * n];
    ends.copy_from_slice(sig);
    run_chains(
        params,
        &h,
        ends,
        &digits[..len],
        &[TOP; MAX_WOTS_LEN][..len],
        false,
    );
    let pk = compress(params, &h, ends);
    buf.zeroize();
    pk
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The addresses the chains are hashed at are the spec's DGSP addresses, in both byte
    /// forms.
    #[test]
    fn addresses_are_the_dgsp_addresses() {
        use crate::address::Adrs;
        for (kind, chain) in [
            (WOTS_HASH, 0usize),
            (WOTS_HASH, 66),
            (WOTS_PK, 0),
            (WOTS_PRF, 34),
        ] {
            let mut a = Adrs::dgsp(kind);
            a.set_chain(chain as u32);
            a.set_hash(9);
            let mut ours = adrs(kind, chain);
            ours.word7 = 9;
            assert_eq!(&ours.full(), a.bytes(), "{kind} {chain}");
            assert_eq!(ours.compressed(), a.compressed(), "{kind} {chain}");
        }
    }

    #[test]
    fn checksum_digits_follow_the_spec() {
        let p = ParamSet::Sha2_128f;
        // All-zero digest: every m_i = 0, checksum = 32 * 15 = 480, << 4 = 7680 = 0x1e00.
        let d = MessageDigest::from_slice(p, &[0u8; 16]).unwrap();
        let g = digits(p, &d);
        assert_eq!(&g[32..35], &[1, 14, 0]);
        // All-0xff digest: checksum 0.
        let d = MessageDigest::from_slice(p, &[0xffu8; 16]).unwrap();
        assert_eq!(&digits(p, &d)[32..35], &[0, 0, 0]);
    }

    #[test]
    fn signature_round_trips_to_the_public_key() {
        for p in [ParamSet::Sha2_192f, ParamSet::Shake256f] {
            let rho = Rho::from_slice(p, &vec![3u8; p.n()]).unwrap();
            let sk = SkSeed::from_slice(p, &vec![9u8; p.n()]).unwrap();
            let d = MessageDigest::from_slice(p, &vec![0x5au8; p.n()]).unwrap();
            let pk = public_key(p, &rho, &sk);
            let sig = sign(p, &rho, &sk, &d);
            assert_eq!(public_key_from_signature(p, &rho, &sig, &d), pk);
            let other = MessageDigest::from_slice(p, &vec![0x5bu8; p.n()]).unwrap();
            assert_ne!(public_key_from_signature(p, &rho, &sig, &other), pk);
        }
    }
}
