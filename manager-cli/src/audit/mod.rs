//! The auditor (being written).

use crate::cli::AuditArgs;
use crate::config::Config;
use crate::error::Error;
use crate::output::Output;

/// Runs `audit`.
pub async fn run(_args: AuditArgs, _out: Output, _config: &Config) -> Result<i32, Error> {
    Err(Error::Config("not yet".into()))
}
