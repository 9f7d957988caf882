//! # dgsp-manager
//!
//! One command for everyone around a DGSP group:
//! - **operators** drive the registry's admin API ([`operator`]);
//! - **members** keep an encrypted wallet of one-time certificates and sign ([`member`],
//!   [`wallet`]);
//! - **verifiers** ask a gateway, check its evidence (signed checkpoint, snapshot, proof)
//!   themselves, judge openings and check revocation proofs offline ([`verifier`],
//!   [`evidence`]);
//! - **auditors** replay the whole log and check the manager's conduct ([`audit`]).
//!
//! The HTTP client ([`client`]) retries what is safe to retry and turns problem+json answers
//! into readable errors.

#![warn(missing_docs)]

pub mod audit;
pub mod cli;
pub mod client;
pub mod config;
pub mod documents;
pub mod error;
pub mod evidence;
pub mod io;
pub mod member;
pub mod operator;
pub mod output;
pub mod tokens;
pub mod verifier;
pub mod wallet;

use clap::CommandFactory;

pub use error::{exit, Error};

/// Runs a parsed command line; returns the exit code.
pub async fn run(cli: cli::Cli) -> Result<i32, Error> {
    let out = output::Output { json: cli.json };
    let config = config::Config::load(cli.config.as_deref())?;
    match cli.command {
        cli::Command::Operator(cmd) => operator::run(cmd, out, &config).await,
        cli::Command::Member(cmd) => {
            tokio::task::spawn_blocking(move || member::run(cmd, out, &config))
                .await
                .expect("member command panicked")
        }
        cli::Command::Verify(args) => verifier::verify(args, out, &config).await,
        cli::Command::Judge(args) => verifier::judge(args, out, &config).await,
        cli::Command::CheckProof(args) => verifier::check_proof(args, out),
        cli::Command::Audit(args) => audit::run(args, out, &config).await,
        cli::Command::Completions { shell } => {
            let mut cmd = cli::Cli::command();
            clap_complete::generate(shell, &mut cmd, "dgsp-manager", &mut std::io::stdout());
            Ok(exit::OK)
        }
    }
}
