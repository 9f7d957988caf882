//! Every value the scheme derives with the labelled hash (spec sections 2.1 and 4), in one
//! place. The protocol code and the known-answer tests both go through these functions.

use crate::hashes::{labelled, Label};
use crate::params::ParamSet;
use crate::values::{
    Cid, CidStar, HashSecret, MessageDigest, Pi, Rho, SeedU, SkSeed, Tau, WotsPk, WotsSeed,
};
use crate::MemberId;

/// `cid = HL("cid", hash_secret || be64(id))`.
pub fn cid(params: ParamSet, hash_secret: &HashSecret, id: MemberId) -> Cid {
    let out = labelled(
        params,
        Label::Cid,
        &[hash_secret.expose_secret(), &id.to_be_bytes()],
    );
    Cid::from_output(&out[..params.n()])
}

/// `cid* = HL("cid*", cid || be64(id))`.
pub fn cid_star(params: ParamSet, cid: &Cid, id: MemberId) -> CidStar {
    let out = labelled(params, Label::CidStar, &[cid.as_bytes(), &id.to_be_bytes()]);
    CidStar::from_output(&out[..params.n()])
}

/// `rho = HL("rho", wots_seed)`.
pub fn rho(params: ParamSet, wots_seed: &WotsSeed) -> Rho {
    let out = labelled(params, Label::Rho, &[wots_seed.expose_secret()]);
    Rho::from_output(&out[..params.n()])
}

/// `sk_seed = HL("wots-sk", seed_u || wots_seed)`.
pub fn sk_seed(params: ParamSet, seed_u: &SeedU, wots_seed: &WotsSeed) -> SkSeed {
    let mut out = labelled(
        params,
        Label::WotsSk,
        &[seed_u.expose_secret(), wots_seed.expose_secret()],
    );
    let sk = SkSeed::from_slice(params, &out[..params.n()]).expect("N bytes");
    zeroize::Zeroize::zeroize(&mut out);
    sk
}

/// `d = HL("msg", rho || message)`.
pub fn message_digest(params: ParamSet, rho: &Rho, message: &[u8]) -> MessageDigest {
    let out = labelled(params, Label::Msg, &[rho.as_bytes(), message]);
    MessageDigest::from_output(&out[..params.n()])
}

/// `pi = HL("pi", wots_pk || cid)`.
pub fn pi(params: ParamSet, wots_pk: &WotsPk, cid: &Cid) -> Pi {
    let out = labelled(params, Label::Pi, &[wots_pk.as_bytes(), cid.as_bytes()]);
    Pi::from_output(&out[..params.n()])
}

/// `tau = HL("tau", wots_pk || pi || be64(id))`.
pub fn tau(params: ParamSet, wots_pk: &WotsPk, pi: &Pi, id: MemberId) -> Tau {
    let out = labelled(
        params,
        Label::Tau,
        &[wots_pk.as_bytes(), pi.as_bytes(), &id.to_be_bytes()],
    );
    Tau::from_output(&out[..params.n()])
}
