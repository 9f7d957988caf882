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
//! At the end of the run's time (plus the plan's `drain`, during which requests already due
//! are still sent and awaited), what is still waiting for a slot or in flight is cancelled
//! and counted apart (`cut_at_end`, with each one's age at the cut in `cut_ms`): the end of
//! the run, not an answer of the service. With a drain, a quantile that the cut requests may
//! move is reported as a lower bound ([`Outcome::quantile_bounded_ms`]).
//!
//! Answers can be checked: with `expect`, an answer 200 whose body does not contain the
//! request's expected bytes is counted as `wrong`.

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
    /// After `duration`, how long requests already due are still sent and awaited before
    /// the rest are cut (zero: cut at the end of `duration`).
    pub drain: Duration,
    /// Request `i`'s answer, when 200, must contain `expect[i % expect.len()]` (none: not
    /// checked).
    pub expect: Vec<bytes::Bytes>,
    /// A new connection for every request (no keep-alive), as a client that arrives, asks
    /// once and leaves: every request then goes through the server's accept (and TLS
    /// handshake).
    pub new_connection_each: bool,
    /// PEM certificates to trust for `https://` URLs instead of the system's roots.
    pub root_ca_pem: Option<Vec<u8>>,
}

impl Plan {
    /// A plan with no drain, no answer check, kept-alive connections and the system's roots.
    pub fn new(
        method: reqwest::Method,
        urls: Vec<String>,
        rate: f64,
        duration: Duration,
        connections: usize,
    ) -> Plan {
        Plan {
            method,
            urls,
            bodies: Vec::new(),
            content_type: None,
            rate,
            duration,
            connections,
            timeout: Duration::from_secs(30),
            drain: Duration::ZERO,
            expect: Vec::new(),
            new_connection_each: false,
            root_ca_pem: None,
        }
    }
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
    /// Answers 200 whose body lacked what the plan's `expect` says (also in `latencies_ms`
    /// and `status_codes`).
    pub wrong: u64,
    /// Requests without an answer, by kind (`timeout`, `connect`, `body`, `request`).
    pub errors: BTreeMap<String, u64>,
    /// Requests due before the end that were still waiting for a slot or in flight at the
    /// end (after the drain): cancelled, counted neither as answers nor as errors.
    pub cut_at_end: u64,
    /// The cut requests' ages at the cut (from their due time), ms, sorted: each a lower
    /// bound of the latency it would have had.
    pub cut_ms: Vec<f64>,
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

    /// The latency at quantile `q` over the answered and the cut requests together, a cut
    /// one counted at its age at the cut; and whether that is exact. It is never above the
    /// true quantile (a cut request's latency is at least its age), and it is exact when no
    /// cut request is younger than it (lengthening those cannot move it). Without a cut
    /// request it is [`quantile_ms`](Self::quantile_ms).
    pub fn quantile_bounded_ms(&self, q: f64) -> (f64, bool) {
        if self.cut_ms.is_empty() {
            return (self.quantile_ms(q), true);
        }
        let mut all = [&self.latencies_ms[..], &self.cut_ms[..]].concat();
        all.sort_by(f64::total_cmp);
        let v = nearest_rank(&all, q);
        (v, self.cut_ms.iter().all(|&c| c >= v))
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
    let mut builder = reqwest::Client::builder()
        .pool_max_idle_per_host(if plan.new_connection_each {
            0
        } else {
            plan.connections
        })
        .timeout(plan.timeout);
    if let Some(pem) = &plan.root_ca_pem {
        let certs = reqwest::Certificate::from_pem_bundle(pem)
            .map_err(|e| format!("the CA certificates: {e}"))?;
        builder = builder.tls_certs_only(certs);
    }
    let client = builder.build().map_err(|e| format!("HTTP client: {e}"))?;
    let due_total = (plan.rate * plan.duration.as_secs_f64()).floor() as u64;
    // A few milliseconds for the thread to start, so request 0 is not late by construction.
    let start = Instant::now() + Duration::from_millis(20);
    let end = start + plan.duration;
    // Where requests stop being sent and awaited: the end, or the end of the drain.
    let cut = end + plan.drain;
    let cut_tokio = tokio::time::Instant::from_std(cut);

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
            () = tokio::time::sleep_until(cut_tokio) => None,
        };
        let Some((i, due)) = next else { break };
        // The wait for a slot is part of the latency: its clock started at `due`.
        let slot = tokio::select! {
            s = slots.clone().acquire_owned() => s.map_err(|e| e.to_string())?,
            () = tokio::time::sleep_until(cut_tokio) => break,
        };
        let url = urls[(i % urls.len() as u64) as usize].clone();
        let mut req = client.request(plan.method.clone(), url);
        if !plan.bodies.is_empty() {
            req = req.body(plan.bodies[(i % plan.bodies.len() as u64) as usize].clone());
        }
        if let Some(ct) = plan.content_type {
            req = req.header(reqwest::header::CONTENT_TYPE, ct);
        }
        let expect = (!plan.expect.is_empty())
            .then(|| plan.expect[(i % plan.expect.len() as u64) as usize].clone());
        sent += 1;
        in_flight.spawn(async move {
            let _slot = slot;
            let answer = tokio::time::timeout_at(cut_tokio, async {
                let resp = req.send().await?;
                let status = resp.status().as_u16();
                let body = resp.bytes().await?;
                let right = status != 200 || expect.is_none_or(|e| contains(&body, &e));
                Ok::<(u16, bool), reqwest::Error>((status, right))
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
    // those in flight at the end. They are sent in order, so the unsent are the last ones.
    let cut_at = Instant::now().max(cut);
    for i in sent..due_total {
        let due = start + Duration::from_secs_f64(i as f64 / plan.rate);
        out.cut_ms
            .push(cut_at.saturating_duration_since(due).as_secs_f64() * 1e3);
    }
    while let Some(done) = in_flight.join_next().await {
        let (answer, latency) = done.map_err(|e| format!("a request's task: {e}"))?;
        match answer {
            Err(_elapsed) => out.cut_ms.push(latency.as_secs_f64() * 1e3),
            Ok(Ok((status, right))) => {
                *out.status_codes.entry(status).or_default() += 1;
                out.wrong += u64::from(!right);
                out.latencies_ms.push(latency.as_secs_f64() * 1e3);
            }
            Ok(Err(e)) => *out.errors.entry(error_kind(&e).to_owned()).or_default() += 1,
        }
    }
    out.cut_at_end = out.cut_ms.len() as u64;
    out.latencies_ms.sort_by(f64::total_cmp);
    out.cut_ms.sort_by(f64::total_cmp);
    Ok(out)
}

/// Whether `needle` occurs in `haystack`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
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
        counted_server(answer).await.0
    }

    /// [`server`], and the count of connections it accepted.
    async fn counted_server(
        answer: fn(u64, Duration) -> (u16, Duration),
    ) -> (String, Arc<AtomicU64>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let t0 = Instant::now();
        let count = Arc::new(AtomicU64::new(0));
        let accepted = Arc::new(AtomicU64::new(0));
        let accepts = accepted.clone();
        tokio::spawn(async move {
            loop {
                let (mut sock, _) = listener.accept().await.unwrap();
                accepts.fetch_add(1, Ordering::SeqCst);
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
        (format!("http://{addr}/"), accepted)
    }

    fn plan(url: String, rate: f64, secs: f64, connections: usize) -> Plan {
        Plan {
            timeout: Duration::from_secs(5),
            ..Plan::new(
                reqwest::Method::GET,
                vec![url],
                rate,
                Duration::from_secs_f64(secs),
                connections,
            )
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

    /// An answer 200 without the expected bytes is wrong; one of another status is not
    /// checked (its status says it).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn answers_without_the_expected_bytes_are_wrong() {
        let url = server(|n, _| (if n % 4 == 3 { 503 } else { 200 }, Duration::ZERO)).await;
        let mut p = plan(url, 100.0, 0.4, 1);
        // The server's body is "ok": every other request expects something else.
        p.expect = vec![
            bytes::Bytes::from_static(b"ok"),
            bytes::Bytes::from_static(b"no"),
        ];
        let out = run(&p).await.unwrap();
        let answered = out.answered();
        assert!(answered >= 36, "{out:?}");
        // Requests 1, 5, 9 ... expect "no" and get 200 "ok"; 3, 7 ... get 503 and are not
        // checked.
        let expect_wrong = answered.div_ceil(4);
        assert!(out.wrong.abs_diff(expect_wrong) <= 1, "{out:?}");
        assert_eq!(out.status_codes[&503], answered / 4, "{out:?}");
    }

    /// With a drain, answers that come after the end are still measured; without one they
    /// are cut, each with its age, and a quantile they reach is a lower bound.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_drain_measures_late_answers_and_bounds_the_cut() {
        let url = server(|_, _| (200, Duration::from_millis(300))).await;
        let mut p = plan(url, 50.0, 0.2, 20);
        p.drain = Duration::from_secs(3);
        let out = run(&p).await.unwrap();
        assert_eq!((out.answered(), out.cut_at_end), (10, 0), "{out:?}");
        assert!(out.quantile_ms(0.5) >= 300.0, "{out:?}");
        assert_eq!(out.quantile_bounded_ms(0.99), (out.quantile_ms(0.99), true));

        let url = server(|_, _| (200, Duration::from_secs(30))).await;
        let mut p = plan(url, 50.0, 0.2, 4);
        p.drain = Duration::from_millis(200);
        let out = run(&p).await.unwrap();
        assert_eq!((out.answered(), out.cut_at_end), (0, 10), "{out:?}");
        // Every cut request was due at least the drain before the cut.
        assert!(out.cut_ms.iter().all(|&c| c >= 199.0), "{out:?}");
        assert!(out.cut_ms.windows(2).all(|w| w[0] <= w[1]), "{out:?}");
        let (p99, exact) = out.quantile_bounded_ms(0.99);
        assert!(p99 >= 390.0 && !exact, "{p99} {exact} {out:?}");
        let (p0, exact) = out.quantile_bounded_ms(0.01);
        assert!(exact && p0 == out.cut_ms[0], "{p0} {exact}");
    }

    /// `new_connection_each`: one connection per request; otherwise they are kept alive.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_new_connection_for_every_request_when_asked() {
        let (url, accepted) = counted_server(|_, _| (200, Duration::ZERO)).await;
        let mut p = plan(url.clone(), 100.0, 0.3, 1);
        p.new_connection_each = true;
        let out = run(&p).await.unwrap();
        let n = accepted.load(Ordering::SeqCst);
        // A request cut at the end may have had its connection accepted.
        assert!(out.answered() >= 25, "{out:?}");
        assert!(
            (out.answered()..=out.answered() + out.cut_at_end).contains(&n),
            "{n} connections for {out:?}"
        );

        let (url, accepted) = counted_server(|_, _| (200, Duration::ZERO)).await;
        let out = run(&plan(url, 100.0, 0.3, 1)).await.unwrap();
        assert!(out.answered() >= 25, "{out:?}");
        assert_eq!(accepted.load(Ordering::SeqCst), 1, "{out:?}");
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
