//! The files `dgsp-manager` reads, through the functions its commands call on their bytes:
//! join files (`documents::parse`, then `member::decode_join`: group key, fingerprint,
//! `cid*`), CSR files, certificates files (`import::decode`, then `import::classify` against
//! a wallet holding the fixture's two pending keys), signature files
//! (`documents::parse_signature`: base64 text or raw), group key files
//! (`anchor::parse_key_file`), `check-proof`'s snapshot and proof files
//! (`verifier::parse_snapshot_file`, `parse_proof_file`, then `verify_revocation`), the wallet
//! (`envelope::parse`; for the seeds' cheap Argon2id cost also `derive`, `open` and the
//! payload), the decrypted wallet payload (`Payload::decode`: the AEAD keeps mutations of
//! the ciphertext from reaching it, so it is fuzzed directly), the use journal
//! (`Journal::parse` under a fixed journal id and key), a gateway's verify answer as
//! `verify --group-key` checks it (`evidence::check_answer`, `check_snapshot`) and a log
//! export as `audit` reads it (`audit::source::read_lines` into the `Auditor`, then the
//! report). The first byte picks:
//!
//! 0 join, 1 CSR, 2 certificates, 3 signature, 4 group key, 5 snapshot, 6 proof, 7 wallet,
//! 8 wallet payload, 9 journal, 10 verify answer, 11 log export.
//!
//! Nothing may panic; a value that decodes must re-encode to the same bytes (payload).
//!
//!   cargo +nightly fuzz run cli_files corpus/cli_files seeds/cli_files
//!
//! Seeds: `manager-cli/tests/fuzz_seeds.rs` (one valid file per selector, for the fixed
//! group and member of `common`).

#![no_main]

mod common;

use std::io::Cursor;
use std::path::Path;
use std::sync::OnceLock;

use dgsp_core::revocation::{verify_revocation, RevocationSet, SignedSnapshot, SnapshotRecord};
use dgsp_core::{CsrItem, ManagerPublicKey, Signature};
use dgsp_gateway::anchor::parse_key_file;
use dgsp_gateway::api::model::VerifyAnswer;
use dgsp_manager::audit::{source, Auditor};
use dgsp_manager::documents::{self, CertificatesFile, CsrFile, JoinFile};
use dgsp_manager::evidence::{self, Checks, Policy};
use dgsp_manager::wallet::envelope;
use dgsp_manager::wallet::import;
use dgsp_manager::wallet::journal::Journal;
use dgsp_manager::wallet::payload::{Payload, Slot};
use dgsp_manager::{member, verifier};
use dgsp_registry::keyfile::KdfParams;
use indicatif::ProgressBar;
use libfuzzer_sys::fuzz_target;
use zeroize::Zeroizing;

/// The Argon2id cost of the seed wallet (also in `manager-cli/tests/fuzz_seeds.rs`): any
/// other cost is parsed but not derived (Argon2id is the cost of every input otherwise).
const FUZZ_KDF: KdfParams = KdfParams {
    m_kib: 8,
    t: 1,
    p: 1,
};
/// The seed wallet's passphrase.
const PASSPHRASE: &[u8] = b"fuzzing passphrase";
/// The journal id and key of the seed journal.
const JOURNAL_ID: [u8; 16] = [0x1d; 16];
const JOURNAL_KEY: [u8; 32] = [7; 32];
/// The message signed in the seed answer, and the time of the seed snapshot and note.
const MESSAGE: &[u8] = b"fuzzed evidence";
const TIME: u64 = 1_795_000_000_000;

struct Files {
    group: ManagerPublicKey,
    /// Member 3's wallet with its two one-time keys pending.
    payload: Payload,
    /// Member 3's signature of `MESSAGE` with its first certificate.
    signature: Signature,
    /// Snapshot 1 (empty, at log entry 1).
    snapshot: SignedSnapshot,
}

fn files() -> &'static Files {
    static F: OnceLock<Files> = OnceLock::new();
    F.get_or_init(|| {
        let f = common::fixture();
        let group = f.manager.public_key().clone();
        let pks: Vec<_> = f.items.iter().map(|i| *i.wots_pk()).collect();
        let certificate = f.manager.certify(common::MEMBER, 0, &pks[..1]).remove(0);
        let item = CsrItem::from_seed(&f.member, f.items[0].wots_seed().clone());
        let signature = f
            .member
            .import(&group, item, &certificate)
            .expect("the fixture's certificate")
            .sign(MESSAGE);
        let record = SnapshotRecord::genesis(
            group.fingerprint(),
            1,
            0,
            RevocationSet::from_zetas(std::iter::empty()).root(),
            TIME,
        );
        let payload = Payload {
            member: f.member.clone(),
            group: group.clone(),
            journal_id: JOURNAL_ID,
            journal_records: 0,
            slots: f
                .items
                .iter()
                .map(|i| Slot {
                    wots_seed: i.wots_seed().clone(),
                    wots_pk: *i.wots_pk(),
                    certificate: None,
                    used: false,
                })
                .collect(),
        };
        Files {
            snapshot: f.manager.sign_snapshot(&record),
            group,
            payload,
            signature,
        }
    })
}

const PATH: &str = "fuzzed-file";

fn wallet(input: &[u8]) {
    let path = Path::new(PATH);
    let Ok(env) = envelope::parse(path, input) else {
        return;
    };
    if env.kdf != FUZZ_KDF {
        return;
    }
    let Ok(keys) = envelope::derive(path, &env, PASSPHRASE) else {
        return;
    };
    if let Ok(bytes) = envelope::open(path, &env, &keys) {
        payload(&bytes);
    }
}

fn payload(input: &[u8]) {
    if let Ok(p) = Payload::decode(input) {
        assert_eq!(
            &p.encode()[..],
            input,
            "a decoded payload re-encodes to its bytes"
        );
    }
}

fn answer(input: &[u8]) {
    let Ok(answer) = serde_json::from_slice::<VerifyAnswer>(input) else {
        return;
    };
    let f = files();
    let policy = Policy {
        max_age_ms: 3_600_000,
        clock_tolerance_ms: evidence::DEFAULT_CLOCK_TOLERANCE_MS,
        min_snapshot: Some(1),
        now_unix_ms: TIME + 1_000,
    };
    let mut checks = Checks::default();
    let cp = evidence::check_answer(
        &f.group,
        MESSAGE,
        &f.signature,
        &answer,
        &policy,
        &mut checks,
    );
    if let Some(cp) = cp {
        evidence::check_snapshot(
            &f.group,
            &f.signature,
            &answer,
            &cp,
            Ok(f.snapshot.clone()),
            &policy,
            &mut checks,
        );
    }
    let _ = checks.all_passed();
}

fn export(input: &[u8]) {
    let mut auditor = Auditor::new(None);
    let read = source::read_lines(
        &mut auditor,
        Path::new(PATH),
        Cursor::new(input),
        &ProgressBar::hidden(),
    );
    let _ = read;
    let _ = auditor.finish().render();
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    let path = Path::new(PATH);
    match selector % 12 {
        0 => {
            if let Ok(file) = documents::parse::<JoinFile>(path, input, documents::JOIN_FORMAT) {
                let _ = member::decode_join(path, &file);
            }
        }
        1 => {
            let _ = documents::parse::<CsrFile>(path, input, documents::CSR_FORMAT);
        }
        2 => {
            let Ok(file) =
                documents::parse::<CertificatesFile>(path, input, documents::CERTIFICATES_FORMAT)
            else {
                return;
            };
            let f = files();
            if let Ok(incoming) = import::decode(path, &file, common::MEMBER, common::PARAMS) {
                let _ = import::classify(&f.payload, &incoming);
            }
        }
        3 => {
            let _ = documents::parse_signature(path, input.to_vec());
        }
        4 => {
            let _ = parse_key_file(input);
        }
        5 => {
            if let Some(s) = verifier::parse_snapshot_file(input) {
                let _ = s.verify(&files().group);
            }
        }
        6 => {
            if let Some(proof) = verifier::parse_proof_file(input) {
                let f = files();
                let _ = verify_revocation(&f.group, &f.snapshot, f.signature.zeta(), &proof);
            }
        }
        7 => wallet(input),
        8 => payload(input),
        9 => {
            let bytes = Zeroizing::new(input.to_vec());
            let _ = Journal::parse(path, bytes, &JOURNAL_ID, &JOURNAL_KEY);
        }
        10 => answer(input),
        _ => export(input),
    }
});
