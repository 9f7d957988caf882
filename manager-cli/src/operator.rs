//! `operator ...`: the group manager's operations through the registry's admin API.
//!
//! Writes use deterministic idempotency keys derived from their input (the usernames, the
//! CSR file), so re-running a command that was interrupted returns the registry's first
//! answer instead of acting twice.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_wire::feed::Entries;
use dgsp_wire::registry_api::{
    BulkJoinRequest, BulkJoined, IssueRequest, Issued, JoinRequest, JoinedMember, MemberInfo,
    MemberPage, OpenRequest, Opened, Revoked, MAX_BULK_JOIN, MAX_ISSUE,
};
use dgsp_wire::registry_api::{CheckpointInfo, GroupInfo};
use serde::Serialize;
use serde_json::{json, Value};
use sha3::{Digest, Sha3_256};

use crate::cli::{LogCommand, MemberRef, OperatorCommand, OperatorMemberCommand, RegistryArgs};
use crate::client::{Client, ClientError};
use crate::config::Config;
use crate::documents::{self, CertificatesFile, CsrFile, JoinFile};
use crate::error::{exit, Error};
use crate::io;
use crate::output::Output;
use crate::tokens;

/// Runs an operator command.
pub async fn run(cmd: OperatorCommand, out: Output, config: &Config) -> Result<i32, Error> {
    match cmd {
        OperatorCommand::Join {
            usernames,
            file,
            out: dest,
            registry,
        } => {
            let usernames = match file {
                Some(f) => read_usernames(&f)?,
                None => usernames,
            };
            join(&admin(&registry, config, out)?, usernames, dest, out).await
        }
        OperatorCommand::Issue {
            csr,
            out: dest,
            registry,
        } => issue(&admin(&registry, config, out)?, &csr, &dest, out).await,
        OperatorCommand::Revoke {
            member,
            yes,
            registry,
        } => revoke(&admin(&registry, config, out)?, &member, yes, out).await,
        OperatorCommand::Open {
            message,
            signature,
            registry,
        } => {
            open(
                &admin(&registry, config, out)?,
                &message,
                &signature,
                config,
                out,
            )
            .await
        }
        OperatorCommand::Member(OperatorMemberCommand::Show { member, registry }) => {
            let info = find(&admin(&registry, config, out)?, &member).await?;
            out.emit(&info, || describe_member(&info));
            Ok(exit::OK)
        }
        OperatorCommand::Member(OperatorMemberCommand::List { active, registry }) => {
            list(&admin(&registry, config, out)?, active, out).await
        }
        OperatorCommand::Log(LogCommand::Export {
            out: dest,
            public,
            registry,
        }) => {
            let client = if public {
                connect(&registry, config, None)?
            } else {
                let config_token = config
                    .auditor_token
                    .as_deref()
                    .or(config.admin_token.as_deref());
                let token = admin_sources(&registry, config_token).resolve(out)?;
                if token.is_none() {
                    return Err(Error::Config(
                        "log export needs the auditor or admin token (--token, DGSP_ADMIN_TOKEN, --token-file, or auditor_token in the config file); use --public for the public feed".into(),
                    ));
                }
                connect(&registry, config, token)?
            };
            export(&client, &dest, public, out).await
        }
        OperatorCommand::Status { registry } => {
            status(&connect(&registry, config, None)?, out).await
        }
    }
}

/// Where the admin token may come from ([`tokens`]), `config_token` last.
fn admin_sources<'a>(args: &'a RegistryArgs, config_token: Option<&'a str>) -> tokens::Sources<'a> {
    tokens::Sources {
        flag: ("--token", args.token.as_deref()),
        env: "DGSP_ADMIN_TOKEN",
        file: args.token_file.as_deref(),
        config: config_token,
    }
}

/// A client for the registry with the admin token.
fn admin(args: &RegistryArgs, config: &Config, out: Output) -> Result<Client, Error> {
    let token = admin_sources(args, config.admin_token.as_deref())
        .resolve(out)?
        .ok_or_else(|| {
            Error::Config(
                "the admin token is needed: set DGSP_ADMIN_TOKEN, pass --token-file (or --token), or put admin_token in the config file".into(),
            )
        })?;
    connect(args, config, Some(token))
}

/// A client for the registry with the given token.
pub fn connect(
    args: &RegistryArgs,
    config: &Config,
    token: Option<String>,
) -> Result<Client, Error> {
    let url = args
        .registry
        .clone()
        .or_else(|| config.registry.clone())
        .ok_or_else(|| {
            Error::Config(
                "which registry? set DGSP_REGISTRY_URL, pass --registry, or put registry in the config file".into(),
            )
        })?;
    let token = token.map(|value| crate::client::Token {
        name: "admin",
        value,
    });
    Ok(args.http.client(&url, token)?)
}

/// An idempotency key for a write, derived from what it writes.
fn derived_key(what: &str, parts: &[&[u8]]) -> String {
    let mut h = Sha3_256::new();
    h.update(what.as_bytes());
    for p in parts {
        h.update((p.len() as u64).to_be_bytes());
        h.update(p);
    }
    format!("dgsp-manager:{what}:{}", hex::encode(&h.finalize()[..16]))
}

fn read_usernames(path: &Path) -> Result<Vec<String>, Error> {
    let text = String::from_utf8(io::read_input(path)?)
        .map_err(|_| Error::input(path, "not UTF-8 text"))?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect())
}

/// A file name for a username (which may hold any printable character).
fn file_stem(username: &str) -> String {
    username
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect::<String>()
        .trim_start_matches('.')
        .to_owned()
}

#[derive(Serialize)]
struct JoinReport {
    members: Vec<JoinedMember>,
    join_files: Vec<PathBuf>,
}

async fn join(
    client: &Client,
    usernames: Vec<String>,
    dest: Option<PathBuf>,
    out: Output,
) -> Result<i32, Error> {
    if usernames.is_empty() {
        return Err(Error::arg(
            "usernames",
            "give at least one username (or --file)",
        ));
    }
    let mut joined = Vec::with_capacity(usernames.len());
    if usernames.len() == 1 {
        let body = JoinRequest {
            username: usernames[0].clone(),
        };
        let key = derived_key("join", &[usernames[0].as_bytes()]);
        joined.push(
            client
                .post_json_keyed::<_, JoinedMember>("/admin/v1/members", &body, &key)
                .await?,
        );
    } else {
        let chunks: Vec<&[String]> = usernames.chunks(MAX_BULK_JOIN).collect();
        if chunks.len() > 1 {
            out.note(format!(
                "joining {} members in {} requests of at most {MAX_BULK_JOIN}: each request is all or none, the whole run is not",
                usernames.len(),
                chunks.len()
            ));
        }
        let bar = out.progress(usernames.len() as u64, "joining");
        for chunk in chunks {
            let body = BulkJoinRequest {
                usernames: chunk.to_vec(),
            };
            let names: Vec<&[u8]> = chunk.iter().map(|u| u.as_bytes()).collect();
            let key = derived_key("join_bulk", &names);
            let page: BulkJoined = client
                .post_json_keyed("/admin/v1/members/bulk", &body, &key)
                .await?;
            bar.inc(page.members.len() as u64);
            joined.extend(page.members);
        }
        bar.finish_and_clear();
    }
    let mut join_files = Vec::new();
    if let Some(dest) = dest {
        let group: GroupInfo = client.get_json("/v1/group", &[]).await?;
        let files: Vec<PathBuf> = if joined.len() == 1 && !dest.is_dir() {
            vec![dest]
        } else {
            std::fs::create_dir_all(&dest).map_err(|source| Error::Io {
                path: dest.clone(),
                source,
            })?;
            joined
                .iter()
                .map(|m| dest.join(format!("{}.join.json", file_stem(&m.username))))
                .collect()
        };
        for (m, path) in joined.iter().zip(files) {
            let doc = JoinFile {
                format: documents::JOIN_FORMAT.into(),
                id: m.id,
                username: m.username.clone(),
                cid_star: m.cid_star.clone(),
                group_public_key: group.public_key.clone(),
                fingerprint: group.fingerprint.clone(),
            };
            documents::write(&path, &doc)?;
            join_files.push(path);
        }
    }
    let report = JoinReport {
        members: joined,
        join_files,
    };
    out.emit(&report, || {
        let mut s = String::new();
        for m in &report.members {
            s.push_str(&format!(
                "joined {:<20} id {:<6} cid* {}\n",
                m.username, m.id, m.cid_star
            ));
        }
        for f in &report.join_files {
            s.push_str(&format!(
                "wrote {} (give it to the member for `dgsp-manager member keygen --join`)\n",
                f.display()
            ));
        }
        s
    });
    Ok(exit::OK)
}

async fn issue(client: &Client, csr_path: &Path, dest: &Path, out: Output) -> Result<i32, Error> {
    let csr: CsrFile = documents::read(csr_path, documents::CSR_FORMAT)?;
    if csr.wots_pks.is_empty() {
        return Err(Error::input(csr_path, "the CSR holds no keys"));
    }
    if dest.exists() {
        return Err(Error::input(
            dest,
            "already exists; remove it or choose another name",
        ));
    }
    let group: GroupInfo = client.get_json("/v1/group", &[]).await?;
    if group.params != csr.params.name() {
        return Err(Error::input(
            csr_path,
            format!(
                "the CSR is for {}, the group uses {}",
                csr.params, group.params
            ),
        ));
    }
    // One key per CSR file and chunk: re-running after an interruption gets the same
    // certificates back instead of new ones.
    let csr_bytes = serde_json::to_vec(&csr).expect("documents serialize");
    let bar = out.progress(csr.wots_pks.len() as u64, "certifying");
    let mut certificates = Vec::with_capacity(csr.wots_pks.len());
    let mut first_counter = None;
    for (i, chunk) in csr.wots_pks.chunks(MAX_ISSUE).enumerate() {
        let body = IssueRequest {
            cid_star: csr.cid_star.clone(),
            wots_pks: chunk.to_vec(),
        };
        let key = derived_key("issue", &[&csr_bytes, &(i as u64).to_be_bytes()]);
        let issued: Issued = client
            .post_json_keyed(
                &format!("/admin/v1/members/{}/certificates", csr.id),
                &body,
                &key,
            )
            .await
            .map_err(|e| at_field(e, "wots_pks", i * MAX_ISSUE))?;
        if issued.certificates.len() != chunk.len() {
            return Err(ClientError::Malformed {
                url: client.base().to_owned(),
                reason: format!(
                    "asked for {} certificates, got {}",
                    chunk.len(),
                    issued.certificates.len()
                ),
            }
            .into());
        }
        first_counter.get_or_insert(issued.first_counter);
        bar.inc(chunk.len() as u64);
        certificates.extend(issued.certificates);
    }
    bar.finish_and_clear();
    let doc = CertificatesFile {
        format: documents::CERTIFICATES_FORMAT.into(),
        id: csr.id,
        first_counter: first_counter.unwrap_or(0),
        wots_pks: csr.wots_pks.clone(),
        certificates,
    };
    documents::write(dest, &doc)?;
    #[derive(Serialize)]
    struct Report<'a> {
        id: u64,
        first_counter: u64,
        count: usize,
        certificates_file: &'a Path,
    }
    let report = Report {
        id: doc.id,
        first_counter: doc.first_counter,
        count: doc.certificates.len(),
        certificates_file: dest,
    };
    out.emit(&report, || {
        format!(
            "issued {} certificates to member {} (counters from {})\nwrote {} (the member runs `dgsp-manager member import {}`)",
            report.count,
            report.id,
            report.first_counter,
            dest.display(),
            dest.display()
        )
    });
    Ok(exit::OK)
}

/// Chunked requests: the server names `wots_pks[i]` within its chunk; shift it to the file's
/// index so the user can find the key.
fn at_field(e: ClientError, name: &str, offset: usize) -> ClientError {
    match e {
        ClientError::Problem {
            url,
            status,
            kind,
            title,
            detail,
            field: Some(f),
        } if offset > 0 && f.starts_with(&format!("{name}[")) => {
            let idx = f[name.len() + 1..]
                .trim_end_matches(']')
                .parse::<usize>()
                .map(|i| format!("{name}[{}]", i + offset))
                .unwrap_or(f);
            ClientError::Problem {
                url,
                status,
                kind,
                title,
                detail,
                field: Some(idx),
            }
        }
        other => other,
    }
}

/// Resolves `--id` / `--username` to the member record.
async fn find(client: &Client, member: &MemberRef) -> Result<MemberInfo, Error> {
    match (&member.id, &member.username) {
        (Some(id), _) => Ok(client
            .get_json(&format!("/admin/v1/members/{id}"), &[])
            .await?),
        (None, Some(name)) => {
            let page: MemberPage = client
                .get_json("/admin/v1/members", &[("username", name.clone())])
                .await?;
            page.members
                .into_iter()
                .next()
                .ok_or_else(|| Error::arg("--username", format!("no member named {name:?}")))
        }
        (None, None) => Err(Error::arg("member", "give --id or --username")),
    }
}

fn describe_member(m: &MemberInfo) -> String {
    format!(
        "id            {}\nusername      {}\nstate         {}\ncertificates  {}",
        m.id,
        m.username,
        match m.revoked_at {
            Some(seq) => format!("revoked (log entry {seq})"),
            None if m.active => "active".to_owned(),
            None => "inactive".to_owned(),
        },
        m.certificates_issued
    )
}

async fn revoke(client: &Client, member: &MemberRef, yes: bool, out: Output) -> Result<i32, Error> {
    let info = find(client, member).await?;
    if !yes {
        if out.json || !std::io::stdin().is_terminal() {
            return Err(Error::arg(
                "--yes",
                format!(
                    "revoking {} (id {}) invalidates all its {} certificates and signatures for good; pass --yes to confirm",
                    info.username, info.id, info.certificates_issued
                ),
            ));
        }
        eprint!(
            "Revoke {} (id {}, {} certificates)? Every signature it made will verify as revoked, for good. Type the username to confirm: ",
            info.username, info.id, info.certificates_issued
        );
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .map_err(|source| Error::Io {
                path: PathBuf::from("<stdin>"),
                source,
            })?;
        if line.trim() != info.username {
            return Err(Error::arg(
                "confirmation",
                "not confirmed; nothing was revoked",
            ));
        }
    }
    let key = derived_key("revoke", &[&info.id.to_be_bytes()]);
    let revoked: Revoked = client
        .post_json_keyed(
            &format!("/admin/v1/members/{}/revoke", info.id),
            &json!({}),
            &key,
        )
        .await?;
    out.emit(&revoked, || {
        if revoked.already_revoked {
            format!("{} (id {}) was already revoked", info.username, revoked.id)
        } else {
            format!(
                "revoked {} (id {}): {} certificates, log entry {}\ngateways report its signatures as revoked once the next snapshot is published (seconds)",
                info.username,
                revoked.id,
                revoked.zetas.len(),
                revoked.seq
            )
        }
    });
    Ok(exit::OK)
}

async fn open(
    client: &Client,
    message: &Path,
    signature: &Path,
    config: &Config,
    out: Output,
) -> Result<i32, Error> {
    let msg = io::read_input(message)?;
    let sig = documents::read_signature(signature)?;
    let body = OpenRequest {
        message: B64.encode(&msg),
        signature: B64.encode(sig.to_bytes()),
    };
    let opened: Opened = client.post_json("/admin/v1/open", &body).await?;
    let pi_hex = B64
        .decode(&opened.pi)
        .map(hex::encode)
        .unwrap_or_else(|_| opened.pi.clone());
    let gateway = std::env::var("DGSP_GATEWAY_URL")
        .ok()
        .or_else(|| config.gateway.clone())
        .unwrap_or_else(|| "<gateway URL>".into());
    let judge = format!(
        "dgsp-manager judge --gateway {gateway} --message {} --signature {} --id {} --pi {pi_hex}",
        shell_quote(message),
        shell_quote(signature),
        opened.id
    );
    #[derive(Serialize)]
    struct Report<'a> {
        #[serde(flatten)]
        opened: &'a Opened,
        pi_hex: &'a str,
        judge_command: &'a str,
    }
    let report = Report {
        opened: &opened,
        pi_hex: &pi_hex,
        judge_command: &judge,
    };
    out.emit(&report, || {
        format!(
            "signer     {} (id {})\ncertificate counter {}\npi         {pi_hex}\nlogged at  entry {}\n\nAnyone can check this opening:\n  {judge}",
            opened.username, opened.id, opened.counter, opened.seq
        )
    });
    Ok(exit::OK)
}

fn shell_quote(p: &Path) -> String {
    let s = p.display().to_string();
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./=:@".contains(c))
    {
        s
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

async fn list(client: &Client, active_only: bool, out: Output) -> Result<i32, Error> {
    let mut all = Vec::new();
    let mut from = 0u64;
    let spinner = out.spinner("listing members");
    loop {
        let page: MemberPage = client
            .get_json(
                "/admin/v1/members",
                &[("from", from.to_string()), ("limit", "1000".into())],
            )
            .await?;
        all.extend(
            page.members
                .into_iter()
                .filter(|m| !active_only || m.active),
        );
        spinner.set_message(format!("listing members: {}", all.len()));
        match page.next {
            Some(next) if next > from => from = next,
            _ => break,
        }
    }
    spinner.finish_and_clear();
    out.emit(&json!({"members": all}), || {
        let mut s = format!(
            "{:>6}  {:<24} {:<8} {:>12}\n",
            "id", "username", "state", "certificates"
        );
        for m in &all {
            s.push_str(&format!(
                "{:>6}  {:<24} {:<8} {:>12}\n",
                m.id,
                m.username,
                if m.active { "active" } else { "revoked" },
                m.certificates_issued
            ));
        }
        s.push_str(&format!("{} members", all.len()));
        s
    });
    Ok(exit::OK)
}

async fn export(client: &Client, dest: &Path, public: bool, out: Output) -> Result<i32, Error> {
    if dest.exists() {
        return Err(Error::input(
            dest,
            "already exists; remove it or choose another name",
        ));
    }
    let group: GroupInfo = client.get_json("/v1/group", &[]).await?;
    let bar = out.progress(group.head_seq, "exporting");
    // Streamed to a temporary file, renamed into place only when complete.
    let file = io::AtomicFile::create(dest, if public { 0o644 } else { 0o600 })?;
    let mut buf = std::io::BufWriter::new(file);
    let mut after = 0u64;
    let mut head = group.head_seq;
    loop {
        let page: Entries = client
            .get_json(
                "/v1/log/entries",
                &[("after", after.to_string()), ("limit", "1000".into())],
            )
            .await?;
        head = head.max(page.head_seq);
        bar.set_length(head);
        if page.entries.is_empty() {
            break;
        }
        for e in &page.entries {
            if e.seq != after + 1 {
                return Err(ClientError::Malformed {
                    url: client.base().to_owned(),
                    reason: format!("entry {} where {} was expected", e.seq, after + 1),
                }
                .into());
            }
            if !public && e.commitment.is_some() && e.private.is_none() {
                return Err(Error::Config(format!(
                    "entry {}: the registry withheld its private part; the token is not the auditor or admin token (or use --public)",
                    e.seq
                )));
            }
            serde_json::to_writer(&mut buf, e)
                .map_err(std::io::Error::from)
                .and_then(|()| buf.write_all(b"\n"))
                .map_err(|source| Error::Io {
                    path: dest.to_owned(),
                    source,
                })?;
            after = e.seq;
        }
        bar.set_position(after);
        // Stop at the head seen when the export began (or later pages, if it moved).
        if after >= head && page.entries.len() < 1000 {
            break;
        }
    }
    bar.finish_and_clear();
    buf.into_inner()
        .map_err(|e| Error::Io {
            path: dest.to_owned(),
            source: e.into_error(),
        })?
        .commit()?;
    let report = json!({"file": dest, "entries": after, "public": public});
    out.emit(&report, || {
        format!(
            "exported {after} entries to {}{}\naudit it with: dgsp-manager audit --file {}",
            dest.display(),
            if public {
                " (public parts only)"
            } else {
                " (with private parts: keep it private)"
            },
            dest.display()
        )
    });
    Ok(exit::OK)
}

async fn status(client: &Client, out: Output) -> Result<i32, Error> {
    let group: GroupInfo = client.get_json("/v1/group", &[]).await?;
    let checkpoint: Option<CheckpointInfo> =
        optional(client.get_json("/v1/checkpoint", &[]).await)?;
    let snapshot: Option<Value> = optional(client.get_json("/v1/revocations/snapshot", &[]).await)?;
    let record = snapshot.as_ref().map(|s| &s["record"]);
    let report = json!({
        "registry": client.base(),
        "params": group.params,
        "fingerprint": group.fingerprint,
        "head_seq": group.head_seq,
        "head_hash": group.head_hash,
        "checkpoint_size": checkpoint.as_ref().map(|c| c.size),
        "snapshot": record.map(|r| json!({
            "number": r["number"], "log_seq": r["log_seq"], "count": r["count"],
            "time_unix_ms": r["time_unix_ms"],
        })),
    });
    out.emit(&report, || {
        let cp = match &checkpoint {
            Some(c) if c.size == group.head_seq => format!("{} (at head)", c.size),
            Some(c) => format!("{} ({} entries not yet signed)", c.size, group.head_seq - c.size.min(group.head_seq)),
            None => "none yet".to_owned(),
        };
        let snap = match record {
            Some(r) => format!(
                "number {}, {} revoked certificates, covers log entry {}",
                r["number"], r["count"], r["log_seq"]
            ),
            None => "none yet".to_owned(),
        };
        format!(
            "registry     {}\nparams       {}\nfingerprint  {}\nlog head     {}\ncheckpoint   {cp}\nsnapshot     {snap}",
            client.base(),
            group.params,
            group.fingerprint,
            group.head_seq
        )
    });
    Ok(exit::OK)
}

/// 404 and 503 ("none published yet") as `None`.
fn optional<T>(r: Result<T, ClientError>) -> Result<Option<T>, Error> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if matches!(e.status(), Some(404) | Some(503)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}
