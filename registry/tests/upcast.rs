//! A log entry stored by schema version 0 (field names `uid`/`name`) is still readable: its
//! chain link and commitment verify as stored, and it upcasts to today's event.
//! The fixture was written by an independent Python script from docs/event-log.md.

use dgsp_wire::events::Event;
use dgsp_wire::log::{Entry, GENESIS_PREV};

#[test]
fn a_stored_v0_entry_verifies_and_upcasts() {
    let text = include_str!("fixtures/v0-member-joined.json");
    let entry: Entry = serde_json::from_str(text).unwrap();
    assert_eq!(entry.v, 0);
    entry.check(0, &GENESIS_PREV).unwrap();
    assert_eq!(
        entry.event().unwrap(),
        Event::MemberJoined {
            id: 7,
            username: "bob".into()
        }
    );
}
