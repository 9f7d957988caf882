//! Where the checks put what they find while the log is replayed.

use std::collections::BTreeMap;

use super::violation::{Skipped, Violation, ViolationKind, Warning, WarningKind};

/// Violations, warnings and skip counts, in the order they were found.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    pub(crate) violations: Vec<Violation>,
    pub(crate) warnings: Vec<Warning>,
    pub(crate) skipped: BTreeMap<Skipped, u64>,
}

impl Findings {
    /// Records a violation at `seq`; returns its index.
    pub(crate) fn violation(
        &mut self,
        seq: u64,
        kind: ViolationKind,
        detail: impl Into<String>,
    ) -> usize {
        self.violations.push(Violation {
            seq,
            kind,
            detail: detail.into(),
        });
        self.violations.len() - 1
    }

    /// Records a warning.
    pub(crate) fn warn(&mut self, seq: Option<u64>, kind: WarningKind, detail: impl Into<String>) {
        self.warnings.push(Warning {
            seq,
            kind,
            detail: detail.into(),
        });
    }

    /// Counts one check not made.
    pub(crate) fn skip(&mut self, what: Skipped) {
        *self.skipped.entry(what).or_default() += 1;
    }
}
