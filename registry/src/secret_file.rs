//! Reading secret files the way a careful operator expects: `dgsp_secrets::file`, shared
//! with `dgsp-manager` (refusals, `O_NOFOLLOW`, checks on the descriptor, private ACLs).

pub use dgsp_secrets::file::*;
