//! The published `dgsp` 0.1.2 as a contender. It may serve only as a benchmark baseline, so
//! it is a dev-dependency of this crate: the bench target (`benches/compare.rs`) and the
//! smoke test link it and hand it to [`crate::run::run`] through this trait.

use crate::device::ReferenceSide;
use crate::error::CompareError;
use crate::schemes::Scheme;

/// What the run needs of the reference implementation.
pub trait Baseline {
    /// It as a contender of the main table.
    fn scheme(&self) -> Box<dyn Scheme>;
    /// Its member's side (storage per certificate, heap of one signature).
    fn member_side(&self) -> Result<ReferenceSide, CompareError>;
}
