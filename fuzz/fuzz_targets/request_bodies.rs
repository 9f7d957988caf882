//! Every request body of both services, through the extractors and checks the handlers use
//! before anything is written or verified: the registry's admin bodies (`dgsp_wire`'s
//! request types, axum `Json` through `problem::Body`, whose rejections become problem+json
//! naming the field, then `api::admin`'s `check_*`/`decode_*` for each request), its query
//! strings (`problem::Params`), the gateway's verify
//! bodies (`VerifyBody`: JSON with borrowed base64 fields, or the binary
//! `application/vnd.dgsp.verify`, single and batch, then `decode_item`), its judge body
//! (`JudgeRequest::decode`), and the path parameters both parse (zeta, snapshot number). The
//! first byte picks:
//!
//! 0 join, 1 bulk join, 2 issue, 3 open, 4 backup (registry JSON bodies); 5 the feed's and
//! the member list's query strings; 6 verify JSON, 7 batch JSON, 8 verify binary, 9 batch
//! binary, 10 judge (gateway bodies); 11 path parameters.
//!
//! Every refusal must be a problem that renders; nothing may panic.
//!
//!   cargo +nightly fuzz run request_bodies corpus/request_bodies seeds/request_bodies
//!
//! Seeds: `manager-cli/tests/fuzz_seeds.rs` (one valid body per selector).

#![no_main]

mod common;

use axum::body::Body as HttpBody;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use dgsp_gateway::api::body::{VerifyBody, BINARY};
use dgsp_gateway::api::model::JudgeRequest;
use dgsp_gateway::api::revocations::parse_zeta;
use dgsp_gateway::api::verify::{decode_item, JudgeDecode};
use dgsp_gateway::api::DEFAULT_MAX_BATCH;
use dgsp_registry::api::admin::{self, MemberQuery};
use dgsp_registry::api::problem::{Body, Params, Problem};
use dgsp_registry::api::public::Page;
use dgsp_wire::log::unhex;
use dgsp_wire::registry_api::{
    BackupRequest, BulkJoinRequest, IssueRequest, JoinRequest, OpenRequest,
};
use libfuzzer_sys::fuzz_target;
use serde::de::DeserializeOwned;
use serde::Serialize;

fn request(content_type: &str, body: &[u8]) -> Request {
    Request::builder()
        .method("POST")
        .uri("/")
        .header(CONTENT_TYPE, content_type)
        .body(HttpBody::from(body.to_vec()))
        .expect("a request")
}

/// A problem must render (status, headers, JSON).
fn answer(p: Problem) {
    let _ = p.into_response();
}

/// The JSON `Body<T>` extractor (both services use it), then the handler's check.
fn json<T: DeserializeOwned>(
    input: &[u8],
    check: impl FnOnce(&T) -> Result<(), Problem>,
) -> Option<T> {
    match common::block_on(Body::<T>::from_request(
        request("application/json", input),
        &(),
    )) {
        Ok(Body(req)) => match check(&req) {
            Ok(()) => Some(req),
            Err(p) => {
                answer(p);
                None
            }
        },
        Err(p) => {
            answer(p);
            None
        }
    }
}

/// A registry body: an accepted one must serialize (the idempotency fingerprint hashes its
/// JSON).
fn registry<T: DeserializeOwned + Serialize>(
    input: &[u8],
    check: impl FnOnce(&T) -> Result<(), Problem>,
) {
    if let Some(req) = json(input, check) {
        serde_json::to_vec(&req).expect("an accepted body serializes");
    }
}

fn query(input: &[u8]) {
    let Ok(text) = std::str::from_utf8(input) else {
        return;
    };
    let Ok(req) = Request::builder().uri(format!("/?{text}")).body(()) else {
        return;
    };
    let (mut parts, ()) = req.into_parts();
    if let Err(p) = common::block_on(Params::<Page>::from_request_parts(&mut parts, &())) {
        answer(p);
    }
    if let Err(p) = common::block_on(Params::<MemberQuery>::from_request_parts(&mut parts, &())) {
        answer(p);
    }
}

fn verify(input: &[u8], content_type: &str, batch: bool) {
    let body = match common::block_on(VerifyBody::from_request(request(content_type, input), &())) {
        Ok(b) => b,
        Err(p) => return answer(p),
    };
    let items = if batch {
        body.batch(DEFAULT_MAX_BATCH)
    } else {
        body.single().map(|i| vec![i])
    };
    match items {
        Ok(items) => {
            assert!(!items.is_empty() && items.len() <= DEFAULT_MAX_BATCH);
            for (i, item) in items.iter().enumerate() {
                if let Err(p) = decode_item(|| format!("items[{i}]."), item) {
                    answer(p);
                }
            }
        }
        Err(p) => answer(p),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    let params = common::PARAMS;
    match selector % 12 {
        0 => registry::<JoinRequest>(input, admin::check_join),
        1 => registry::<BulkJoinRequest>(input, admin::check_bulk_join),
        2 => registry::<IssueRequest>(input, |r| admin::decode_issue(r, params).map(drop)),
        3 => registry::<OpenRequest>(input, |r| admin::decode_open(r).map(drop)),
        4 => registry::<BackupRequest>(input, admin::check_backup),
        5 => query(input),
        6 => verify(input, "application/json", false),
        7 => verify(input, "application/json; charset=utf-8", true),
        8 => verify(input, BINARY, false),
        9 => verify(input, BINARY, true),
        10 => drop(json::<JudgeRequest>(input, |r| r.decode(params).map(drop))),
        _ => {
            if let Ok(text) = std::str::from_utf8(input) {
                let _ = parse_zeta(text);
                let _ = unhex::<16>(text);
                let _ = text.parse::<u64>();
            }
        }
    }
});
