//! A page of the registry's log feed (`GET /v1/log/entries`).

use serde::{Deserialize, Serialize};

use crate::log::Entry;

/// A page of the log.
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Entries {
    /// Entries in order; private parts only for the auditor token.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub entries: Vec<Entry>,
    /// Current log head.
    pub head_seq: u64,
}
