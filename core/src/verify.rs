//! Verification and judging: what anyone holding the group public key can check.

use crate::certificate::cert_message;
use crate::derive;
use crate::error::{DecodeError, Error};
use crate::keys::ManagerPublicKey;
use crate::revoked::RevokedList;
use crate::signature::Signature;
use crate::values::{MessageDigest, Pi, WotsPk};
use crate::wots;
use crate::MemberId;

impl ManagerPublicKey {
    /// Verifies a group signature on `message`.
    ///
    /// Returns [`Error::Revoked`] if the signature's zeta is on the revoked list (checked
    /// first, as the spec says), [`Error::ParamMismatch`] if it belongs to another
    /// parameter set ([`Error::FamilyMismatch`] for the twin set of the other family), and [`Error::InvalidSignature`] if it does not verify.
    pub fn verify<R: RevokedList + ?Sized>(
        &self,
        message: &[u8],
        sig: &Signature,
        revoked: &R,
    ) -> Result<(), Error> {
        if revoked.contains(sig.zeta())? {
            return Err(Error::Revoked);
        }
        self.verify_ignoring_revocation(message, sig).map(|_| ())
    }

    /// The cryptographic half of [`verify`](Self::verify): the WOTS+ signature and the
    /// manager's certificate signature, without consulting a revoked list (for callers that
    /// check revocation themselves, e.g. against a signed snapshot). Returns the recomputed
    /// WOTS+ public key.
    pub fn verify_ignoring_revocation(
        &self,
        message: &[u8],
        sig: &Signature,
    ) -> Result<WotsPk, Error> {
        self.check_params(sig)?;
        self.verify_digest_ignoring_revocation(&sig.message_digest(message), sig)
    }

    /// [`verify_ignoring_revocation`](Self::verify_ignoring_revocation) from the message
    /// digest `d = HL("msg", rho || message)` ([`Signature::message_digest`]) instead of the
    /// message: the WOTS+ signature must be a signature of `d`, and the manager's SPHINCS+
    /// signature must certify the WOTS+ key it implies. This is how an auditor checks a
    /// signature recorded in the log, which carries `d` but not the message; it shows the
    /// signature is valid for *some* message with digest `d` (finding another message with
    /// that digest is a preimage attack on `HL`).
    ///
    /// Same answers as `verify_ignoring_revocation` for the same `d`; does not consult a
    /// revoked list. [`Error::ParamMismatch`] if the signature belongs to another parameter
    /// set, [`Error::Decode`] if `d` is not `N` bytes, [`Error::InvalidSignature`] if it
    /// does not verify. Returns the recomputed WOTS+ public key.
    pub fn verify_digest_ignoring_revocation(
        &self,
        d: &MessageDigest,
        sig: &Signature,
    ) -> Result<WotsPk, Error> {
        self.check_params(sig)?;
        let params = self.params();
        if d.as_bytes().len() != params.n() {
            return Err(DecodeError::WrongFieldLength {
                field: "digest",
                expected: params.n(),
                found: d.as_bytes().len(),
            }
            .into());
        }
        let wots_pk = wots::public_key_from_signature(params, &sig.rho, &sig.wots_sig, d);
        let msg = cert_message(wots_pk.as_bytes(), &sig.zeta, sig.tau.as_bytes());
        if self.verifying_key().verify(&msg, &sig.spx_sig) {
            Ok(wots_pk)
        } else {
            Err(Error::InvalidSignature)
        }
    }

    /// Judges the manager's claim that member `id` made `sig` on `message`, with proof `pi`
    /// (spec section 4): recomputes the WOTS+ public key from the signature and accepts iff
    /// `tau == HL("tau", wots_pk || pi || be64(id))`.
    ///
    /// Judge checks the opening, not the signature: call [`verify`](Self::verify) (or
    /// [`verify_ignoring_revocation`](Self::verify_ignoring_revocation)) as well when the
    /// signature's validity is not already established. [`Error::ParamMismatch`] if the
    /// signature belongs to another parameter set, [`Error::WrongOpening`] otherwise.
    pub fn judge(
        &self,
        message: &[u8],
        sig: &Signature,
        id: MemberId,
        pi: &Pi,
    ) -> Result<(), Error> {
        self.check_params(sig)?;
        self.judge_digest(&sig.message_digest(message), sig, id, pi)
    }

    /// [`judge`](Self::judge) from the message digest `d` instead of the message
    /// ([`Signature::message_digest`]): how an auditor judges an opening recorded in the
    /// log, which carries `d` but not the message. Same answers as `judge` for the same
    /// `d`; [`Error::ParamMismatch`] also when `d` has another length.
    pub fn judge_digest(
        &self,
        d: &MessageDigest,
        sig: &Signature,
        id: MemberId,
        pi: &Pi,
    ) -> Result<(), Error> {
        self.check_params(sig)?;
        let params = self.params();
        if d.as_bytes().len() != params.n() || pi.as_bytes().len() != params.n() {
            return Err(Error::ParamMismatch {
                expected: params,
                found: sig.params(),
            });
        }
        let wots_pk = wots::public_key_from_signature(params, &sig.rho, &sig.wots_sig, d);
        if derive::tau(params, &wots_pk, pi, id) == sig.tau {
            Ok(())
        } else {
            Err(Error::WrongOpening)
        }
    }

    /// [`verify`](Self::verify) for many `(message, signature)` pairs: one result per item,
    /// each the same as `verify` on that item (revocation checked first, then the
    /// parameter set, then the signature), with the SPHINCS+ signatures of all items that
    /// get that far checked in one
    /// [`VerifyingKey::verify_batch`](crate::sphincs::VerifyingKey::verify_batch) call, so
    /// their hash calls share the hash lanes (a few percent faster per signature than
    /// single calls; see `docs/sphincs-verifier.md`).
    pub fn verify_batch<R: RevokedList + ?Sized>(
        &self,
        items: &[(&[u8], &Signature)],
        revoked: &R,
    ) -> Vec<Result<(), Error>> {
        let pre = items
            .iter()
            .map(|(_, sig)| match revoked.contains(sig.zeta()) {
                Ok(false) => None,
                Ok(true) => Some(Error::Revoked),
                Err(e) => Some(Error::from(e)),
            })
            .collect();
        self.batch(Self::of_messages(items), pre)
            .into_iter()
            .map(|r| r.map(|_| ()))
            .collect()
    }

    /// [`verify_ignoring_revocation`](Self::verify_ignoring_revocation) for many
    /// `(message, signature)` pairs: one result per item, each the same as the single
    /// call, with the SPHINCS+ parts verified together as in
    /// [`verify_batch`](Self::verify_batch).
    pub fn verify_batch_ignoring_revocation(
        &self,
        items: &[(&[u8], &Signature)],
    ) -> Vec<Result<WotsPk, Error>> {
        self.batch(
            Self::of_messages(items),
            items.iter().map(|_| None).collect(),
        )
    }

    /// [`verify_digest_ignoring_revocation`](Self::verify_digest_ignoring_revocation) for
    /// many `(digest, signature)` pairs (an auditor's opened signatures): one result per
    /// item, each the same as the single call, with the SPHINCS+ parts verified together.
    pub fn verify_digest_batch_ignoring_revocation(
        &self,
        items: &[(&MessageDigest, &Signature)],
    ) -> Vec<Result<WotsPk, Error>> {
        let n = self.params().n();
        let pre = items
            .iter()
            .map(|(d, sig)| match self.check_params(sig) {
                Err(e) => Some(e),
                Ok(()) if d.as_bytes().len() != n => Some(
                    DecodeError::WrongFieldLength {
                        field: "digest",
                        expected: n,
                        found: d.as_bytes().len(),
                    }
                    .into(),
                ),
                Ok(()) => None,
            })
            .collect();
        let items = items
            .iter()
            .map(|(d, sig)| (Digest::Given(d), *sig))
            .collect();
        self.batch(items, pre)
    }

    fn of_messages<'a>(items: &[(&'a [u8], &'a Signature)]) -> Vec<(Digest<'a>, &'a Signature)> {
        items
            .iter()
            .map(|(m, sig)| (Digest::OfMessage(m), *sig))
            .collect()
    }

    /// The shared body of the batch calls; `pre[i]` is an error already decided for item `i`.
    fn batch(
        &self,
        items: Vec<(Digest<'_>, &Signature)>,
        pre: Vec<Option<Error>>,
    ) -> Vec<Result<WotsPk, Error>> {
        let params = self.params();
        let mut out: Vec<Result<WotsPk, Error>> = Vec::with_capacity(items.len());
        // (item, recomputed WOTS+ key, certificate message) of the items still undecided
        let mut pending = Vec::new();
        for (i, ((digest, sig), pre)) in items.iter().zip(pre).enumerate() {
            if let Some(e) = pre {
                out.push(Err(e));
                continue;
            }
            if let Err(e) = self.check_params(sig) {
                out.push(Err(e));
                continue;
            }
            let computed;
            let d = match digest {
                Digest::Given(d) => *d,
                Digest::OfMessage(m) => {
                    computed = sig.message_digest(m);
                    &computed
                }
            };
            let wots_pk = wots::public_key_from_signature(params, &sig.rho, &sig.wots_sig, d);
            let msg = cert_message(wots_pk.as_bytes(), &sig.zeta, sig.tau.as_bytes());
            pending.push((i, wots_pk, msg));
            out.push(Err(Error::InvalidSignature));
        }
        let pairs: Vec<(&[u8], &[u8])> = pending
            .iter()
            .map(|(i, _, msg)| (msg.as_slice(), items[*i].1.spx_sig.as_slice()))
            .collect();
        let verdicts = self.verifying_key().verify_batch(&pairs);
        for ((i, wots_pk, _), ok) in pending.into_iter().zip(verdicts) {
            if ok {
                out[i] = Ok(wots_pk);
            }
        }
        out
    }

    fn check_params(&self, sig: &Signature) -> Result<(), Error> {
        if sig.params() != self.params() {
            return Err(Error::mismatch(self.params(), sig.params()));
        }
        Ok(())
    }
}

/// What a batch item's WOTS+ signature signs: the digest of a message, or a given digest.
enum Digest<'a> {
    OfMessage(&'a [u8]),
    Given(&'a MessageDigest),
}
