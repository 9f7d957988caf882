//! # dgsp-comparison
//!
//! Where DGSP stands: `dgsp-compare` measures DGSP (dgsp-core, all 24 parameter sets, signing
//! split into its offline and online parts) against Ed25519, ECDSA P-256, BLS12-381, ML-DSA,
//! raw SPHINCS+ / SLH-DSA of the same sets, BBS (a classical anonymous credential) and the
//! published `dgsp` 0.1.2 (a dev-dependency: the bench target `compare` links it and hands it
//! over as a [`baseline::Baseline`]), in one run on one machine; sweeps DGSP's costs over group size
//! and revoked-list size; measures the member's side (wallet bytes, signing memory, a
//! signer-only build); and writes the tables and plots of `docs/comparison.md`.
//!
//! Modules by responsibility: [`measure`] (timing with confidence intervals) and [`stats`],
//! [`machine`], [`schemes`] (one module per contender behind [`schemes::Scheme`]), [`scale`]
//! (the sweeps), [`device`] (the member's side), [`plot`], [`report`], [`run`].

#![deny(unsafe_code)] // allowed only in `device::heap` (the counting allocator)
#![warn(missing_docs)]

pub mod baseline;
pub mod cli;
pub mod device;
pub mod error;
pub mod format;
pub mod machine;
pub mod measure;
pub mod plot;
pub mod procfs;
pub mod published;
pub mod report;
pub mod results;
pub mod run;
pub mod scale;
pub mod schemes;
pub mod stats;

pub use error::CompareError;

/// Heap peaks of signing are counted by this allocator (`device::heap`).
#[global_allocator]
static ALLOCATOR: device::heap::CountingAllocator = device::heap::CountingAllocator;
