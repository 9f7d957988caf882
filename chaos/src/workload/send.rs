//! How a client's write is sent: patiently, timing out and retried with the same key, or
//! dropped right after sending (sometimes retried later); acknowledged writes are read as
//! their answer type and now and then sent again to check the answer is repeated.

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::Value;

use super::answer::Answer;
use super::api::Sent;
use super::Workload;
use crate::rng::Rng;

/// The first attempt's timeout of a patient write.
pub(super) const PATIENT: Duration = Duration::from_secs(10);

/// How a write is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    /// Waits for the answer, retrying on failures.
    Patient,
    /// First attempt times out after 1-30 ms, then retries with the same key.
    TimeoutRetry,
    /// Sent on a raw socket closed 0-2 ms after sending; sometimes retried later with the
    /// same key.
    Disconnect,
}

impl Mode {
    /// A mode drawn at random: six patient writes in ten, two timing out, two dropped.
    pub(super) fn draw(rng: &mut Rng) -> Mode {
        [Mode::Patient, Mode::TimeoutRetry, Mode::Disconnect][rng.weighted(&[6, 2, 2])]
    }
}

impl Workload {
    /// Sends a write in `mode`, then reads its answer as `T`; `replay` of the time sends it
    /// again with the same key (a client that lost the answer) and checks the second answer.
    /// `Some` when acknowledged with a `T`.
    pub(super) async fn send<T: Answer>(
        &self,
        rng: &mut Rng,
        mode: Mode,
        path: &str,
        body: Option<&Value>,
        key: &str,
        replay: f64,
    ) -> Option<T> {
        let first_timeout = match mode {
            Mode::Patient => PATIENT,
            Mode::TimeoutRetry => Duration::from_millis(rng.range(1, 30)),
            Mode::Disconnect => {
                self.ledger
                    .stats
                    .disconnects
                    .fetch_add(1, Ordering::Relaxed);
                let linger = Duration::from_micros(rng.below(2000));
                self.drop_after_send(path, body, key, Duration::ZERO, linger)
                    .await;
                if !rng.chance(0.5) {
                    return None;
                }
                // The impatient client tries again a little later, with the same key.
                tokio::time::sleep(Duration::from_millis(rng.range(0, 300))).await;
                PATIENT
            }
        };
        let answer: T =
            serde_json::from_slice(&self.deliver(path, body, key, first_timeout).await?).ok()?;
        if rng.chance(replay) {
            self.replay::<T>(path, body, key, &answer.summary()).await;
        }
        Some(answer)
    }

    /// One logical write through [`Api::write`], counted; the body when acknowledged.
    pub(super) async fn deliver(
        &self,
        path: &str,
        body: Option<&Value>,
        key: &str,
        first_timeout: Duration,
    ) -> Option<Vec<u8>> {
        let stats = &self.ledger.stats;
        stats.writes.fetch_add(1, Ordering::Relaxed);
        let sent = self
            .api
            .write(stats, path, body, key, first_timeout, &self.stop)
            .await;
        match sent {
            Sent::Acked(b) => {
                stats.acked.fetch_add(1, Ordering::Relaxed);
                Some(b)
            }
            Sent::Refused(status, body) => {
                stats.refused.fetch_add(1, Ordering::Relaxed);
                // The same key and request again must never be taken for another request.
                if status == 422 && body.contains("dempotency") {
                    self.ledger.replay_mismatches.lock().unwrap().push(format!(
                        "{path} key {key}: a retry of the same request was refused: {body}"
                    ));
                }
                None
            }
            Sent::Abandoned(_) => {
                stats.abandoned.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// [`Raw::send_and_drop`] on a blocking thread, after `delay` (slept there: tokio's
    /// timers have a resolution of 1 ms).
    pub(super) async fn drop_after_send(
        &self,
        path: &str,
        body: Option<&Value>,
        key: &str,
        delay: Duration,
        linger: Duration,
    ) {
        let raw = self.api.raw.clone();
        let (path, body, key) = (path.to_owned(), body.cloned(), key.to_owned());
        let _ = tokio::task::spawn_blocking(move || {
            if !delay.is_zero() {
                std::thread::sleep(delay);
            }
            raw.send_and_drop(&path, body.as_ref(), &key, linger)
        })
        .await;
    }

    /// Sends an acknowledged write again with the same key (a client that lost the
    /// answer): the answer must be the first one.
    async fn replay<T: Answer>(&self, path: &str, body: Option<&Value>, key: &str, first: &str) {
        let stats = &self.ledger.stats;
        stats.replays.fetch_add(1, Ordering::Relaxed);
        if let Sent::Acked(b) = self
            .api
            .write(stats, path, body, key, PATIENT, &self.stop)
            .await
        {
            let second = serde_json::from_slice::<T>(&b).map_or_else(
                |e| format!("an answer that does not parse ({e})"),
                |a| a.summary(),
            );
            if second != first {
                self.ledger
                    .replay_mismatches
                    .lock()
                    .unwrap()
                    .push(format!("{path} key {key}: first {first}, then {second}"));
            }
        }
    }
}
