//! The table printed at the end: one row per invariant, how many cases were checked and how
//! many failed, then the first failures of each row in words.

/// One invariant's result.
pub struct Row {
    /// What must hold.
    pub name: String,
    /// Cases checked.
    pub checked: u64,
    /// The cases that failed, in words.
    pub failures: Vec<String>,
}

impl Row {
    /// A row.
    pub fn new(name: impl Into<String>, checked: u64, failures: Vec<String>) -> Self {
        Row {
            name: name.into(),
            checked,
            failures,
        }
    }

    /// Passed: something was checked and nothing failed. A row that checked nothing fails:
    /// the run did not exercise what it claims to.
    pub fn passed(&self) -> bool {
        self.checked > 0 && self.failures.is_empty()
    }
}

/// Most failures printed per row.
const SHOWN: usize = 8;

/// Prints the table and the failures; returns whether every row passed.
pub fn print(rows: &[Row]) -> bool {
    let width = rows.iter().map(|r| r.name.len()).max().unwrap_or(10).max(9);
    println!();
    println!(
        "{:<width$}  {:>8}  {:>8}",
        "invariant", "checked", "failures"
    );
    println!("{:-<width$}  {:->8}  {:->8}", "", "", "");
    for r in rows {
        let mark = if r.passed() { "" } else { "  <-- FAILED" };
        println!(
            "{:<width$}  {:>8}  {:>8}{mark}",
            r.name,
            r.checked,
            r.failures.len()
        );
    }
    let mut all = true;
    for r in rows {
        if r.passed() {
            continue;
        }
        all = false;
        println!();
        if r.checked == 0 {
            println!(
                "{}: nothing was checked (the run did not exercise it)",
                r.name
            );
        }
        for f in r.failures.iter().take(SHOWN) {
            println!("{}: {f}", r.name);
        }
        if r.failures.len() > SHOWN {
            println!("{}: ... and {} more", r.name, r.failures.len() - SHOWN);
        }
    }
    // The closing line the test command's tally reads (scripts/tally.awk), as cargo test
    // writes it: one test per invariant.
    let failed = rows.iter().filter(|r| !r.passed()).count();
    println!();
    println!(
        "test result: {}. {} passed; {failed} failed; 0 ignored (chaos invariants)",
        if all { "ok" } else { "FAILED" },
        rows.len() - failed
    );
    all
}
