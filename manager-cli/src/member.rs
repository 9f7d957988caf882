//! `member ...` commands (being written).

use crate::cli::MemberCommand;
use crate::config::Config;
use crate::error::Error;
use crate::output::Output;

/// Runs a member command.
pub fn run(_cmd: MemberCommand, _out: Output, _config: &Config) -> Result<i32, Error> {
    Err(Error::Config("not yet".into()))
}
