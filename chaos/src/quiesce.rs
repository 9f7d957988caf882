//! After the chaos: the registry publishes a checkpoint covering its head, and every gateway
//! must reach it within one cadence plus one poll (plus a grace) of its signing.

use std::time::{Duration, Instant};

use dgsp_wire::log::now_ms;
use dgsp_wire::registry_api::GroupInfo;

use crate::http;
use crate::monitor::GroupAnswer;
use crate::report::Row;
use crate::stack::Stack;

/// The registry's newest checkpoint, once it covers the head: `(size, signed time)` (after
/// quiescing nothing more is written, so this is the checkpoint every gateway must reach).
/// `None` when that did not happen within three cadences and 30 s.
pub async fn published(stack: &Stack) -> Option<(u64, u64)> {
    let group = format!("{}/v1/group", stack.registry_url().await);
    let give_up = Instant::now() + Duration::from_secs(stack.settings.cadence_secs * 3 + 30);
    while Instant::now() < give_up {
        let head = http::json::<GroupInfo>(&stack.http, &group)
            .await
            .map(|(_, g)| g.head_seq);
        if let (Some(head), Some(cp)) = (head, stack.registry_checkpoint().await) {
            if cp.size == head {
                return Some((cp.size, cp.time_unix_ms));
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    None
}

/// Every gateway reaches the `published` checkpoint within one cadence plus one poll (plus
/// `grace_ms`) of its signing: the clock is back at real time, so the note's signed time is
/// real time.
pub async fn catch_up(stack: &Stack, published: Option<(u64, u64)>, grace_ms: u64) -> Row {
    let name = "every gateway reaches the latest checkpoint in time";
    let Some((size, time)) = published else {
        return Row::new(
            name,
            1,
            vec!["the registry's checkpoint never covered its head after quiescing".into()],
        );
    };
    let s = &stack.settings;
    let bound_ms = s.cadence_secs * 1000 + s.poll_ms + grace_ms;
    let mut failures = Vec::new();
    let mut slowest = 0;
    for gw in &stack.gateways {
        let (gname, url) = {
            let g = gw.lock().await;
            (g.name.clone(), g.url.clone())
        };
        let (reached, last) = reach(stack, &url, size, time, time + bound_ms + 30_000).await;
        let took = now_ms().saturating_sub(time);
        slowest = slowest.max(took);
        if !reached {
            failures.push(format!(
                "{gname}: had not reached checkpoint {size} {:.1} s after it was signed; last: {last}",
                took as f64 / 1e3
            ));
        } else if took > bound_ms {
            failures.push(format!(
                "{gname}: reached checkpoint {size} {:.1} s after it was signed (bound {:.1} s)",
                took as f64 / 1e3,
                bound_ms as f64 / 1e3
            ));
        }
    }
    println!(
        "catch-up: the slowest gateway served checkpoint {size} {:.2} s after it was signed (bound {:.1} s)",
        slowest as f64 / 1e3,
        bound_ms as f64 / 1e3
    );
    Row::new(name, stack.gateways.len() as u64, failures)
}

/// Polls the gateway at `url` every 20 ms until it has applied `size` entries and serves a
/// checkpoint at least that large signed no earlier than `time`, or until `give_up` (Unix
/// ms): whether it did, and what it served last.
async fn reach(stack: &Stack, url: &str, size: u64, time: u64, give_up: u64) -> (bool, String) {
    let group = format!("{url}/v1/group");
    let mut last = String::from("no answer");
    loop {
        if let Some((_, g)) = http::json::<GroupAnswer>(&stack.http, &group).await {
            let f = g.freshness;
            let cp = f.checkpoint.as_ref().map(|c| (c.size, c.time_unix_ms));
            if f.applied_seq >= size && cp.is_some_and(|(s, t)| s >= size && t >= time) {
                return (true, last);
            }
            last = format!(
                "applied {} checkpoint {cp:?} stale {}",
                f.applied_seq, f.stale
            );
        }
        if now_ms() > give_up {
            return (false, last);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
