//! The wallet's secret contents and their binary encoding (kept in a zeroizing buffer; never
//! JSON, so no secret lands in an intermediate `String`).
//!
//! ```text
//! "DGSPWAL1"
//! u32 len || MemberKey encoding (kind 5)
//! u32 len || group public key encoding
//! journal_id[16] || u64 journal_records
//! u32 slot count, then per slot:
//!   u8 flags (1 = certified, 2 = used) || wots_seed[N] || wots_pk[N]
//!   || (certified) u32 len || certificate encoding
//! ```
//! Integers are big-endian.

use dgsp_core::{Certificate, ManagerPublicKey, MemberKey, WotsPk, WotsSeed};
use zeroize::Zeroizing;

const MAGIC: &[u8; 8] = b"DGSPWAL1";
const CERTIFIED: u8 = 1;
const USED: u8 = 2;

/// One prepared one-time key: requested (pending), then certified, then used.
#[derive(Clone)]
pub struct Slot {
    /// the secret seed of the WOTS+ key
    pub wots_seed: WotsSeed,
    /// its public key (what the CSR carried)
    pub wots_pk: WotsPk,
    /// the manager's certificate, once imported
    pub certificate: Option<Certificate>,
    /// marked used when the journal was folded in at a rewrite (the journal is the live
    /// record; this copy only adds to it)
    pub used: bool,
}

/// Everything secret in a wallet.
pub struct Payload {
    /// the member key (seed_u, id, cid*)
    pub member: MemberKey,
    /// the group public key
    pub group: ManagerPublicKey,
    /// names the use journal that belongs to this wallet
    pub journal_id: [u8; 16],
    /// how many journal records existed at the last rewrite (a journal with fewer was
    /// rolled back or replaced)
    pub journal_records: u64,
    /// the one-time keys, in request order
    pub slots: Vec<Slot>,
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
}

impl Payload {
    /// The binary encoding (zeroized when dropped).
    pub fn encode(&self) -> Zeroizing<Vec<u8>> {
        let mut out = Zeroizing::new(Vec::new());
        out.extend_from_slice(MAGIC);
        put_bytes(&mut out, &self.member.to_bytes());
        put_bytes(&mut out, &self.group.to_bytes());
        out.extend_from_slice(&self.journal_id);
        out.extend_from_slice(&self.journal_records.to_be_bytes());
        out.extend_from_slice(&(self.slots.len() as u32).to_be_bytes());
        for slot in &self.slots {
            let mut flags = 0;
            if slot.certificate.is_some() {
                flags |= CERTIFIED;
            }
            if slot.used {
                flags |= USED;
            }
            out.push(flags);
            out.extend_from_slice(slot.wots_seed.expose_secret());
            out.extend_from_slice(slot.wots_pk.as_bytes());
            if let Some(cert) = &slot.certificate {
                put_bytes(&mut out, &cert.to_bytes());
            }
        }
        out
    }

    /// Decodes [`Payload::encode`]'s output; the reason names the first defect.
    pub fn decode(bytes: &[u8]) -> Result<Payload, String> {
        let mut r = Reader { bytes, pos: 0 };
        if r.take(MAGIC.len())? != MAGIC {
            return Err("unknown payload version".into());
        }
        let member_len = r.u32()? as usize;
        let member =
            MemberKey::from_bytes(r.take(member_len)?).map_err(|e| format!("member key: {e}"))?;
        let group_len = r.u32()? as usize;
        let group = ManagerPublicKey::from_bytes(r.take(group_len)?)
            .map_err(|e| format!("group key: {e}"))?;
        let params = member.params();
        if group.params() != params {
            return Err("member key and group key use different parameter sets".into());
        }
        let mut journal_id = [0u8; 16];
        journal_id.copy_from_slice(r.take(16)?);
        let journal_records = r.u64()?;
        let count = r.u32()? as usize;
        let mut slots = Vec::with_capacity(count.min(bytes.len() / (1 + 2 * params.n())));
        for i in 0..count {
            let flags = r.take(1)?[0];
            if flags & !(CERTIFIED | USED) != 0 {
                // Bits this version does not know would be dropped by the next rewrite.
                return Err(format!("slot {i}: unknown flags {flags:#04x}"));
            }
            let bad = |e: dgsp_core::DecodeError| format!("slot {i}: {e}");
            let wots_seed = WotsSeed::from_slice(params, r.take(params.n())?).map_err(bad)?;
            let wots_pk = WotsPk::from_slice(params, r.take(params.n())?).map_err(bad)?;
            let certificate = if flags & CERTIFIED != 0 {
                let len = r.u32()? as usize;
                let cert = Certificate::from_bytes(r.take(len)?).map_err(bad)?;
                if cert.params() != params {
                    return Err(format!("slot {i}: certificate of another parameter set"));
                }
                Some(cert)
            } else {
                None
            };
            slots.push(Slot {
                wots_seed,
                wots_pk,
                certificate,
                used: flags & USED != 0,
            });
        }
        if r.pos != bytes.len() {
            return Err("trailing bytes".into());
        }
        Ok(Payload {
            member,
            group,
            journal_id,
            journal_records,
            slots,
        })
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or("truncated")?;
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32, String> {
        let mut b = [0u8; 4];
        b.copy_from_slice(self.take(4)?);
        Ok(u32::from_be_bytes(b))
    }

    fn u64(&mut self) -> Result<u64, String> {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.take(8)?);
        Ok(u64::from_be_bytes(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dgsp_core::{CidStar, Manager, ParamSet};
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    #[test]
    fn round_trip_and_every_truncation_is_refused() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let params = ParamSet::Sha2_128f;
        let manager = Manager::generate(params, &mut rng);
        let cid_star = CidStar::from_slice(params, manager.cid_star(3).as_bytes()).unwrap();
        let member = MemberKey::generate(params, 3, cid_star, &mut rng);
        let items = member.csr(2, &mut rng);
        let cert = manager.certify(3, 0, &[*items[0].wots_pk()]).remove(0);
        let payload = Payload {
            member,
            group: manager.public_key().clone(),
            journal_id: [7; 16],
            journal_records: 5,
            slots: vec![
                Slot {
                    wots_seed: items[0].wots_seed().clone(),
                    wots_pk: *items[0].wots_pk(),
                    certificate: Some(cert),
                    used: true,
                },
                Slot {
                    wots_seed: items[1].wots_seed().clone(),
                    wots_pk: *items[1].wots_pk(),
                    certificate: None,
                    used: false,
                },
            ],
        };
        let bytes = payload.encode();
        let back = Payload::decode(&bytes).unwrap();
        assert_eq!(back.encode(), bytes);
        assert_eq!(back.journal_records, 5);
        assert!(back.slots[0].used && back.slots[0].certificate.is_some());
        for len in 0..bytes.len() {
            assert!(
                Payload::decode(&bytes[..len]).is_err(),
                "truncated to {len}"
            );
        }
        let mut longer = bytes.to_vec();
        longer.push(0);
        assert!(Payload::decode(&longer).is_err());
    }

    #[test]
    fn unknown_slot_flags_are_refused() {
        // Found by the cli_files fuzz target's round-trip check: a flag bit this version
        // does not know was accepted, then silently dropped by the next rewrite.
        let mut rng = ChaCha8Rng::seed_from_u64(10);
        let params = ParamSet::Sha2_128f;
        let manager = Manager::generate(params, &mut rng);
        let cid_star = CidStar::from_slice(params, manager.cid_star(1).as_bytes()).unwrap();
        let member = MemberKey::generate(params, 1, cid_star, &mut rng);
        let item = member.csr(1, &mut rng).remove(0);
        let payload = Payload {
            member,
            group: manager.public_key().clone(),
            journal_id: [1; 16],
            journal_records: 0,
            slots: vec![Slot {
                wots_seed: item.wots_seed().clone(),
                wots_pk: *item.wots_pk(),
                certificate: None,
                used: false,
            }],
        };
        let bytes = payload.encode();
        let flags_at = bytes.len() - 1 - 2 * params.n();
        assert_eq!(bytes[flags_at], 0);
        for flags in [0u8, USED] {
            let mut b = bytes.to_vec();
            b[flags_at] = flags;
            assert_eq!(
                Payload::decode(&b).unwrap().encode()[..],
                b[..],
                "{flags:#x}"
            );
        }
        for flags in [4u8, 0x80, USED | 0x10] {
            let mut b = bytes.to_vec();
            b[flags_at] = flags;
            let err = Payload::decode(&b).err().unwrap();
            assert!(err.contains("unknown flags"), "{flags:#x}: {err}");
        }
    }
}
