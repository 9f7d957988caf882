//! DGSP (dgsp-core, this repository) on one of its 24 parameter sets, with signing split as
//! the scheme splits it: the offline part, once per signature (the member's certificate
//! request of one item, the manager's issuance of one certificate, the member's check of it
//! on import), and the online part (signing with an imported certificate). Two more ways to
//! time a signature sit beside it: from a wallet slot (what `dgsp-manager member sign` does
//! per signature) and with the one-time key recomputed from its seed first (what the
//! reference's `sign` does: the row to compare it with).

use dgsp_core::{
    Certificate, CsrItem, InMemoryPlm, InMemoryRevokedList, Manager, MemberId, MemberKey, ParamSet,
    Plm, Signature, Standard, WotsPk, WotsSeed,
};
use rand_core::OsRng;

use super::{Scheme, MESSAGE};
use crate::error::CompareError;
use crate::measure::{self, Budget, Estimate};
use crate::results::{Extra, ExtraSize, Kind, Row, Sizes};

/// Names of the extra operations of a DGSP row, in table order.
pub mod op {
    /// A member joins: the manager's PLM insert and `cid*`, the member's key.
    pub const JOIN: &str = "join (manager) + member key";
    /// The member prepares one one-time key (CSR of one item).
    pub const CSR: &str = "CSR, 1 item (member)";
    /// The manager issues one certificate.
    pub const ISSUE: &str = "issue 1 certificate (manager)";
    /// The member checks a certificate and binds it to its key.
    pub const IMPORT: &str = "import 1 certificate (member)";
    /// CSR + issue + import.
    pub const OFFLINE: &str = "offline total per signature";
    /// What the wallet does per signature: the slot's key rebuilt (its certificate checked
    /// at import, not again), then the online part.
    pub const WALLET_SIGN: &str = "sign from a wallet slot (member)";
    /// The one-time key recomputed from its seed, then signed: what the reference's `sign`
    /// does (it takes the seed, not the key).
    pub const SIGN_FROM_SEED: &str = "sign, one-time key recomputed from its seed";
    /// The manager opens a signature (verifies it first).
    pub const OPEN: &str = "open (manager)";
    /// Anyone judges an opening.
    pub const JUDGE: &str = "judge";
}

/// Names of the extra sizes of a DGSP row.
pub mod size {
    /// The manager's secret key.
    pub const MANAGER_SK: &str = "manager secret key";
    /// One certificate.
    pub const CERTIFICATE: &str = "certificate";
    /// A wallet slot for one unused, certified one-time key.
    pub const WALLET_SLOT: &str = "wallet bytes per unused certificate";
}

/// DGSP on the set `.0`.
pub struct Dgsp(pub ParamSet);

/// A group with one member holding one certificate, and a signature from it.
pub struct Fixture {
    /// The set.
    pub set: ParamSet,
    /// The manager.
    pub manager: Manager,
    /// Its PLM.
    pub plm: InMemoryPlm,
    /// An empty revoked list.
    pub revoked: InMemoryRevokedList,
    /// The member.
    pub member: MemberKey,
    /// The seed of the member's certified one-time key (to rebuild it for each signature).
    pub seed: WotsSeed,
    /// That key's public key (what a wallet slot stores beside the seed).
    pub wots_pk: WotsPk,
    /// Its certificate.
    pub certificate: Certificate,
    /// A signature on [`MESSAGE`] made with it.
    pub signature: Signature,
    /// The opening of that signature.
    pub opening: dgsp_core::Opening,
}

impl Fixture {
    /// Generates a group of `set`, joins one member, issues one certificate, signs and checks
    /// the signature.
    pub fn new(set: ParamSet) -> Result<Self, CompareError> {
        let manager = Manager::generate(set, &mut OsRng);
        let plm = InMemoryPlm::new();
        let (id, cid_star) = manager.join(&plm, "alice")?;
        let member = MemberKey::generate(set, id, cid_star, &mut OsRng);
        let item = one_item(&member);
        let seed = item.wots_seed().clone();
        let wots_pk = *item.wots_pk();
        let certificate = manager
            .issue(&plm, id, member.cid_star(), &[*item.wots_pk()])?
            .remove(0);
        let signature = member
            .import(manager.public_key(), item, &certificate)?
            .sign(MESSAGE);
        let revoked = InMemoryRevokedList::new();
        manager.public_key().verify(MESSAGE, &signature, &revoked)?;
        let opening = manager.open(MESSAGE, &signature)?;
        if opening.id != id {
            return Err(CompareError::SelfCheck(format!("DGSP {set} (open)")));
        }
        Ok(Fixture {
            set,
            manager,
            plm,
            revoked,
            member,
            seed,
            wots_pk,
            certificate,
            signature,
            opening,
        })
    }

    /// The member's id.
    pub fn id(&self) -> MemberId {
        self.member.id()
    }

    /// A fresh signing key for the fixture's certificate (the wallet rebuilding the one-time
    /// key from its seed, then checking the certificate on import).
    pub fn signing_key(&self) -> Result<dgsp_core::SigningKey, CompareError> {
        let item = CsrItem::from_seed(&self.member, self.seed.clone());
        Ok(self
            .member
            .import(self.manager.public_key(), item, &self.certificate)?)
    }
}

/// One fresh CSR item.
fn one_item(member: &MemberKey) -> CsrItem {
    member
        .csr(1, &mut OsRng)
        .pop()
        .expect("a CSR of one item has one item")
}

/// What a wallet stores for one certified, unused one-time key (manager-cli
/// `wallet/payload.rs`): a flags byte, the seed and public key (`N` bytes each), the
/// certificate's length (4 bytes) and encoding.
pub fn wallet_slot_bytes(set: ParamSet, certificate_len: usize) -> usize {
    1 + 2 * set.n() + 4 + certificate_len
}

impl Scheme for Dgsp {
    fn label(&self) -> String {
        format!("DGSP {}", self.0)
    }

    fn measure(&self, budget: &Budget) -> Result<Row, CompareError> {
        let f = Fixture::new(self.0)?;
        let group = f.manager.public_key();
        let set = self.0;

        let keygen = measure::simple(budget, || Manager::generate(set, &mut OsRng));
        let mut joined = 0u64;
        let join = measure::batched(
            budget,
            || {
                joined += 1;
                format!("member-{joined}")
            },
            |name| {
                let (id, cid_star) = f.manager.join(&f.plm, &name)?;
                Ok::<_, dgsp_core::Error>(MemberKey::generate(set, id, cid_star, &mut OsRng))
            },
        );
        let csr = measure::simple(budget, || one_item(&f.member));
        let wots_pk = *one_item(&f.member).wots_pk();
        let issue = measure::simple(budget, || {
            f.manager
                .issue(&f.plm, f.id(), f.member.cid_star(), &[wots_pk])
        });
        let import = measure::batched(
            budget,
            || CsrItem::from_seed(&f.member, f.seed.clone()),
            |item| f.member.import(group, item, &f.certificate),
        );
        let mut setup_error = None;
        let sign = measure::batched(
            budget,
            || match f.signing_key() {
                Ok(k) => Some(k),
                Err(e) => {
                    setup_error.get_or_insert(e);
                    None
                }
            },
            |key| key.map(|k| k.sign(MESSAGE)),
        );
        if let Some(e) = setup_error {
            return Err(e);
        }
        let wallet_sign = measure::simple(budget, || {
            let item = CsrItem::from_stored(&f.member, f.seed.clone(), f.wots_pk);
            f.member
                .resume(group, item, &f.certificate)
                .map(|k| k.sign(MESSAGE))
        });
        let sign_from_seed = measure::simple(budget, || {
            let item = CsrItem::from_seed(&f.member, f.seed.clone());
            f.member
                .resume(group, item, &f.certificate)
                .map(|k| k.sign(MESSAGE))
        });
        let verify = measure::simple(budget, || group.verify(MESSAGE, &f.signature, &f.revoked));
        let open = measure::simple(budget, || f.manager.open(MESSAGE, &f.signature));
        let judge = measure::simple(budget, || {
            group.judge(MESSAGE, &f.signature, f.opening.id, &f.opening.pi)
        });
        // The plm grew during `join`; nothing else depends on it.
        debug_assert!(f.plm.len().map(|n| n >= 1).unwrap_or(false));

        let certificate_len = f.certificate.to_bytes().len();
        let (kind, library) = match set.standard() {
            Standard::Round3 => (
                Kind::DgspRound3,
                "dgsp-core 0.1.0 (manager signs with PQClean)",
            ),
            Standard::Fips205 => (
                Kind::DgspFips205,
                "dgsp-core 0.1.0 (manager signs with slh-dsa)",
            ),
        };
        let extra = |name: &str, estimate: Estimate| Extra {
            name: name.into(),
            estimate,
        };
        Ok(Row {
            scheme: "DGSP".into(),
            variant: set.name().into(),
            kind,
            security: super::sphincs::level(set),
            library: library.into(),
            sizes: Sizes {
                public_key: group.to_bytes().len(),
                secret_key: f.member.to_bytes().len(),
                signature: f.signature.to_bytes().len(),
            },
            keygen,
            sign,
            verify,
            extra: vec![
                extra(op::JOIN, join),
                extra(op::CSR, csr),
                extra(op::ISSUE, issue),
                extra(op::IMPORT, import),
                extra(op::OFFLINE, Estimate::sum(&[csr, issue, import])),
                extra(op::WALLET_SIGN, wallet_sign),
                extra(op::SIGN_FROM_SEED, sign_from_seed),
                extra(op::OPEN, open),
                extra(op::JUDGE, judge),
            ],
            extra_sizes: vec![
                ExtraSize {
                    name: size::MANAGER_SK.into(),
                    bytes: f.manager.secret_key().to_bytes().len(),
                },
                ExtraSize {
                    name: size::CERTIFICATE.into(),
                    bytes: certificate_len,
                },
                ExtraSize {
                    name: size::WALLET_SLOT.into(),
                    bytes: wallet_slot_bytes(set, certificate_len),
                },
            ],
            notes: vec![
                "keygen: the group manager's; secret key: the member key (each signature also \
                 needs one wallet slot); sign: the online part, from an imported certificate; \
                 verify: with the in-memory revoked list (empty)"
                    .into(),
            ],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wallet_slot_matches_the_certificate_size() {
        let f = Fixture::new(ParamSet::Sha2_128f).unwrap();
        let cert = f.certificate.to_bytes().len();
        // zeta 16 + pi N + SPHINCS+ signature, after the 4-byte header.
        assert_eq!(cert, 4 + 16 + 16 + ParamSet::Sha2_128f.spx_sig_len());
        assert_eq!(
            wallet_slot_bytes(ParamSet::Sha2_128f, cert),
            1 + 32 + 4 + cert
        );
        // A signing key rebuilt from the wallet signs verifiable signatures, checked on
        // import or resumed from the slot.
        let sig = f.signing_key().unwrap().sign(b"other");
        f.manager
            .public_key()
            .verify(b"other", &sig, &f.revoked)
            .unwrap();
        let resumed = f
            .member
            .resume(
                f.manager.public_key(),
                CsrItem::from_stored(&f.member, f.seed.clone(), f.wots_pk),
                &f.certificate,
            )
            .unwrap()
            .sign(b"other");
        assert_eq!(resumed.to_bytes(), sig.to_bytes());
    }
}
