//! The events of a group's history and their public/private payloads: defined once in
//! `dgsp-wire` (`dgsp_wire::events`), the log format's other half.

pub use dgsp_wire::events::*;
