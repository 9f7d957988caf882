//! The items of a run, prepared once from the fixture files (request bodies built before
//! the run starts), and the one cursor every user takes the next item from.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

use super::{Args, Scenario};
use crate::error::{read, read_json, Error, Result};
use crate::model::{body, JudgeItem, MixedItem, VerifyItem, ZetaItem};

/// What a POST's answer must say.
#[derive(Debug)]
pub enum Expect {
    /// A verify answer's `status`.
    Status(String),
    /// A batch answer's `results[i].status`, in order.
    Batch(Vec<String>),
    /// A judge answer's `correct`.
    Judge(bool),
}

/// One POST, its body built once.
#[derive(Debug)]
pub struct Post {
    /// The request body (leaked: it lives as long as the run).
    pub body: &'static [u8],
    /// What the answer must say.
    pub expect: Expect,
}

/// What a read's answer must be.
#[derive(Debug, Clone, Copy)]
pub enum ReadKind {
    /// `GET /v1/revocations/{zeta}/proof`: `revoked` as given, with the matching proof kind.
    Proof {
        /// Whether the zeta is revoked.
        revoked: bool,
    },
    /// `GET /v1/revocations/snapshot`: a signed snapshot.
    Snapshot,
    /// `GET /v1/checkpoint` (gateway): the checkpoint evidence.
    Checkpoint,
    /// `GET /v1/log/checkpoint` (registry): a signed note.
    LogCheckpoint,
    /// `GET /v1/log/tile/...` (registry): a hash tile of this many bytes, or an entry
    /// bundle (`None`).
    Tile(Option<usize>),
}

/// One GET.
#[derive(Debug)]
pub struct Read {
    /// The name goose reports it under (after the method).
    pub name: &'static str,
    /// A path on the gateway, or a full URL.
    pub url: String,
    /// What the answer must be.
    pub kind: ReadKind,
}

/// mixed: a signature by a member the run revokes.
#[derive(Debug)]
pub struct Doomed {
    /// The member.
    pub member: u64,
    /// The verify request body (JSON).
    pub body: &'static [u8],
}

/// Everything a run's users share.
#[derive(Debug)]
pub struct Prepared {
    /// POST items (verify, verify-binary, batch, judge; mixed: the unchanging verify items).
    pub posts: Vec<Post>,
    /// GET items (reads).
    pub reads: Vec<Read>,
    /// mixed: signatures of members revoked during the run.
    pub doomed: Vec<Doomed>,
    /// mixed: those members, in the order the revoker takes them.
    pub doomed_ids: Vec<u64>,
    /// The registry's base URL.
    pub registry: String,
    /// mixed: the registry's admin token.
    pub admin_token: Option<String>,
    /// Items (signatures) per request.
    pub items_per_request: usize,
}

impl Prepared {
    /// Items per request.
    pub fn items_per_request(&self) -> usize {
        self.items_per_request
    }

    /// Distinct requests the run can send before repeating one.
    pub fn distinct(&self) -> usize {
        self.posts.len() + self.reads.len() + self.doomed.len()
    }
}

static PREPARED: OnceLock<Arc<Prepared>> = OnceLock::new();
static CURSOR: AtomicUsize = AtomicUsize::new(0);

/// Makes `p` the run's items (once per process).
pub fn install(p: Arc<Prepared>) -> Result<()> {
    PREPARED
        .set(p)
        .map_err(|_| Error::Usage("the items of a run are installed once per process".into()))
}

/// The run's items.
///
/// # Panics
/// Before [`install`]: the scenarios are registered only after it.
pub fn get() -> &'static Prepared {
    PREPARED
        .get()
        .expect("the run's items are installed before goose starts")
}

/// The cursor's next position (mixed interleaves two item lists on it).
pub fn next_raw() -> usize {
    CURSOR.fetch_add(1, Ordering::Relaxed)
}

/// The index of the next item among `n` (wrapping around after the last).
pub fn next(n: usize) -> usize {
    next_raw() % n.max(1)
}

/// Items taken so far.
pub fn sent() -> usize {
    CURSOR.load(Ordering::Relaxed)
}

/// mixed: how many members the run revokes (0 before [`install`]).
pub fn doomed_members() -> usize {
    PREPARED.get().map_or(0, |p| p.doomed_ids.len())
}

fn leak(v: Vec<u8>) -> &'static [u8] {
    Vec::leak(v)
}

fn b64(s: &str, what: &str) -> Result<Vec<u8>> {
    B64.decode(s)
        .map_err(|e| Error::Usage(format!("fixtures: {what}: {e}")))
}

fn leak_str(s: String) -> &'static [u8] {
    leak(s.into_bytes())
}

/// Reads the fixture files the scenario needs and builds its requests.
pub async fn prepare(a: &Args) -> Result<Prepared> {
    let dir = &a.fixtures;
    let mut p = Prepared {
        posts: Vec::new(),
        reads: Vec::new(),
        doomed: Vec::new(),
        doomed_ids: Vec::new(),
        registry: a.registry.trim_end_matches('/').to_owned(),
        admin_token: None,
        items_per_request: 1,
    };
    let verify = || read_json::<Vec<VerifyItem>>(&dir.join("verify.json"));
    let verify_post = |v: &VerifyItem| Post {
        body: leak_str(body::verify(&v.message, &v.signature)),
        expect: Expect::Status(v.expect.clone()),
    };
    match a.scenario {
        Scenario::Verify => p.posts = verify()?.iter().map(verify_post).collect(),
        Scenario::VerifyBinary => {
            for v in verify()? {
                let (m, s) = (b64(&v.message, "message")?, b64(&v.signature, "signature")?);
                p.posts.push(Post {
                    body: leak(dgsp_gateway::api::body::encode_binary(
                        &[(&m[..], &s[..])],
                        false,
                    )),
                    expect: Expect::Status(v.expect),
                });
            }
        }
        Scenario::Batch => {
            p.items_per_request = a.batch;
            for part in verify()?.chunks_exact(a.batch) {
                p.posts.push(Post {
                    body: leak_str(body::batch(part)),
                    expect: Expect::Batch(part.iter().map(|v| v.expect.clone()).collect()),
                });
            }
        }
        Scenario::Judge => {
            let judge: Vec<JudgeItem> = read_json(&dir.join("judge.json"))?;
            p.posts = judge
                .iter()
                .map(|j| Post {
                    body: leak_str(body::judge(j)),
                    expect: Expect::Judge(j.expect_correct),
                })
                .collect();
        }
        Scenario::Reads => {
            let zetas: Vec<ZetaItem> = read_json(&dir.join("zetas.json"))?;
            let tiles = log_tiles(&p.registry).await?;
            p.reads = interleave_reads(&zetas, &tiles, &p.registry);
        }
        Scenario::Mixed => {
            p.posts = verify()?.iter().map(verify_post).collect();
            let mixed: Vec<MixedItem> = read_json(&dir.join("mixed.json"))?;
            if mixed.is_empty() {
                return Err(Error::Usage(
                    "mixed: mixed.json is empty (generate with --doomed-fraction above 0)".into(),
                ));
            }
            for m in &mixed {
                if !p.doomed_ids.contains(&m.member) {
                    p.doomed_ids.push(m.member);
                }
            }
            p.doomed = mixed
                .iter()
                .map(|m| Doomed {
                    member: m.member,
                    body: leak_str(body::verify(&m.message, &m.signature)),
                })
                .collect();
            let file = a.admin_token_file.as_ref().ok_or_else(|| {
                Error::Usage("mixed: --admin-token-file (the revocations need it)".into())
            })?;
            p.admin_token = Some(String::from_utf8_lossy(&read(file)?).trim().to_owned());
        }
    }
    if p.posts.is_empty() && p.reads.is_empty() {
        return Err(Error::Usage(format!(
            "{}: the fixtures in {} hold nothing for this scenario",
            a.scenario.name(),
            dir.display()
        )));
    }
    Ok(p)
}

/// The registry's tiles of its current checkpoint, as `(path, hash tile bytes or None for
/// an entry bundle)`.
async fn log_tiles(registry: &str) -> Result<Vec<(String, Option<usize>)>> {
    let url = format!("{registry}/v1/log/checkpoint");
    let what = format!("GET {url}");
    let answer = reqwest::get(&url).await.map_err(|source| Error::Http {
        what: what.clone(),
        source,
    })?;
    let status = answer.status().as_u16();
    let text = answer.text().await.map_err(|source| Error::Http {
        what: what.clone(),
        source,
    })?;
    if status != 200 {
        return Err(Error::Status {
            what,
            status,
            body: text.chars().take(300).collect(),
        });
    }
    let size: u64 = text
        .lines()
        .nth(1)
        .and_then(|l| l.parse().ok())
        .ok_or_else(|| Error::Answer {
            what: what.clone(),
            detail: "no tree size on the note's second line".into(),
        })?;
    Ok(dgsp_wire::tiles::tiles_for(0, size)
        .into_iter()
        .map(|t| {
            let bytes = t.level.map(|_| usize::from(t.width) * 32);
            (format!("/v1/log/{}", t.path()), bytes)
        })
        .collect())
}

/// The reads, interleaved so that every stretch of the run has the same mix: per ten zeta
/// proofs, one snapshot and one log tile, and per twenty, one gateway checkpoint and one
/// registry checkpoint.
fn interleave_reads(zetas: &[ZetaItem], tiles: &[(String, Option<usize>)], reg: &str) -> Vec<Read> {
    let mut out = Vec::with_capacity(zetas.len() * 6 / 5 + 1);
    for (i, z) in zetas.iter().enumerate() {
        out.push(Read {
            name: "/v1/revocations/{zeta}/proof",
            url: format!("/v1/revocations/{}/proof", z.zeta),
            kind: ReadKind::Proof { revoked: z.revoked },
        });
        match i % 20 {
            0 | 10 => out.push(Read {
                name: "/v1/revocations/snapshot",
                url: "/v1/revocations/snapshot".into(),
                kind: ReadKind::Snapshot,
            }),
            5 => out.push(Read {
                name: "/v1/checkpoint",
                url: "/v1/checkpoint".into(),
                kind: ReadKind::Checkpoint,
            }),
            15 => out.push(Read {
                name: "registry /v1/log/checkpoint",
                url: format!("{reg}/v1/log/checkpoint"),
                kind: ReadKind::LogCheckpoint,
            }),
            _ => {}
        }
        if i % 10 == 3 && !tiles.is_empty() {
            let (path, bytes) = &tiles[(i / 10) % tiles.len()];
            out.push(Read {
                name: if bytes.is_some() {
                    "registry /v1/log/tile/{L}/{N}"
                } else {
                    "registry /v1/log/tile/entries/{N}"
                },
                url: format!("{reg}{path}"),
                kind: ReadKind::Tile(*bytes),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_keep_their_mix_and_every_zeta() {
        let zetas: Vec<ZetaItem> = (0..100)
            .map(|i| ZetaItem {
                zeta: format!("{i:032x}"),
                revoked: i % 3 == 0,
            })
            .collect();
        let tiles = vec![
            ("/v1/log/tile/0/000.p/7".to_owned(), Some(7 * 32)),
            ("/v1/log/tile/entries/000.p/7".to_owned(), None),
        ];
        let reads = interleave_reads(&zetas, &tiles, "http://r");
        let count = |name: &str| reads.iter().filter(|r| r.name == name).count();
        assert_eq!(count("/v1/revocations/{zeta}/proof"), 100);
        assert_eq!(count("/v1/revocations/snapshot"), 10);
        assert_eq!(count("/v1/checkpoint"), 5);
        assert_eq!(count("registry /v1/log/checkpoint"), 5);
        assert_eq!(count("registry /v1/log/tile/{L}/{N}"), 5);
        assert_eq!(count("registry /v1/log/tile/entries/{N}"), 5);
        assert!(reads
            .iter()
            .filter(|r| r.name.starts_with("registry"))
            .all(|r| r.url.starts_with("http://r/v1/log/")));
    }
}
