//! Log entries, canonical JSON, salted commitments and the SHA3-256 hash chain: the format
//! every follower reads, defined once in `dgsp-wire` (`dgsp_wire::log`, docs/event-log.md)
//! and used here with salts drawn from the OS (`Entry::seal`).

pub use dgsp_wire::log::*;
