//! What the commands print: human text by default, one JSON document with `--json`, and
//! progress bars (stderr, only on a terminal and never with `--json`).

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

/// How to print.
#[derive(Clone, Copy, Debug)]
pub struct Output {
    /// print JSON instead of text
    pub json: bool,
}

impl Output {
    /// Prints the result: `value` as JSON, or `human` as text.
    pub fn emit<T: Serialize>(&self, value: &T, human: impl FnOnce() -> String) {
        if self.json {
            println!(
                "{}",
                serde_json::to_string_pretty(value).expect("results serialize")
            );
        } else {
            let text = human();
            if !text.is_empty() {
                println!("{}", text.trim_end());
            }
        }
    }

    /// A note for people (stderr; suppressed with `--json`).
    pub fn note(&self, text: impl AsRef<str>) {
        if !self.json {
            eprintln!("{}", text.as_ref());
        }
    }

    /// A warning (stderr, also with `--json`, where it is one JSON line
    /// `{"warning": {"kind", "message"}}`): something the user should change.
    pub fn warn(&self, kind: &str, text: impl AsRef<str>) {
        if self.json {
            eprintln!(
                "{}",
                serde_json::json!({"warning": {"kind": kind, "message": text.as_ref()}})
            );
        } else {
            eprintln!("warning: {}", text.as_ref());
        }
    }

    /// A progress bar over `len` steps; hidden with `--json` or when stderr is not a terminal.
    pub fn progress(&self, len: u64, what: &str) -> ProgressBar {
        let bar = ProgressBar::with_draw_target(Some(len), self.target());
        bar.set_style(
            ProgressStyle::with_template(
                "{msg} [{elapsed_precise}] {wide_bar} {pos}/{len} ({per_sec}, eta {eta})",
            )
            .expect("valid template"),
        );
        bar.set_message(what.to_owned());
        bar
    }

    /// A spinner for work of unknown length.
    pub fn spinner(&self, what: &str) -> ProgressBar {
        let bar = ProgressBar::with_draw_target(None, self.target());
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} [{elapsed}]").expect("valid template"),
        );
        bar.set_message(what.to_owned());
        bar.enable_steady_tick(Duration::from_millis(120));
        bar
    }

    fn target(&self) -> ProgressDrawTarget {
        if self.json {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        }
    }
}
