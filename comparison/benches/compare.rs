//! `dgsp-compare`: see the crate documentation and docs/comparison.md. A bench target, so
//! that the published `dgsp` 0.1.2 it measures stays a dev-dependency (a baseline only).
//!
//!     cargo bench -p dgsp-comparison --bench compare                             # full run, rewrites docs/comparison*
//!     cargo bench -p dgsp-comparison --bench compare --profile dev -- --smoke    # seconds, into a temporary directory

#[path = "compare/reference.rs"]
mod reference;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let options = dgsp_comparison::cli::Options::parse();
    match dgsp_comparison::run::run(&options, Some(&reference::Reference)) {
        Ok(written) => {
            for path in written {
                println!("{}", path.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("dgsp-compare: {e}");
            ExitCode::FAILURE
        }
    }
}
