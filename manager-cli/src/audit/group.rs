//! Which group the log belongs to: entry 1 (`group_created`), checked against the pin.

use dgsp_core::ManagerPublicKey;
use dgsp_wire::anchor::Anchor;
use dgsp_wire::log::Entry;
use serde_json::Value;

use super::findings::Findings;
use super::report::GroupInfo;
use super::violation::ViolationKind;

/// The pin and the key in use.
pub(crate) struct Group {
    pin: Option<Anchor>,
    key: Option<ManagerPublicKey>,
}

impl Group {
    pub(crate) fn new(pin: Option<Anchor>) -> Self {
        let key = match &pin {
            Some(Anchor::Key(k)) => Some((**k).clone()),
            _ => None,
        };
        Group { pin, key }
    }

    /// The key signatures are checked with, once known.
    pub(crate) fn key(&self) -> Option<&ManagerPublicKey> {
        self.key.as_ref()
    }

    /// What the report says about the group.
    pub(crate) fn info(&self) -> Option<GroupInfo> {
        let pinned = self.pin.is_some();
        match (&self.key, &self.pin) {
            (Some(k), _) => Some(GroupInfo {
                fingerprint: hex::encode(k.fingerprint()),
                params: k.params().to_string(),
                pinned,
            }),
            (None, Some(pin)) => Some(GroupInfo {
                fingerprint: hex::encode(pin.fingerprint()),
                params: "unknown".into(),
                pinned,
            }),
            (None, None) => None,
        }
    }

    /// Entry 1 must be `group_created`; no other entry may be.
    pub(crate) fn check_position(&self, e: &Entry, out: &mut Findings) {
        if e.seq == 1 && e.kind != "group_created" {
            out.violation(
                1,
                ViolationKind::Group,
                format!("entry 1 is {:?}, not group_created", e.kind),
            );
        }
    }

    /// A `group_created` entry: its key must decode, its fingerprint and params fields
    /// must describe that key, and it must be the pinned group. After a mismatch with the
    /// pin the log's own key is used for the rest of the audit, so that the report
    /// describes that log (the `group` violation already fails the audit).
    pub(crate) fn created(&mut self, e: &Entry, out: &mut Findings) {
        if e.seq != 1 {
            out.violation(
                e.seq,
                ViolationKind::Group,
                "group_created after entry 1: a log holds one group",
            );
            return;
        }
        let field = |k: &str| e.public.get(k).and_then(Value::as_str);
        let Some(key) = dgsp_wire::follow::group_key(e) else {
            out.violation(
                1,
                ViolationKind::Group,
                "entry 1 carries no decodable group public key",
            );
            return;
        };
        let fingerprint = hex::encode(key.fingerprint());
        if field("fingerprint") != Some(fingerprint.as_str()) {
            out.violation(
                1,
                ViolationKind::Group,
                format!(
                    "entry 1 states fingerprint {:?}, its key's is {fingerprint}",
                    field("fingerprint").unwrap_or_default()
                ),
            );
        } else if field("params") != Some(key.params().name()) {
            out.violation(
                1,
                ViolationKind::Group,
                format!(
                    "entry 1 states params {:?}, its key is {}",
                    field("params").unwrap_or_default(),
                    key.params()
                ),
            );
        }
        if let Some(pin) = &self.pin {
            if pin.fingerprint() != key.fingerprint() {
                out.violation(
                    1,
                    ViolationKind::Group,
                    format!(
                        "the log is group {fingerprint}, not the pinned group {}",
                        hex::encode(pin.fingerprint())
                    ),
                );
            }
        }
        self.key = Some(key);
    }
}
