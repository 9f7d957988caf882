//! The open loop: requests sent on a fixed schedule whatever the answers do, each timed from
//! the moment the schedule said to send it (wrk2's model; what `probe` runs).
//!
//! Request `i` is due at `start + i / rate`. A dedicated thread keeps the schedule with
//! `std::thread::sleep`, which wakes within tens of microseconds, where tokio's timer rounds
//! to the millisecond. Each due request then waits for one of `connections` slots (requests
//! in flight at most) and is sent; its latency runs from its due time to the end of the
//! answer's body. A stall of the server therefore counts against every request that fell due
//! during it, not only the one it held up (coordinated omission corrected by construction).
//!
//! At the end of the run's time, what is still waiting for a slot or in flight is cancelled
//! and counted apart (`cut_at_end`): the end of the run, not an answer of the service.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;

/// What to send, how fast and for how long.
#[derive(Debug, Clone)]
pub struct Plan {
    /// GET or POST.
    pub method: reqwest::Method,
    /// Request `i` goes to `urls[i % urls.len()]` (at least one).
    pub urls: Vec<String>,
    /// Request `i` carries `bodies[i % bodies.len()]`; none: no body.
    pub bodies: Vec<bytes::Bytes>,
    /// The `content-type` of the bodies.
    pub content_type: Option<&'static str>,
    /// Requests per second scheduled.
    pub rate: f64,
    /// How long requests are scheduled for.
    pub duration: Duration,
    /// Requests in flight at most.
    pub connections: usize,
    /// A request without its whole answer after this long is an error, not a latency.
    pub timeout: Duration,
}

/// What came back.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Seconds of schedule.
    pub seconds: f64,
    /// Requests answered (any status): each one's latency from its due time, ms, sorted.
    pub latencies_ms: Vec<f64>,
    /// Answers by status code.
    pub status_codes: BTreeMap<u16, u64>,
    /// Requests without an answer, by kind (`timeout`, `connect`, `body`, `request`).
    pub errors: BTreeMap<String, u64>,
    /// Requests due before the end that were still waiting for a slot or in flight at the
    /// end: cancelled, counted neither as answers nor as errors.
    pub cut_at_end: u64,
}

impl Outcome {
    /// Requests answered.
    pub fn answered(&self) -> u64 {
        self.latencies_ms.len() as u64
    }

    /// The latency at quantile `q` (0 < q ≤ 1) by nearest rank, ms; 0 with no answer.
    pub fn quantile_ms(&self, q: f64) -> f64 {
        nearest_rank(&self.latencies_ms, q)
    }
}

/// The nearest-rank quantile of sorted values: the smallest value with at least `q` of the
/// values at or below it.
fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Why a request got no answer, in one word.
fn error_kind(e: &reqwest::Error) -> &'static str {
    if e.is_timeout() {
        "timeout"
    } else if e.is_connect() {
        "connect"
    } else if e.is_body() || e.is_decode() {
        "body"
    } else {
        "request"
    }
}

/// Runs the plan. Errors only for a plan that cannot run (no URL or one that does not parse,
/// no rate, no slot).
pub async fn run(plan: &Plan) -> Result<Outcome, String> {
    if plan.urls.is_empty() || !(plan.rate > 0.0 && plan.rate.is_finite()) {
        return Err("an open loop needs a URL and a positive rate".into());
    }
    if plan.connections == 0 || plan.duration.is_zero() {
        return Err("an open loop needs a connection and a duration".into());
    }
    // Parsed once, here: a bad URL is the plan's error, not thousands of failed requests.
    let urls = plan
        .urls
        .iter()
        .map(|u| reqwest::Url::parse(u).map_err(|e| format!("{u}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(plan.connections)
        .timeout(plan.timeout)
        .build()
        .map_err(|e| format!("HTTP client: {e}"))?;
    let due_total = (plan.rate * plan.duration.as_secs_f64()).floor() as u64;
    // A few milliseconds for the thread to start, so request 0 is not late by construction.
    let start = Instant::now() + Duration::from_millis(20);
    let end = start + plan.duration;
    let end_tokio = tokio::time::Instant::from_std(end);

    // The schedule's thread ends at its last request, or at its next one once `rx` is dropped.
    let (tx, mut rx) = mpsc::unbounded_channel::<(u64, Instant)>();
    let scheduler = {
        let rate = plan.rate;
        std::thread::Builder::new()
            .name("open-loop-schedule".into())
            .spawn(move || {
                for i in 0..due_total {
                    let due = start + Duration::from_secs_f64(i as f64 / rate);
                    let now = Instant::now();
                    if due > now {
                        std::thread::sleep(due - now);
                    }
                    if tx.send((i, due)).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| format!("the schedule's thread: {e}"))?
    };

    let slots = Arc::new(Semaphore::new(plan.connections));
    let mut in_flight = JoinSet::new();
    let mut out = Outcome {
        seconds: plan.duration.as_secs_f64(),
        ..Outcome::default()
    };
    let mut sent = 0u64;
    loop {
        let next = tokio::select! {
            m = rx.recv() => m,
            () = tokio::time::sleep_until(end_tokio) => None,
        };
        let Some((i, due)) = next else { break };
        // The wait for a slot is part of the latency: its clock started at `due`.
        let slot = tokio::select! {
            s = slots.clone().acquire_owned() => s.map_err(|e| e.to_string())?,
            () = tokio::time::sleep_until(end_tokio) => break,
        };
        let url = urls[(i % urls.len() as u64) as usize].clone();
        let mut req = client.request(plan.method.clone(), url);
        if !plan.bodies.is_empty() {
            req = req.body(plan.bodies[(i % plan.bodies.len() as u64) as usize].clone());
        }
        if let Some(ct) = plan.content_type {
            req = req.header(reqwest::header::CONTENT_TYPE, ct);
        }
        sent += 1;
        in_flight.spawn(async move {
            let _slot = slot;
            let answer = tokio::time::timeout_at(end_tokio, async {
                let resp = req.send().await?;
                let status = resp.status().as_u16();
                resp.bytes().await?;
                Ok::<u16, reqwest::Error>(status)
            })
            .await;
            (answer, due.elapsed())
        });
    }
    drop(rx);
    scheduler
        .join()
        .map_err(|_| "the schedule's thread panicked".to_string())?;
    // Every request of the schedule is due before the end: those never sent are cut, like
    // those in flight at the end.
    out.cut_at_end = due_total.saturating_sub(sent);
    while let Some(done) = in_flight.join_next().await {
        let (answer, latency) = done.map_err(|e| format!("a request's task: {e}"))?;
        match answer {
            Err(_elapsed) => out.cut_at_end += 1,
            Ok(Ok(status)) => {
                *out.status_codes.entry(status).or_default() += 1;
                out.latencies_ms.push(latency.as_secs_f64() * 1e3);
            }
            Ok(Err(e)) => *out.errors.entry(error_kind(&e).to_owned()).or_default() += 1,
        }
    }
    out.latencies_ms.sort_by(f64::total_cmp);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// A minimal HTTP/1.1 server on loopback: `answer(n)` for the n-th request (from 0)
    /// gives its status and how long to hold it first.
    async fn server(answer: fn(u64, Duration) -> (u16, Duration)) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let t0 = Instant::now();
        let count = Arc::new(AtomicU64::new(0));
        tokio::spawn(async move {
            loop {
                let (mut sock, _) = listener.accept().await.unwrap();
                let count = count.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    loop {
                        // One request: headers (no body in these tests).
                        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                            match sock.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        }
                        let at = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
                        buf.drain(..at + 4);
                        let n = count.fetch_add(1, Ordering::SeqCst);
                        let (status, hold) = answer(n, t0.elapsed());
                        tokio::time::sleep(hold).await;
                        let head = format!("HTTP/1.1 {status} X\r\ncontent-length: 2\r\n\r\nok");
                        if sock.write_all(head.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        format!("http://{addr}/")
    }

    fn plan(url: String, rate: f64, secs: f64, connections: usize) -> Plan {
        Plan {
            method: reqwest::Method::GET,
            urls: vec![url],
            bodies: Vec::new(),
            content_type: None,
            rate,
            duration: Duration::from_secs_f64(secs),
            connections,
            timeout: Duration::from_secs(5),
        }
    }

    #[test]
    fn nearest_rank_quantiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(nearest_rank(&v, 0.5), 50.0);
        assert_eq!(nearest_rank(&v, 0.99), 99.0);
        assert_eq!(nearest_rank(&v, 0.999), 100.0);
        assert_eq!(nearest_rank(&v, 1.0), 100.0);
        assert_eq!(nearest_rank(&[7.0], 0.5), 7.0);
        assert_eq!(nearest_rank(&[], 0.5), 0.0);
    }

    /// The server stalls for 200 ms once, a third of a second in. On one connection, every
    /// request that fell due during the stall waits for it, and the latencies say so: about
    /// 40 requests over 50 ms, the slowest near 200 ms. (Timed from the send instead, one
    /// request would show the stall and the 99th percentile would not.)
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stall_is_charged_to_every_request_due_during_it() {
        let url = server(|_, at| {
            let (from, to) = (Duration::from_millis(300), Duration::from_millis(500));
            let hold = if at >= from && at < to {
                to - at
            } else {
                Duration::ZERO
            };
            (200, hold)
        })
        .await;
        let out = run(&plan(url, 200.0, 1.0, 1)).await.unwrap();
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        let answered = out.answered() + out.cut_at_end;
        assert!((190..=200).contains(&answered), "{answered} of 200 due");
        let over_50ms = out.latencies_ms.iter().filter(|&&l| l > 50.0).count();
        assert!(
            (20..=60).contains(&over_50ms),
            "{over_50ms} requests over 50 ms: {:?}",
            &out.latencies_ms[out.latencies_ms.len().saturating_sub(50)..]
        );
        let max = out.quantile_ms(1.0);
        assert!((150.0..450.0).contains(&max), "slowest {max} ms");
        assert!(
            out.quantile_ms(0.9) > 20.0,
            "p90 {} ms",
            out.quantile_ms(0.9)
        );
        assert!(
            out.quantile_ms(0.5) < 20.0,
            "p50 {} ms",
            out.quantile_ms(0.5)
        );
    }

    /// Statuses are counted as they come; a refused connection is an error, not an answer;
    /// a server that never answers leaves its requests cut at the end.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn statuses_errors_and_the_end_of_the_run() {
        let url = server(|n, _| (if n % 2 == 0 { 200 } else { 503 }, Duration::ZERO)).await;
        let out = run(&plan(url, 100.0, 0.5, 4)).await.unwrap();
        let (ok, unavailable) = (out.status_codes[&200], out.status_codes[&503]);
        assert!(
            ok.abs_diff(unavailable) <= 1 && ok + unavailable >= 45,
            "{out:?}"
        );

        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let out = run(&plan(format!("http://{closed}/"), 50.0, 0.3, 2))
            .await
            .unwrap();
        assert_eq!(out.answered(), 0);
        assert!(
            out.errors.get("connect").copied().unwrap_or(0) >= 10,
            "{out:?}"
        );

        let url = server(|_, _| (200, Duration::from_secs(30))).await;
        let out = run(&plan(url, 50.0, 0.4, 3)).await.unwrap();
        assert_eq!(out.answered(), 0, "{out:?}");
        assert!(out.errors.is_empty(), "{out:?}");
        assert!((18..=20).contains(&out.cut_at_end), "{out:?}");
    }

    #[tokio::test]
    async fn a_plan_that_cannot_run_is_refused() {
        let mut p = plan("http://127.0.0.1:9/".into(), 0.0, 1.0, 1);
        assert!(run(&p).await.is_err());
        p.rate = 10.0;
        p.connections = 0;
        assert!(run(&p).await.is_err());
        p.connections = 1;
        p.urls = vec!["not a url".into()];
        assert!(run(&p).await.unwrap_err().contains("not a url"));
    }
}
