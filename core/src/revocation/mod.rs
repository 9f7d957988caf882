//! Merkle-committed revocation snapshots (placeholder: being written).
