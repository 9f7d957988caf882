//! The member's side on a constrained device: what the wallet holds per unused certificate,
//! the heap one signature takes (counted by [`heap::CountingAllocator`]), the peak memory of
//! a process that only signs, the size of a signer-only build and the time of one signature
//! inside it, native and in WebAssembly ([`probe`]); the same figures for the reference
//! `dgsp` 0.1.2 where it has them.

pub mod heap;
pub mod probe;

use std::path::Path;

use dgsp_core::{ParamSet, Signature};
use dgsp_signer_probe::Request;
use serde::Serialize;

use crate::baseline::Baseline;
use crate::error::CompareError;
use crate::schemes::dgsp::{wallet_slot_bytes, Fixture};
use crate::schemes::MESSAGE;

/// The member's side on one parameter set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MemberSide {
    /// The set.
    pub params: String,
    /// The member key encoding.
    pub member_key_bytes: usize,
    /// One certificate's encoding.
    pub certificate_bytes: usize,
    /// What the wallet stores per certified, unused one-time key.
    pub wallet_slot_bytes: usize,
    /// Heap at the peak of decoding a wallet slot and signing from it
    /// (`dgsp_signer_probe::sign`, what the signer-only binary and the wallet do per
    /// signature; the certificate was checked at import).
    pub heap_decode_sign: usize,
    /// Heap at the peak of the signing call alone (`SigningKey::sign`).
    pub heap_sign: usize,
    /// The signature's encoding (the output buffer).
    pub signature_bytes: usize,
    /// Peak resident set of the native signer-only process signing this request, KiB.
    pub probe_peak_rss_kib: Option<u64>,
    /// One signature inside the native signer-only build (decode the slot, sign), median ns.
    pub native_sign_ns: Option<u64>,
    /// The same inside its `wasm32-wasip1` build under Node's WASI, median ns.
    pub wasm_sign_ns: Option<u64>,
}

/// The reference's member side (shake-256f).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReferenceSide {
    /// The set.
    pub params: String,
    /// The WOTS+ seed and the certificate (the reference has no wallet format).
    pub per_certificate_bytes: usize,
    /// Heap at the peak of `DGSP::sign` (the certificate cloned beforehand).
    pub heap_sign: usize,
    /// `DGSPSignature` and `DGSPCert` are held by value: their in-memory sizes.
    pub by_value_bytes: usize,
}

/// Everything about the member's side.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Device {
    /// Per set.
    pub sets: Vec<MemberSide>,
    /// The reference, when measured.
    pub reference: Option<ReferenceSide>,
    /// The signer-only builds tried.
    pub builds: Vec<probe::Build>,
    /// Peak resident set of the native probe refusing an empty request (its baseline), KiB.
    pub probe_baseline_kib: Option<u64>,
    /// Why the WebAssembly build was not run, when it was built but could not be.
    pub wasm_not_run: Option<String>,
}

/// Measures the member's side on `sets`; builds and runs the signer-only probe when
/// `workspace` is given (the full run), and the reference's side when `baseline` is given.
pub fn measure(
    sets: &[ParamSet],
    workspace: Option<&Path>,
    baseline: Option<&dyn Baseline>,
) -> Result<Device, CompareError> {
    let builds = match workspace {
        Some(ws) => vec![
            probe::build(ws, None),
            probe::build(ws, Some(probe::WASM_TARGET)),
        ],
        None => Vec::new(),
    };
    let native = builds
        .first()
        .and_then(|b| b.path.clone())
        .filter(|_| cfg!(target_os = "linux"));
    let wasm = builds.get(1).and_then(|b| b.path.clone());
    let wasm_not_run = wasm.as_ref().and_then(|_| probe::wasi_unavailable());
    let wasm_runner = match (&wasm, workspace, &wasm_not_run) {
        (Some(module), Some(workspace), None) => Some(probe::Runner::Wasi { module, workspace }),
        _ => None,
    };
    let probe_baseline_kib = match &native {
        Some(bin) => Some(probe::run(bin, &[])?.1.peak_rss_kib),
        None => None,
    };
    let mut out = Vec::new();
    for &set in sets {
        let f = Fixture::new(set)?;
        let request = Request {
            member_key: f.member.to_bytes().to_vec(),
            group_key: f.manager.public_key().to_bytes(),
            wots_seed: f.seed.expose_secret().to_vec(),
            wots_pk: f.wots_pk.as_bytes().to_vec(),
            certificate: f.certificate.to_bytes(),
            message: MESSAGE.to_vec(),
        };
        let (signed, heap_decode_sign) = heap::peak(|| dgsp_signer_probe::sign(&request));
        let signed = signed.map_err(|e| CompareError::Probe(e.to_string()))?;
        check(&f, &signed, "in-process probe")?;
        let key = f.signing_key()?;
        let (sig, heap_sign) = heap::peak(|| key.sign(MESSAGE));
        let input = request.encode();
        let (probe_peak_rss_kib, native_sign_ns) = match &native {
            Some(bin) => {
                let (bytes, run) = probe::run(bin, &input)?;
                check(&f, &bytes, "signer-only binary")?;
                let (bytes, ns) = probe::time(&probe::Runner::Native(bin), &input)?;
                check(&f, &bytes, "signer-only binary, timed")?;
                (Some(run.peak_rss_kib), Some(ns))
            }
            None => (None, None),
        };
        let wasm_sign_ns = match &wasm_runner {
            Some(runner) => {
                let (bytes, ns) = probe::time(runner, &input)?;
                check(&f, &bytes, "signer-only WebAssembly build")?;
                Some(ns)
            }
            None => None,
        };
        let certificate_bytes = request.certificate.len();
        out.push(MemberSide {
            params: set.name().into(),
            member_key_bytes: request.member_key.len(),
            certificate_bytes,
            wallet_slot_bytes: wallet_slot_bytes(set, certificate_bytes),
            heap_decode_sign,
            heap_sign,
            signature_bytes: sig.to_bytes().len(),
            probe_peak_rss_kib,
            native_sign_ns,
            wasm_sign_ns,
        });
    }
    let reference = baseline.map(|b| b.member_side()).transpose()?;
    Ok(Device {
        sets: out,
        reference,
        builds,
        probe_baseline_kib,
        wasm_not_run,
    })
}

/// The bytes are a signature on [`MESSAGE`] that verifies under the fixture's group.
fn check(f: &Fixture, bytes: &[u8], by: &str) -> Result<(), CompareError> {
    let sig =
        Signature::from_bytes(bytes).map_err(|e| CompareError::Probe(format!("{by}: {e}")))?;
    f.manager
        .public_key()
        .verify(MESSAGE, &sig, &f.revoked)
        .map_err(|e| CompareError::Probe(format!("{by}: {e}")))
}
