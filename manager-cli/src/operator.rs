//! `operator ...` commands (being written).

use crate::cli::OperatorCommand;
use crate::config::Config;
use crate::error::Error;
use crate::output::Output;

/// Runs an operator command.
pub async fn run(_cmd: OperatorCommand, _out: Output, _config: &Config) -> Result<i32, Error> {
    Err(Error::Config("not yet".into()))
}
