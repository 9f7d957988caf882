//! The bodies of the registry's admin API, as their types in `dgsp-wire`: requests written
//! from them, answers read as them.

use dgsp_wire::registry_api::{BulkJoined, Issued, JoinedMember, Revoked};

/// The answer of an admin write (its type in `dgsp-wire`).
pub trait Answer: serde::de::DeserializeOwned {
    /// What must be the same when the write is answered twice under one key.
    fn summary(&self) -> String;
}

/// The member id.
impl Answer for JoinedMember {
    fn summary(&self) -> String {
        format!("id {}", self.id)
    }
}

/// The member ids.
impl Answer for BulkJoined {
    fn summary(&self) -> String {
        let ids: Vec<String> = self.members.iter().map(|m| m.id.to_string()).collect();
        format!("ids {}", ids.join(","))
    }
}

/// The counters (the certificates may be signed again after a restart).
impl Answer for Issued {
    fn summary(&self) -> String {
        format!("id {} first {}", self.id, self.first_counter)
    }
}

/// The entry and the zetas.
impl Answer for Revoked {
    fn summary(&self) -> String {
        format!("seq {} zetas {:?}", self.seq, self.zetas)
    }
}

/// A request body of the registry's admin API, from its type in `dgsp-wire` (a renamed
/// field fails to compile here instead of being refused at run time).
pub fn typed(body: impl serde::Serialize) -> serde_json::Value {
    serde_json::to_value(body).expect("request bodies serialize")
}
