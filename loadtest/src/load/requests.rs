//! The goose scenarios and their transactions: each takes the next item, sends it, and
//! checks the answer against the item's fixture; a wrong answer is a failed request (with
//! what was wrong as its error), so the run's error rate counts wrong answers too.

use std::time::Duration;

use goose::goose::GooseResponse;
use goose::metrics::GooseRequestMetric;
use goose::prelude::*;
use serde_json::Value;

use super::fixtures::{self, Expect, Post, ReadKind};
use super::mixed::{self, revoke_next};
use super::Scenario as Kind;
use crate::error::{Error, Result};

const JSON: &str = "application/json";
const BINARY: &str = dgsp_gateway::api::body::BINARY;

/// The goose scenarios of `kind` for `users` users; `revoke_every` paces mixed's revoker.
pub fn scenarios(kind: Kind, users: usize, revoke_every: Duration) -> Result<Vec<Scenario>> {
    let one = |name: &str, t: Transaction| vec![Scenario::new(name).register_transaction(t)];
    Ok(match kind {
        Kind::Verify => one("verify", transaction!(verify_json)),
        Kind::VerifyBinary => one("verify-binary", transaction!(verify_binary)),
        Kind::Batch => one("batch", transaction!(batch)),
        Kind::Judge => one("judge", transaction!(judge)),
        Kind::Reads => one("reads", transaction!(read)),
        Kind::Mixed => {
            // One revoker, every other user verifies: goose hands users to scenarios in
            // proportion to their weights.
            let verify = Scenario::new("mixed-verify")
                .register_transaction(transaction!(mixed_verify))
                .set_weight(users - 1)
                .map_err(setup)?;
            let revoke = Scenario::new("mixed-revoke")
                .register_transaction(transaction!(revoke_next))
                .set_weight(1)
                .map_err(setup)?
                .set_wait_time(revoke_every, revoke_every)
                .map_err(setup)?;
            vec![verify, revoke]
        }
    })
}

fn setup(e: GooseError) -> Error {
    Error::Tool {
        what: "goose scenario".into(),
        detail: e.to_string(),
    }
}

/// Sends `body` to `path` (a gateway path or a full URL) and returns the request's metric
/// with the answer's JSON body, or records the failure and returns `None`.
pub async fn post(
    user: &mut GooseUser,
    name: &str,
    path: &str,
    content_type: &str,
    body: &'static [u8],
    bearer: Option<&str>,
) -> std::result::Result<Option<(GooseRequestMetric, Value)>, Box<TransactionError>> {
    let mut rb = user
        .get_request_builder(&GooseMethod::Post, path)?
        .header(reqwest::header::CONTENT_TYPE, content_type)
        .body(body);
    if let Some(token) = bearer {
        rb = rb.bearer_auth(token);
    }
    let req = GooseRequest::builder()
        .method(GooseMethod::Post)
        .path(path)
        .name(name)
        .set_request_builder(rb)
        .build();
    let resp = user.request(req).await?;
    let Some((mut request, bytes)) = body_of(user, resp).await? else {
        return Ok(None);
    };
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(v) => Ok(Some((request, v))),
        Err(e) => {
            user.set_failure(&format!("not JSON: {e}"), &mut request, None, None)?;
            Ok(None)
        }
    }
}

/// The body of a successful answer, or `None` after recording why there is none (goose has
/// already counted a request that got no answer or an error status as failed; reading the
/// body can still fail here).
async fn body_of(
    user: &mut GooseUser,
    resp: GooseResponse,
) -> std::result::Result<Option<(GooseRequestMetric, bytes::Bytes)>, Box<TransactionError>> {
    let GooseResponse {
        mut request,
        response,
    } = resp;
    let Ok(answer) = response else {
        return Ok(None);
    };
    let status = answer.status();
    let bytes = match answer.bytes().await {
        Ok(b) => b,
        Err(e) => {
            user.set_failure(
                &format!("reading the answer: {e}"),
                &mut request,
                None,
                None,
            )?;
            return Ok(None);
        }
    };
    if !status.is_success() {
        let text = String::from_utf8_lossy(&bytes[..bytes.len().min(300)]).into_owned();
        user.set_failure(&format!("HTTP {status}"), &mut request, None, Some(&text))?;
        return Ok(None);
    }
    Ok(Some((request, bytes)))
}

/// Fails the request when `wrong` says the answer is wrong.
pub fn judge_answer(
    user: &mut GooseUser,
    request: &mut GooseRequestMetric,
    wrong: Option<String>,
) -> TransactionResult {
    match wrong {
        None => Ok(()),
        Some(why) => user.set_failure(&why, request, None, None),
    }
}

/// The check of a verify answer's `status`.
pub fn status_is(v: &Value, expect: &str) -> Option<String> {
    let got = v["status"].as_str().unwrap_or("(none)");
    (got != expect).then(|| format!("status {got}, expected {expect}"))
}

/// Sends one verify item and checks its `status`.
async fn verify_item(
    user: &mut GooseUser,
    item: &Post,
    name: &str,
    content_type: &str,
) -> TransactionResult {
    let Expect::Status(expect) = &item.expect else {
        return Ok(());
    };
    if let Some((mut request, v)) =
        post(user, name, "/v1/verify", content_type, item.body, None).await?
    {
        let wrong = status_is(&v, expect);
        judge_answer(user, &mut request, wrong)?;
    }
    Ok(())
}

async fn verify_with(user: &mut GooseUser, name: &str, content_type: &str) -> TransactionResult {
    let p = fixtures::get();
    verify_item(
        user,
        &p.posts[fixtures::next(p.posts.len())],
        name,
        content_type,
    )
    .await
}

async fn verify_json(user: &mut GooseUser) -> TransactionResult {
    verify_with(user, "/v1/verify", JSON).await
}

async fn verify_binary(user: &mut GooseUser) -> TransactionResult {
    verify_with(user, "/v1/verify (binary)", BINARY).await
}

async fn batch(user: &mut GooseUser) -> TransactionResult {
    let p = fixtures::get();
    let item = &p.posts[fixtures::next(p.posts.len())];
    let Expect::Batch(expect) = &item.expect else {
        return Ok(());
    };
    let name = "/v1/verify/batch";
    if let Some((mut request, v)) =
        post(user, name, "/v1/verify/batch", JSON, item.body, None).await?
    {
        let got: Vec<&str> = v["results"]
            .as_array()
            .map(|r| {
                r.iter()
                    .map(|x| x["status"].as_str().unwrap_or("(none)"))
                    .collect()
            })
            .unwrap_or_default();
        let wrong = (got.len() != expect.len() || got.iter().zip(expect).any(|(g, e)| g != e))
            .then(|| format!("statuses {got:?}, expected {expect:?}"));
        judge_answer(user, &mut request, wrong)?;
    }
    Ok(())
}

async fn judge(user: &mut GooseUser) -> TransactionResult {
    let p = fixtures::get();
    let item = &p.posts[fixtures::next(p.posts.len())];
    let Expect::Judge(correct) = item.expect else {
        return Ok(());
    };
    if let Some((mut request, v)) =
        post(user, "/v1/judge", "/v1/judge", JSON, item.body, None).await?
    {
        let got = v["correct"].as_bool();
        let wrong = (got != Some(correct)).then(|| format!("correct {got:?}, expected {correct}"));
        judge_answer(user, &mut request, wrong)?;
    }
    Ok(())
}

async fn read(user: &mut GooseUser) -> TransactionResult {
    let p = fixtures::get();
    let item = &p.reads[fixtures::next(p.reads.len())];
    let rb = user.get_request_builder(&GooseMethod::Get, &item.url)?;
    let req = GooseRequest::builder()
        .method(GooseMethod::Get)
        .path(item.url.as_str())
        .name(item.name)
        .set_request_builder(rb)
        .build();
    let resp = user.request(req).await?;
    let Some((mut request, bytes)) = body_of(user, resp).await? else {
        return Ok(());
    };
    let json = || serde_json::from_slice::<Value>(&bytes).unwrap_or(Value::Null);
    let wrong = match item.kind {
        ReadKind::Proof { revoked } => {
            let v = json();
            let kind = if revoked {
                "inclusion"
            } else {
                "non_membership"
            };
            (v["revoked"].as_bool() != Some(revoked) || v["proof"]["kind"].as_str() != Some(kind))
                .then(|| {
                    format!(
                        "revoked {}, proof {}, expected {revoked} and {kind}",
                        v["revoked"], v["proof"]["kind"]
                    )
                })
        }
        ReadKind::Snapshot => {
            (!json()["encoded"].is_string()).then(|| "no signed snapshot (`encoded`)".to_owned())
        }
        ReadKind::Checkpoint => {
            (!json()["note"].is_string()).then(|| "no checkpoint note (`note`)".to_owned())
        }
        ReadKind::LogCheckpoint => {
            let text = String::from_utf8_lossy(&bytes);
            (text.lines().count() < 4 || !text.contains("\n\n\u{2014} "))
                .then(|| "not a signed note".to_owned())
        }
        ReadKind::Tile(Some(n)) => (bytes.len() != n)
            .then(|| format!("a hash tile of {} bytes, expected {n}", bytes.len())),
        ReadKind::Tile(None) => bytes.is_empty().then(|| "an empty entry bundle".to_owned()),
    };
    judge_answer(user, &mut request, wrong)
}

async fn mixed_verify(user: &mut GooseUser) -> TransactionResult {
    let p = fixtures::get();
    let i = fixtures::next_raw();
    // One request in four is about a member the run revokes.
    if i.is_multiple_of(4) {
        let d = &p.doomed[(i / 4) % p.doomed.len()];
        return mixed::verify_doomed(user, d).await;
    }
    verify_item(user, &p.posts[i % p.posts.len()], "/v1/verify", JSON).await
}
