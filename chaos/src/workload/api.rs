//! The registry's admin API as the clients use it: through reqwest, retried with the same
//! `Idempotency-Key` until answered, or written on a raw socket that is closed without
//! reading the answer.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::ledger::Stats;

/// How long a write is retried before it is given up.
const PATIENCE: Duration = Duration::from_secs(30);

/// The admin API, through reqwest (patient and timing-out clients) or a raw socket
/// (disconnecting clients).
pub struct Api {
    http: reqwest::Client,
    /// `http://127.0.0.1:port`
    base: String,
    /// The same registry, for the disconnecting clients.
    pub raw: Raw,
}

/// The registry's address and token, for requests on a raw socket.
#[derive(Clone)]
pub struct Raw {
    addr: SocketAddr,
    token: String,
}

/// The outcome of a logical write (all its attempts).
pub enum Sent {
    /// 2xx, the body.
    Acked(Vec<u8>),
    /// 4xx: refused for good (status, body).
    Refused(u16, String),
    /// No 2xx before the deadline, or the run is stopping.
    Abandoned(String),
}

impl Api {
    /// A client of the registry at `base`.
    pub fn new(http: reqwest::Client, base: &str, token: &str) -> Result<Self, String> {
        let addr = base
            .trim_start_matches("http://")
            .parse()
            .map_err(|e| format!("{base}: {e}"))?;
        Ok(Api {
            http,
            base: base.into(),
            raw: Raw {
                addr,
                token: token.into(),
            },
        })
    }

    async fn attempt(
        &self,
        path: &str,
        body: Option<&Value>,
        key: &str,
        timeout: Duration,
    ) -> Result<(u16, Vec<u8>), String> {
        let mut req = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.raw.token)
            .header("Idempotency-Key", key)
            .timeout(timeout);
        if let Some(b) = body {
            req = req.json(b);
        }
        let r = req.send().await.map_err(|e| e.to_string())?;
        let status = r.status().as_u16();
        let bytes = r.bytes().await.map_err(|e| e.to_string())?;
        Ok((status, bytes.to_vec()))
    }

    /// Sends a write until it is answered 2xx or refused with a 4xx, retrying with the same
    /// key after timeouts, connection errors and 5xx (the registry restarting or halted).
    /// The first attempt gets `first_timeout`; later ones 10 s. Gives up 30 s after the
    /// start, or soon after `stop` is set.
    pub async fn write(
        &self,
        stats: &Stats,
        path: &str,
        body: Option<&Value>,
        key: &str,
        first_timeout: Duration,
        stop: &AtomicBool,
    ) -> Sent {
        let started = Instant::now();
        let mut timeout = first_timeout;
        let mut backoff = Duration::from_millis(50);
        let mut last;
        loop {
            match self.attempt(path, body, key, timeout).await {
                Ok((s, b)) if (200..300).contains(&s) => return Sent::Acked(b),
                Ok((s, b)) if (400..500).contains(&s) && s != 408 && s != 429 => {
                    return Sent::Refused(s, String::from_utf8_lossy(&b).into_owned())
                }
                Ok((s, b)) => last = format!("{s}: {}", String::from_utf8_lossy(&b)),
                Err(e) => last = e,
            }
            if started.elapsed() > PATIENCE || stop.load(Ordering::Relaxed) {
                return Sent::Abandoned(last);
            }
            stats.retries.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_millis(800));
            timeout = Duration::from_secs(10);
        }
    }
}

impl Raw {
    /// Sends a write on a fresh connection and closes it `linger` after the last byte,
    /// without reading anything (a client timeout, a proxy abort, Ctrl-C).
    pub fn send_and_drop(
        &self,
        path: &str,
        body: Option<&Value>,
        key: &str,
        linger: Duration,
    ) -> std::io::Result<()> {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nIdempotency-Key: {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.addr,
            self.token,
            body.len()
        );
        let mut s = TcpStream::connect_timeout(&self.addr, Duration::from_secs(2))?;
        s.set_nodelay(true)?;
        s.write_all(request.as_bytes())?;
        if !linger.is_zero() {
            std::thread::sleep(linger);
        }
        drop(s);
        Ok(())
    }
}
