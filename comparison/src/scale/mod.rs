//! The sweeps: DGSP's costs against group size ([`group`]) and against the number of revoked
//! zetas ([`revoked`]), both on one parameter set ([`SET`]).

pub mod group;
pub mod revoked;

use dgsp_core::ParamSet;

/// The set both sweeps run on: `dgsp-registry init`'s default. Verification, opening and
/// the PLM cost the same on its FIPS 205 twin (only the manager's signer differs).
pub const SET: ParamSet = ParamSet::Sha2_128f;

/// Group sizes of the full run: 2^0, 2^5, ..., 2^25.
pub const FULL_GROUP_SIZES: [u64; 6] = [1, 1 << 5, 1 << 10, 1 << 15, 1 << 20, 1 << 25];
/// Group sizes of the smoke run.
pub const SMOKE_GROUP_SIZES: [u64; 3] = [1, 1 << 5, 1 << 10];
/// Revoked-list sizes of the full run: 0, 10^3, ..., 10^7.
pub const FULL_REVOKED: [u64; 6] = [0, 1_000, 10_000, 100_000, 1_000_000, 10_000_000];
/// Revoked-list sizes of the smoke run.
pub const SMOKE_REVOKED: [u64; 2] = [0, 1_000];
