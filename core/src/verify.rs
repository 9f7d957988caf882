//! Verification and judging: what anyone holding the group public key can check.

use crate::certificate::cert_message;
use crate::derive;
use crate::error::{DecodeError, Error};
use crate::keys::ManagerPublicKey;
use crate::revoked::RevokedList;
use crate::signature::Signature;
use crate::spx;
use crate::values::{MessageDigest, Pi, WotsPk};
use crate::wots;
use crate::MemberId;

impl ManagerPublicKey {
    /// Verifies a group signature on `message`.
    ///
    /// Returns [`Error::Revoked`] if the signature's zeta is on the revoked list (checked
    /// first, as the spec says), [`Error::ParamMismatch`] if it belongs to another
    /// parameter set, and [`Error::InvalidSignature`] if it does not verify.
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
        if spx::verify(params, self.spx_bytes(), &msg, &sig.spx_sig) {
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

    fn check_params(&self, sig: &Signature) -> Result<(), Error> {
        if sig.params() != self.params() {
            return Err(Error::ParamMismatch {
                expected: self.params(),
                found: sig.params(),
            });
        }
        Ok(())
    }
}
