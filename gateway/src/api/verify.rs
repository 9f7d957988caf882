//! `POST /v1/verify`, `/v1/verify/batch` and `/v1/judge`.
//!
//! Order of checks, per signature: decode (cheap), parameter set against the group (cheap),
//! freshness (a view older than `--max-staleness-secs` by signed time gives no verdict:
//! `stale`, unless the operator serves stale answers), revocation against the view (cheap,
//! and first as the scheme specifies), and only then the WOTS+ and SPHINCS+ work, on the
//! bounded pool.

use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use dgsp_core::{Error as CoreError, ParamSet, Pi, Signature, WotsPk};
use dgsp_http::problem::{b64, to_b64, Body, Problem};

use super::body::{RawItem, VerifyBody};
use super::model::{
    BatchAnswer, BatchRequest, Freshness, FreshnessOf, JudgeAnswer, JudgeRequest, Revocation,
    RevocationOf, Status, VerifyAnswer, VerifyRequest,
};
use super::Shared;
use crate::pool::{PoolError, VerifyItem};
use crate::state::{current, View};

/// A decoded verify item, or why it could not be.
#[doc(hidden)]
pub enum Item {
    /// The message and the signature, decoded.
    Ready {
        /// The message.
        message: Vec<u8>,
        /// The signature.
        sig: Signature,
    },
    /// The signature field is base64 but not a signature encoding: why.
    Malformed(String),
}

/// Decodes one item; a field that is not base64 is named with `prefix` (`items[3].`), which
/// is only formatted when there is an error to report. Public for the fuzz targets only.
#[doc(hidden)]
pub fn decode_item(prefix: impl Fn() -> String, req: &RawItem<'_>) -> Result<Item, Problem> {
    let message = req.message.decode(|| format!("{}message", prefix()))?;
    let bytes = req.signature.bytes(|| format!("{}signature", prefix()))?;
    Ok(match Signature::from_bytes(&bytes) {
        Ok(sig) => Item::Ready { message, sig },
        Err(e) => Item::Malformed(format!("not a DGSP signature encoding: {e}")),
    })
}

/// What the cheap checks decide before any cryptography.
enum Plan {
    Done(VerifyAnswer),
    /// The signature to verify, and its answer once the verdict is in.
    Crypto(VerifyItem, VerifyAnswer),
}

/// The freshness every answer of one request shares.
fn request_freshness(s: &Shared, view: &View) -> Freshness {
    Freshness::of(view, &s.clock, s.config.max_staleness)
}

/// Why a stale answer is stale, in words.
fn stale_detail(fresh: &Freshness) -> String {
    match fresh.age_ms {
        // Stale although not old: the note is dated ahead of the gateway's clock.
        Some(age) if age <= fresh.max_staleness_ms => "the gateway's newest signed checkpoint is dated ahead of its clock by more than the tolerance: one of the clocks is wrong, so it cannot show how current its revocation state is".into(),
        Some(age) => format!(
            "the gateway's newest signed checkpoint is {:.1} s old, more than its {:.1} s bound: revocations since may be missing",
            age as f64 / 1e3,
            fresh.max_staleness_ms as f64 / 1e3
        ),
        None => "the gateway has no signed checkpoint with a time yet: it cannot show how current its revocation state is".into(),
    }
}

fn plan(view: &View, fresh: &Freshness, serve_stale: bool, item: Item) -> Plan {
    let group_params = view.group.params();
    let mut answer = VerifyAnswer {
        valid: false,
        status: Status::Malformed,
        params: group_params.name().to_owned(),
        zeta: None,
        revocation: None,
        freshness: fresh.clone(),
        detail: None,
    };
    let (message, sig) = match item {
        Item::Malformed(why) => {
            answer.detail = Some(why);
            return Plan::Done(answer);
        }
        Item::Ready { message, sig } => (message, sig),
    };
    if sig.params() != group_params {
        answer.status = Status::WrongGroup;
        answer.params = sig.params().name().to_owned();
        answer.detail = Some(format!(
            "a {} signature cannot belong to this {} group ({})",
            sig.params().name(),
            group_params.name(),
            dgsp_core::Error::mismatch(group_params, sig.params())
        ));
        return Plan::Done(answer);
    }
    let zeta = *sig.zeta();
    answer.zeta = Some(to_b64(zeta.as_bytes()));
    let revocation = Revocation::of(view, &zeta);
    let revoked = revocation.revoked;
    answer.revocation = Some(revocation);
    if fresh.stale && !serve_stale {
        answer.status = Status::Stale;
        answer.detail = Some(stale_detail(fresh));
        return Plan::Done(answer);
    }
    if revoked {
        answer.status = Status::Revoked;
        answer.detail = Some("the signature's certificate is revoked".into());
        return Plan::Done(answer);
    }
    let item = VerifyItem {
        group: view.group.clone(),
        message,
        sig: Box::new(sig),
    };
    Plan::Crypto(item, answer)
}

/// Settles an answer with the cryptographic verdict.
fn settle(a: &mut VerifyAnswer, verdict: Result<WotsPk, CoreError>) {
    match verdict {
        Ok(_) => {
            a.valid = true;
            a.status = Status::Ok;
        }
        Err(e) => {
            a.status = Status::InvalidSignature;
            a.detail = Some(e.to_string());
        }
    }
}

/// A 200 JSON answer, written into one buffer sized for it up front (an answer carries a
/// checkpoint note of up to ~70 KB in JSON: growing a small buffer would copy it repeatedly).
fn json<T: serde::Serialize>(answer: &T) -> Response {
    let mut buf = Vec::with_capacity(ANSWER_CAPACITY);
    match serde_json::to_writer(&mut buf, answer) {
        Ok(()) => (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            buf,
        )
            .into_response(),
        Err(e) => Problem::internal("answer", e).into_response(),
    }
}

/// The starting size of an answer buffer: a sha2-128f answer is ~26 KB, a shake-256f one
/// ~70 KB; larger answers (batches) grow it.
const ANSWER_CAPACITY: usize = 32 << 10;

fn busy(s: &Shared, e: PoolError) -> Response {
    match e {
        PoolError::Busy => {
            s.counters.shed.fetch_add(1, Ordering::Relaxed);
            Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "overloaded",
                "Verification queue full",
                format!(
                    "{} verifications are queued or running; retry shortly",
                    s.pool.capacity()
                ),
            )
            .retry_after(1)
            .into_response()
        }
        PoolError::Crashed => Problem::internal("verification", e).into_response(),
    }
}

/// Runs the plans: the cryptographic ones on the pool, which verifies them in engine batches
/// (coalesced with other requests' signatures) on all its workers.
async fn run(s: &Shared, plans: Vec<Plan>) -> Result<Vec<VerifyAnswer>, Response> {
    let mut answers = Vec::with_capacity(plans.len());
    let mut items = Vec::new();
    let mut slots = Vec::new();
    for p in plans {
        match p {
            Plan::Done(a) => answers.push(a),
            Plan::Crypto(item, a) => {
                slots.push(answers.len());
                answers.push(a);
                items.push(item);
            }
        }
    }
    let verdicts = s.pool.verify(items).await.map_err(|e| busy(s, e))?;
    for (slot, v) in slots.into_iter().zip(verdicts) {
        settle(&mut answers[slot], v);
    }
    for a in &mut answers {
        s.counters.verify[a.status.index()].fetch_add(1, Ordering::Relaxed);
        if a.freshness.stale {
            s.counters.stale.fetch_add(1, Ordering::Relaxed);
            if a.status != Status::Stale {
                // Served stale (--serve-stale): the verdict, marked as such.
                let note = format!("served stale: {}", stale_detail(&a.freshness));
                a.detail = Some(match a.detail.take() {
                    Some(d) => format!("{d}; {note}"),
                    None => note,
                });
            }
        }
    }
    Ok(answers)
}

/// Verifies one group signature against the pinned group and the latest verified snapshot.
/// The answer carries the signed checkpoint the state is fresh as of (`freshness.checkpoint`,
/// with its note) and, when that is older than the gateway's bound, status `stale` and no
/// verdict (unless the gateway serves stale answers: then the verdict with `stale: true`).
/// A body whose `signature` is base64 but not a signature encoding is answered 422.
#[utoipa::path(post, path = "/v1/verify", tag = "verify",
    request_body(description = "JSON with base64 fields, or the compact binary form `application/vnd.dgsp.verify`: a 4-byte big-endian message length, the message, a 4-byte big-endian signature length, the signature encoding. Both give the same answers and errors.",
        content((VerifyRequest = "application/json"), ("application/vnd.dgsp.verify"))),
    responses(
        (status = 200, description = "verified (see `status`)", body = VerifyAnswer),
        (status = 400, description = "malformed body or field", body = Problem, content_type = "application/problem+json"),
        (status = 413, body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "neither application/json nor application/vnd.dgsp.verify", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "not a signature encoding", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "queue full; see Retry-After", body = Problem, content_type = "application/problem+json")))]
pub async fn verify(State(s): State<Shared>, body: VerifyBody) -> Response {
    let item = match body.single().and_then(|req| decode_item(String::new, &req)) {
        Ok(Item::Malformed(why)) => {
            s.counters.verify[Status::Malformed.index()].fetch_add(1, Ordering::Relaxed);
            return Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "malformed-signature",
                "Malformed signature",
                why,
            )
            .at("signature")
            .into_response();
        }
        Ok(item) => item,
        Err(p) => return p.into_response(),
    };
    let view = current(&s.view);
    let p = plan(
        &view,
        &request_freshness(&s, &view),
        s.config.serve_stale,
        item,
    );
    match run(&s, vec![p]).await {
        Ok(mut answers) => json(&answers.pop().expect("one answer")),
        Err(r) => r,
    }
}

/// Verifies up to `max_batch` (default 256) signatures in parallel, all against the same
/// view, whose freshness (with the signed note) is given once at the top level. Items that
/// are not signature encodings get status `malformed`; a field that is not base64 fails the
/// whole batch (400 naming `items[i].field`). The batch is refused whole (503) when the pool
/// cannot take all of its items.
#[utoipa::path(post, path = "/v1/verify/batch", tag = "verify",
    request_body(description = "JSON with base64 fields, or the compact binary form `application/vnd.dgsp.verify`: a 4-byte big-endian item count, then per item a 4-byte big-endian message length, the message, a 4-byte big-endian signature length and the signature encoding. Both give the same answers and errors.",
        content((BatchRequest = "application/json"), ("application/vnd.dgsp.verify"))),
    responses(
        (status = 200, body = BatchAnswer),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 413, body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "neither application/json nor application/vnd.dgsp.verify", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "empty or too many items", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "queue full; see Retry-After", body = Problem, content_type = "application/problem+json")))]
pub async fn verify_batch(State(s): State<Shared>, body: VerifyBody) -> Response {
    let items = match body.batch(s.config.max_batch) {
        Ok(items) => items,
        Err(p) => return p.into_response(),
    };
    let view = current(&s.view);
    let freshness = request_freshness(&s, &view);
    let fresh = freshness.without_note();
    let mut plans = Vec::with_capacity(items.len());
    for (i, it) in items.iter().enumerate() {
        match decode_item(|| format!("items[{i}]."), it) {
            Ok(item) => plans.push(plan(&view, &fresh, s.config.serve_stale, item)),
            Err(p) => return p.into_response(),
        }
    }
    match run(&s, plans).await {
        Ok(results) => {
            s.counters.batches.fetch_add(1, Ordering::Relaxed);
            let ok = results.iter().filter(|a| a.valid).count();
            let not_ok = results.len() - ok;
            json(&BatchAnswer {
                results,
                freshness,
                ok,
                not_ok,
            })
        }
        Err(r) => r,
    }
}

/// Judges the manager's opening: does member `id` with proof `pi` open this signature?
/// `correct` requires the signature to verify (revocation aside) and the opening to match.
#[utoipa::path(post, path = "/v1/judge", tag = "verify", request_body = JudgeRequest,
    responses(
        (status = 200, body = JudgeAnswer),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "signature or pi not decodable for this group", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "queue full; see Retry-After", body = Problem, content_type = "application/problem+json")))]
pub async fn judge(State(s): State<Shared>, Body(req): Body<JudgeRequest>) -> Response {
    let view = current(&s.view);
    let params = view.group.params();
    let (message, sig, pi) = match req.decode(params) {
        Ok(decoded) => decoded,
        Err(p) => return p.into_response(),
    };
    let group = view.group.clone();
    let id = req.id;
    let job = move || {
        let signature_valid = group.verify_ignoring_revocation(&message, &sig).is_ok();
        let opening = group.judge(&message, &sig, id, &pi);
        (signature_valid, opening)
    };
    match s.pool.run(job).await {
        Err(e) => busy(&s, e),
        Ok((signature_valid, opening)) => {
            s.counters.judge.fetch_add(1, Ordering::Relaxed);
            let opening_matches = opening.is_ok();
            let detail = match (&signature_valid, &opening) {
                (false, _) => Some("the signature does not verify".to_owned()),
                (true, Err(CoreError::WrongOpening)) => Some(format!(
                    "member {id} with this pi does not open the signature"
                )),
                (true, Err(e)) => Some(e.to_string()),
                (true, Ok(())) => None,
            };
            Json(JudgeAnswer {
                correct: signature_valid && opening_matches,
                signature_valid,
                opening_matches,
                params: params.name().to_owned(),
                detail,
            })
            .into_response()
        }
    }
}

/// Decoding a judge body as the handler does (a trait because the body type is
/// `dgsp-wire`'s; public for the fuzz targets).
pub trait JudgeDecode {
    /// Decodes the body for a group of `params` as the handler does before judging: the
    /// message (400), the signature (400 if not base64, 422 if not a signature encoding or
    /// of another parameter set) and pi (400, or 422 if not a pi of `params`).
    fn decode(&self, params: ParamSet) -> Result<(Vec<u8>, Signature, Pi), Problem>;
}

impl JudgeDecode for JudgeRequest {
    fn decode(&self, params: ParamSet) -> Result<(Vec<u8>, Signature, Pi), Problem> {
        let message = b64("message", &self.message)?;
        let sig = Signature::from_bytes(&b64("signature", &self.signature)?).map_err(|e| {
            Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "malformed-signature",
                "Malformed signature",
                format!("not a DGSP signature encoding: {e}"),
            )
            .at("signature")
        })?;
        if sig.params() != params {
            return Err(Problem::invalid_field(
                "signature",
                format!(
                    "a {} signature cannot belong to this {} group",
                    sig.params().name(),
                    params.name()
                ),
            ));
        }
        let pi = Pi::from_slice(params, &b64("pi", &self.pi)?).map_err(|e| {
            Problem::invalid_field("pi", format!("not a pi for {}: {e}", params.name()))
        })?;
        Ok((message, sig, pi))
    }
}
