//! The suite's own copy of the log, followed during the run (every few seconds and just
//! before each stop of the registry), so that the checks still have the log when the
//! registry no longer starts, and so that a log that loses or changes entries across a
//! crash is seen.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use dgsp_wire::feed::Entries;
use dgsp_wire::log::Entry;

use crate::http;
use crate::report::Row;

/// The log as read so far, and what was wrong with the reads.
#[derive(Default)]
pub struct LogCopy {
    entries: tokio::sync::Mutex<Vec<Entry>>,
    /// Rollbacks and forks seen.
    problems: Mutex<Vec<String>>,
    /// Successful reads.
    syncs: AtomicU64,
}

impl LogCopy {
    /// Reads what the registry appended since the last read (with the admin token: private
    /// parts included). Fails when the registry does not answer.
    pub async fn sync(
        &self,
        http: &reqwest::Client,
        registry: &str,
        token: &str,
    ) -> Result<(), String> {
        let mut entries = self.entries.lock().await;
        loop {
            let after = entries.last().map_or(0, |e| e.seq);
            let url = format!("{registry}/v1/log/entries?after={after}&limit=1000");
            let page: Entries = http::read(http, &url, Some(token)).await?;
            if page.head_seq < after {
                self.problem(format!(
                    "the registry's log went back from {after} entries to {}",
                    page.head_seq
                ));
                return Ok(());
            }
            if let (Some(last), Some(first)) = (entries.last(), page.entries.first()) {
                if first.seq != last.seq + 1 || first.prev_hash != last.hash {
                    self.problem(format!(
                        "entry {} does not follow entry {} as read before (seq or prev_hash differs): \
                         the log changed",
                        first.seq, last.seq
                    ));
                    return Ok(());
                }
            }
            let done = page.entries.is_empty()
                || page.entries.last().map(|e| e.seq) >= Some(page.head_seq);
            entries.extend(page.entries);
            if done {
                break;
            }
        }
        self.syncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Records what was wrong with a read (each once).
    fn problem(&self, p: String) {
        let mut problems = self.problems.lock().unwrap();
        if !problems.contains(&p) {
            problems.push(p);
        }
    }

    /// The entries read so far.
    pub async fn entries(&self) -> Vec<Entry> {
        self.entries.lock().await.clone()
    }

    /// The row of the invariant the reads check.
    pub fn row(&self) -> Row {
        Row::new(
            "the log only grows, across crashes too",
            self.syncs.load(Ordering::Relaxed),
            self.problems.lock().unwrap().clone(),
        )
    }
}
