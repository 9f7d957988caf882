//! `dgsp-compare`: see the crate documentation and docs/comparison.md.
//!
//!     cargo run --release -p dgsp-comparison              # full run, rewrites docs/comparison*
//!     cargo run -p dgsp-comparison -- --smoke             # seconds, into a temporary directory

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let options = dgsp_comparison::cli::Options::parse();
    match dgsp_comparison::run::run(&options) {
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
