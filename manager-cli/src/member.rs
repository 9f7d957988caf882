//! `member ...` commands: a member's wallet ([`crate::wallet`]) from the command line.
//!
//! `keygen` creates it from a join file, `csr` prepares one-time keys and writes the request
//! for the operator, `import` stores the certificates the operator sends back, `sign` uses
//! one certificate per message (recorded as used before the signature exists), `status`
//! counts what is left.

use std::path::{Path, PathBuf};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::{CidStar, ManagerPublicKey, MemberKey};
use rand_core::OsRng;
use serde::Serialize;

use crate::cli::{MemberCommand, WalletArgs};
use crate::config::Config;
use crate::documents::{self, CertificatesFile, CsrFile, JoinFile};
use crate::error::{exit, Error};
use crate::output::Output;
use crate::wallet::{self, import, passphrase, Counts, Paths, Wallet, WalletError};

/// The most keys one CSR holds: what the registry certifies in one request.
pub const MAX_CSR: usize = 1024;

/// Below this many certificates left, commands remind the member to request more.
const LOW: usize = 3;

/// Runs a member command.
pub fn run(cmd: MemberCommand, out: Output, config: &Config) -> Result<i32, Error> {
    match cmd {
        MemberCommand::Keygen { join, wallet } => keygen(&join, &wallet, out, config),
        MemberCommand::Csr {
            count,
            out: file,
            wallet,
        } => csr(count, &file, &wallet, out, config),
        MemberCommand::Import {
            certificates,
            wallet,
        } => import_file(&certificates, &wallet, out, config),
        MemberCommand::Sign {
            message,
            out: file,
            wallet,
        } => sign(&message, file.as_deref(), &wallet, out, config),
        MemberCommand::Status { wallet } => status(&wallet, out, config),
    }?;
    Ok(exit::OK)
}

fn open(args: &WalletArgs, config: &Config) -> Result<Wallet, Error> {
    let paths = Paths::resolve(args.wallet.as_deref(), config)?;
    if !paths.wallet.exists() {
        return Err(WalletError::NotFound { path: paths.wallet }.into());
    }
    let pass = passphrase::read(args.passphrase_file.as_deref(), false)?;
    Wallet::open(paths, pass.as_bytes())
}

fn lock(wallet: &Wallet, out: Output) -> Result<wallet::Locked<'_>, Error> {
    let locked =
        wallet.lock(|| out.note("waiting for another dgsp-manager using this wallet..."))?;
    if let Some(torn) = &locked.repaired {
        out.note(format!(
            "note: the use journal ended with an incomplete record ({} bytes, from a crash while \
             signing); its certificate was counted as used, conservatively",
            torn.len
        ));
    }
    Ok(locked)
}

fn low_note(out: Output, left: &Counts) {
    if left.certified_unused == 0 && left.pending == 0 {
        out.note(
            "no certificate left: request more with `dgsp-manager member csr --count N --out FILE`",
        );
    } else if left.certified_unused == 0 {
        out.note(format!(
            "no certificate left; {} requested but not imported: run `dgsp-manager member import FILE` \
             with the operator's certificates file",
            left.pending
        ));
    } else if left.certified_unused < LOW {
        out.note(format!(
            "only {} certificate(s) left: request more with `dgsp-manager member csr --count N --out FILE`",
            left.certified_unused
        ));
    }
}

#[derive(Serialize)]
struct KeygenOut {
    wallet: PathBuf,
    id: u64,
    username: String,
    params: String,
    group_fingerprint: String,
}

/// What a join file read from `join` gives a new wallet: the group key (which must hash to
/// the stated fingerprint), the member's `cid*` and the fingerprint (hex).
pub fn decode_join(
    join: &Path,
    file: &JoinFile,
) -> Result<(ManagerPublicKey, CidStar, String), Error> {
    let bad = |reason: String| Error::input(join, reason);
    let group_bytes = B64
        .decode(&file.group_public_key)
        .map_err(|e| bad(format!("group_public_key is not base64: {e}")))?;
    let group = ManagerPublicKey::from_bytes(&group_bytes)
        .map_err(|e| bad(format!("group_public_key: {e}")))?;
    let computed = hex::encode(group.fingerprint());
    if !computed.eq_ignore_ascii_case(file.fingerprint.trim()) {
        return Err(WalletError::FingerprintMismatch {
            what: join.display().to_string(),
            stated: file.fingerprint.clone(),
            computed,
        }
        .into());
    }
    let params = group.params();
    let cid_star = B64
        .decode(&file.cid_star)
        .map_err(|e| bad(format!("cid_star is not base64: {e}")))
        .and_then(|b| CidStar::from_slice(params, &b).map_err(|e| bad(format!("cid_star: {e}"))))?;
    Ok((group, cid_star, computed))
}

fn keygen(join: &Path, args: &WalletArgs, out: Output, config: &Config) -> Result<(), Error> {
    let file: JoinFile = documents::read(join, documents::JOIN_FORMAT)?;
    let (group, cid_star, computed) = decode_join(join, &file)?;
    let params = group.params();
    let paths = Paths::resolve(args.wallet.as_deref(), config)?;
    if paths.wallet.exists() {
        return Err(WalletError::Exists {
            path: paths.wallet,
            what: "a wallet (wallets are never overwritten)",
        }
        .into());
    }
    let (kdf, custom) = wallet::kdf_for_new_wallet()?;
    if custom {
        out.note(format!(
            "using Argon2id m={} KiB, t={}, p={} from ${}",
            kdf.m_kib,
            kdf.t,
            kdf.p,
            wallet::KDF_ENV
        ));
    }
    let pass = passphrase::read(args.passphrase_file.as_deref(), true)?;
    let member = MemberKey::generate(params, file.id, cid_star, &mut OsRng);
    let w = Wallet::create(paths, &member, &group, pass.as_bytes(), kdf)?;
    let result = KeygenOut {
        wallet: w.paths().wallet.clone(),
        id: file.id,
        username: file.username,
        params: params.to_string(),
        group_fingerprint: computed,
    };
    out.emit(&result, || {
        format!(
            "wallet created: {}\nmember {} ({}), {}\ngroup fingerprint {}\n\
             next: dgsp-manager member csr --count 10 --out {}.csr.json",
            result.wallet.display(),
            result.id,
            result.username,
            result.params,
            result.group_fingerprint,
            result.username
        )
    });
    Ok(())
}

#[derive(Serialize)]
struct CsrOut {
    csr_file: PathBuf,
    count: usize,
    counts: Counts,
}

fn csr(
    count: usize,
    file: &Path,
    args: &WalletArgs,
    out: Output,
    config: &Config,
) -> Result<(), Error> {
    if count == 0 || count > MAX_CSR {
        return Err(WalletError::BadCount {
            count,
            max: MAX_CSR,
        }
        .into());
    }
    if file.exists() {
        return Err(Error::input(
            file,
            "already exists; remove it or choose another name (files are never overwritten)",
        ));
    }
    let w = open(args, config)?;
    let member = w.snapshot()?.member;
    let bar = out.progress(count as u64, "preparing one-time keys");
    let mut items = Vec::with_capacity(count);
    while items.len() < count {
        let n = (count - items.len()).min(32);
        items.extend(member.csr(n, &mut OsRng));
        bar.inc(n as u64);
    }
    bar.finish_and_clear();
    // The keys are saved before the request exists: a certificate can never arrive for a
    // key the wallet lost.
    let mut locked = lock(&w, out)?;
    locked.add_pending(&items);
    locked.save()?;
    let counts = locked.counts();
    drop(locked);
    let doc = CsrFile {
        format: documents::CSR_FORMAT.into(),
        params: w.params(),
        id: w.id(),
        cid_star: B64.encode(member.cid_star().as_bytes()),
        wots_pks: items
            .iter()
            .map(|i| B64.encode(i.wots_pk().as_bytes()))
            .collect(),
    };
    documents::write(file, &doc).inspect_err(|_| {
        out.note(
            "the keys are saved in the wallet (pending) but the request file could not be written",
        )
    })?;
    let result = CsrOut {
        csr_file: file.to_owned(),
        count,
        counts,
    };
    out.emit(&result, || {
        format!(
            "wrote {} ({count} key(s) to certify); {} pending in the wallet\n\
             next: send it to the operator (`dgsp-manager operator issue {}`), then \
             `dgsp-manager member import CERTS`",
            file.display(),
            counts.pending,
            file.display()
        )
    });
    Ok(())
}

#[derive(Serialize)]
struct ImportOut {
    imported: usize,
    already_imported: usize,
    counts: Counts,
}

fn import_file(path: &Path, args: &WalletArgs, out: Output, config: &Config) -> Result<(), Error> {
    let file: CertificatesFile = documents::read(path, documents::CERTIFICATES_FORMAT)?;
    let w = open(args, config)?;
    // Check outside the lock (slow: one SPHINCS+ verification each); slots only ever gain
    // certificates, so what is checked here stays true.
    let snapshot = w.snapshot()?;
    let incoming = import::decode(path, &file, w.id(), w.params())?;
    let matches = import::classify(&snapshot, &incoming)?;
    let new = matches
        .iter()
        .filter(|m| matches!(m, import::Match::New(_)))
        .count();
    let bar = out.progress(new as u64, "checking certificates");
    import::verify(&snapshot, &incoming, &matches, &bar)?;
    bar.finish_and_clear();
    drop(snapshot);

    let mut locked = lock(&w, out)?;
    let now = import::classify(&locked.payload, &incoming)?;
    let still_new = now
        .iter()
        .zip(&matches)
        .all(|(n, m)| !matches!(n, import::Match::New(_)) || n == m);
    if !still_new {
        return Err(WalletError::Malformed {
            path: w.paths().wallet.clone(),
            reason: "the wallet changed during the import in an unexpected way; run it again"
                .into(),
        }
        .into());
    }
    let imported = now
        .iter()
        .filter(|m| matches!(m, import::Match::New(_)))
        .count();
    if imported > 0 {
        import::apply(&mut locked.payload, incoming, &now);
        locked.save()?;
    }
    let counts = locked.counts();
    drop(locked);
    let result = ImportOut {
        imported,
        already_imported: now.len() - imported,
        counts,
    };
    out.emit(&result, || {
        let mut s = format!("imported {imported} certificate(s)");
        if result.already_imported > 0 {
            s.push_str(&format!(
                " ({} already in the wallet)",
                result.already_imported
            ));
        }
        s.push_str(&format!(
            "; {} unused, {} used, {} pending",
            counts.certified_unused, counts.used, counts.pending
        ));
        s
    });
    low_note(out, &counts);
    Ok(())
}

#[derive(Serialize)]
struct SignOut {
    zeta: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    signature_file: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    signature: Option<String>,
    counts: Counts,
}

fn sign(
    message: &Path,
    file: Option<&Path>,
    args: &WalletArgs,
    out: Output,
    config: &Config,
) -> Result<(), Error> {
    // Everything that can fail without using a certificate is done first.
    if let Some(f) = file.filter(|f| f.exists()) {
        return Err(Error::input(
            f,
            "already exists; remove it or choose another name (files are never overwritten)",
        ));
    }
    let msg = crate::io::read_input(message)?;
    let w = open(args, config)?;
    let ticket = lock(&w, out)?.take()?;
    let zeta = hex::encode(ticket.zeta().as_bytes());
    let counts = ticket.left;
    let sig = ticket.sign(&msg)?;
    wallet::crash::at("before-output");
    let text = documents::signature_text(&sig);
    if let Some(f) = file {
        crate::io::write_new(f, text.as_bytes(), 0o644).inspect_err(|_| {
            out.note(
                "the certificate is used up (it is never used twice) but the signature could \
                 not be written",
            )
        })?;
    }
    let result = SignOut {
        zeta,
        signature_file: file.map(Path::to_owned),
        signature: match (file, out.json) {
            (None, true) => Some(text.trim_end().to_owned()),
            _ => None,
        },
        counts,
    };
    if file.is_some() || out.json {
        out.emit(&result, || {
            format!(
                "signed: {} ({} certificate(s) left)",
                result
                    .signature_file
                    .as_deref()
                    .unwrap_or(Path::new("-"))
                    .display(),
                counts.certified_unused
            )
        });
    } else {
        print!("{text}");
    }
    low_note(out, &counts);
    Ok(())
}

#[derive(Serialize)]
struct StatusOut {
    wallet: PathBuf,
    id: u64,
    params: String,
    group_fingerprint: String,
    kdf: dgsp_secrets::envelope::KdfParams,
    counts: Counts,
    journal_repaired: bool,
}

fn status(args: &WalletArgs, out: Output, config: &Config) -> Result<(), Error> {
    let w = open(args, config)?;
    let locked = lock(&w, out)?;
    let counts = locked.counts();
    let repaired = locked.repaired.is_some();
    drop(locked);
    let result = StatusOut {
        wallet: w.paths().wallet.clone(),
        id: w.id(),
        params: w.params().to_string(),
        group_fingerprint: w.fingerprint().to_owned(),
        kdf: w.kdf(),
        counts,
        journal_repaired: repaired,
    };
    out.emit(&result, || {
        format!(
            "wallet {}\nmember {}, {}\ngroup fingerprint {}\n\
             certificates: {} unused, {} used, {} pending (requested, not imported)",
            result.wallet.display(),
            result.id,
            result.params,
            result.group_fingerprint,
            counts.certified_unused,
            counts.used,
            counts.pending
        )
    });
    low_note(out, &counts);
    Ok(())
}
