//! Where the log comes from: an export file (JSON Lines, one entry per line, as
//! `operator log export` writes it) or a registry's feed, paged. Both stream: the auditor
//! never holds more than a page.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use dgsp_wire::feed::Entries;
use dgsp_wire::log::Entry;
use indicatif::ProgressBar;
use tokio::sync::mpsc;

use super::auditor::Auditor;
use crate::client::Client;
use crate::error::Error;

/// Entries asked for per request (the registry's largest page is larger).
pub const PAGE: usize = 1000;

/// Feeds every entry of the JSON Lines file at `path` to `auditor`. Blank lines are
/// skipped; a line that is not an entry is an error naming the file and line. `bar` counts
/// bytes read.
pub fn read_file(auditor: &mut Auditor, path: &Path, bar: &ProgressBar) -> Result<(), Error> {
    let io = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    if let Ok(meta) = file.metadata() {
        bar.set_length(meta.len());
    }
    read_lines(auditor, path, BufReader::new(file), bar)
}

/// Feeds every entry of the JSON Lines read from `reader` (the file at `path`) to
/// `auditor`, as [`read_file`] does.
pub fn read_lines(
    auditor: &mut Auditor,
    path: &Path,
    mut reader: impl BufRead,
    bar: &ProgressBar,
) -> Result<(), Error> {
    let io = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    let mut line = String::new();
    let mut number = 0u64;
    loop {
        line.clear();
        let read = reader.read_line(&mut line).map_err(io)?;
        if read == 0 {
            return Ok(());
        }
        number += 1;
        bar.inc(read as u64);
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        let entry: Entry = serde_json::from_str(text).map_err(|e| Error::Input {
            what: format!("{}, line {number}", path.display()),
            reason: format!("not a log entry: {e}"),
        })?;
        auditor.push(&entry);
    }
}

/// Pages through the registry's feed from entry 1 to its head (as it grows while read),
/// sending each page to `pages`. Stops early, without error, when the receiver is gone.
pub async fn fetch_registry(
    client: &Client,
    base: &str,
    pages: mpsc::Sender<Vec<Entry>>,
    bar: &ProgressBar,
) -> Result<(), Error> {
    let mut after = 0u64;
    loop {
        let page: Entries = client
            .get_json(
                "/v1/log/entries",
                &[("after", after.to_string()), ("limit", PAGE.to_string())],
            )
            .await?;
        bar.set_length(page.head_seq);
        let Some(last) = page.entries.last().map(|e| e.seq) else {
            return Ok(());
        };
        if last <= after {
            return Err(Error::Input {
                what: base.to_owned(),
                reason: format!(
                    "asked for entries after {after}, the registry answered up to entry {last}"
                ),
            });
        }
        after = last;
        let done = after >= page.head_seq;
        if pages.send(page.entries).await.is_err() || done {
            return Ok(());
        }
    }
}
