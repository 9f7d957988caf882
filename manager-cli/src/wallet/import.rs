//! Importing a certificates file: decode, match each certificate to the pending slot with
//! its WOTS+ key, check every new one against the group key (in parallel), then store them
//! all or none.

use std::collections::HashMap;
use std::path::Path;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::{Certificate, CsrItem, MemberId, ParamSet, WotsPk};
use indicatif::ProgressBar;

use super::payload::Payload;
use super::WalletError;
use crate::documents::CertificatesFile;
use crate::error::Error;

/// One certificate of the file.
pub struct Incoming {
    /// the WOTS+ key it certifies
    pub wots_pk: WotsPk,
    /// the certificate
    pub certificate: Certificate,
}

/// What a certificate means for the wallet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Match {
    /// certifies pending slot `.0`
    New(usize),
    /// slot `.0` already holds this very certificate
    Already(usize),
}

/// Decodes the file's fields for a wallet of member `id` with `params`.
pub fn decode(
    path: &Path,
    file: &CertificatesFile,
    id: MemberId,
    params: ParamSet,
) -> Result<Vec<Incoming>, Error> {
    if file.id != id {
        return Err(WalletError::WrongMember {
            what: path.display().to_string(),
            expected: id,
            found: file.id,
        }
        .into());
    }
    if file.wots_pks.len() != file.certificates.len() {
        return Err(Error::input(
            path,
            format!(
                "{} wots_pks but {} certificates",
                file.wots_pks.len(),
                file.certificates.len()
            ),
        ));
    }
    let refuse = |index: usize, reason: String| -> Error {
        WalletError::CertificateRefused {
            index: index + 1,
            reason,
        }
        .into()
    };
    file.wots_pks
        .iter()
        .zip(&file.certificates)
        .enumerate()
        .map(|(i, (pk, cert))| {
            let pk = B64
                .decode(pk)
                .map_err(|e| refuse(i, format!("wots_pk is not base64: {e}")))?;
            let wots_pk =
                WotsPk::from_slice(params, &pk).map_err(|e| refuse(i, format!("wots_pk: {e}")))?;
            let cert = B64
                .decode(cert)
                .map_err(|e| refuse(i, format!("not base64: {e}")))?;
            let certificate = Certificate::from_bytes(&cert)
                .map_err(|e| refuse(i, format!("not a certificate: {e}")))?;
            if certificate.params() != params {
                return Err(refuse(
                    i,
                    format!(
                        "parameter set {}, the wallet's is {params}",
                        certificate.params()
                    ),
                ));
            }
            Ok(Incoming {
                wots_pk,
                certificate,
            })
        })
        .collect()
}

/// Matches every certificate to its slot; refuses keys the wallet never requested and a
/// second, different certificate for a key (a one-time key must never sign twice).
pub fn classify(payload: &Payload, incoming: &[Incoming]) -> Result<Vec<Match>, WalletError> {
    let by_pk: HashMap<&WotsPk, usize> = payload
        .slots
        .iter()
        .enumerate()
        .map(|(i, s)| (&s.wots_pk, i))
        .collect();
    let mut claimed: HashMap<usize, &Certificate> = HashMap::new();
    let mut out = Vec::with_capacity(incoming.len());
    for (index, inc) in incoming.iter().enumerate() {
        let refuse = |reason: &str| WalletError::CertificateRefused {
            index: index + 1,
            reason: reason.into(),
        };
        let &slot = by_pk.get(&inc.wots_pk).ok_or_else(|| {
            refuse("it certifies a key this wallet never requested (another member's file, or another wallet?)")
        })?;
        let held = payload.slots[slot]
            .certificate
            .as_ref()
            .or(claimed.get(&slot).copied());
        match held {
            Some(c) if *c == inc.certificate => out.push(Match::Already(slot)),
            Some(_) => {
                return Err(refuse(
                    "the wallet already holds a different certificate for this key",
                ))
            }
            None => {
                claimed.insert(slot, &inc.certificate);
                out.push(Match::New(slot));
            }
        }
    }
    Ok(out)
}

/// Checks every new certificate against the group key and the wallet's member key, on all
/// cores; `bar` advances once per certificate.
pub fn verify(
    payload: &Payload,
    incoming: &[Incoming],
    matches: &[Match],
    bar: &ProgressBar,
) -> Result<(), WalletError> {
    let todo: Vec<(usize, usize)> = matches
        .iter()
        .enumerate()
        .filter_map(|(i, m)| match m {
            Match::New(slot) => Some((i, *slot)),
            Match::Already(_) => None,
        })
        .collect();
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(todo.len().max(1));
    let chunk = todo.len().div_ceil(workers).max(1);
    let check = |&(i, slot): &(usize, usize)| -> Result<(), WalletError> {
        let s = &payload.slots[slot];
        let item = CsrItem::from_seed(&payload.member, s.wots_seed.clone());
        let refuse = |reason: String| WalletError::CertificateRefused {
            index: i + 1,
            reason,
        };
        if item.wots_pk() != &s.wots_pk {
            return Err(refuse(
                "the wallet's slot is inconsistent (damaged wallet?)".into(),
            ));
        }
        payload
            .member
            .import(&payload.group, item, &incoming[i].certificate)
            .map_err(|e| refuse(format!("it does not verify under the group key: {e}")))?;
        bar.inc(1);
        Ok(())
    };
    let results: Vec<Result<(), WalletError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = todo
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().try_for_each(check)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(WalletError::CertificateRefused {
                        index: 0,
                        reason: "the verification thread failed".into(),
                    })
                })
            })
            .collect()
    });
    // Each part stops at its first refusal; the file's first is the lowest of those.
    let first = results
        .into_iter()
        .filter_map(Result::err)
        .min_by_key(|e| match e {
            WalletError::CertificateRefused { index, .. } => *index,
            _ => 0,
        });
    first.map_or(Ok(()), Err)
}

/// Stores the new certificates (after [`verify`]).
pub fn apply(payload: &mut Payload, incoming: Vec<Incoming>, matches: &[Match]) {
    for (inc, m) in incoming.into_iter().zip(matches) {
        if let Match::New(slot) = *m {
            payload.slots[slot].certificate = Some(inc.certificate);
        }
    }
}
