//! `verify`, `judge`, `check-proof` (being written).

use crate::cli::{CheckProofArgs, JudgeArgs, VerifyArgs};
use crate::config::Config;
use crate::error::Error;
use crate::output::Output;

/// `verify`
pub async fn verify(_a: VerifyArgs, _out: Output, _config: &Config) -> Result<i32, Error> {
    Err(Error::Config("not yet".into()))
}

/// `judge`
pub async fn judge(_a: JudgeArgs, _out: Output, _config: &Config) -> Result<i32, Error> {
    Err(Error::Config("not yet".into()))
}

/// `check-proof`
pub fn check_proof(_a: CheckProofArgs, _out: Output) -> Result<i32, Error> {
    Err(Error::Config("not yet".into()))
}
