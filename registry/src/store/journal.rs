//! Where the local log stands against the journal in object storage (`crate::journal`):
//! the first seq of the journal segment that holds the local head, kept in `meta` and
//! written in the same batch as the entries it covers.

use rocksdb::WriteBatch;

use dgsp_wire::log::Entry;

use super::{be, corrupt, unbe, Error, Store};

/// `meta` key: be64 first seq of the journal segment holding the newest journaled entry.
const JOURNAL_SEGMENT: &[u8] = b"journal_segment";

impl Store {
    /// The first seq of the journal segment that holds the newest entry known to be in
    /// the journal; `None` when this database never recorded one.
    pub fn journal_segment(&self) -> Result<Option<u64>, Error> {
        self.db
            .get_cf(self.cf("meta"), JOURNAL_SEGMENT)?
            .map(|v| unbe(&v).ok_or_else(|| corrupt("journal_segment", "not 8 bytes")))
            .transpose()
    }

    /// [`commit`](Self::commit) of entries that are in the journal segment beginning at
    /// `segment`, recording that segment in the same synced batch.
    pub fn commit_journaled(
        &self,
        entries: &[Entry],
        idem: &[(String, Vec<u8>)],
        segment: u64,
    ) -> Result<(), Error> {
        let mut batch = WriteBatch::default();
        batch.put_cf(self.cf("meta"), JOURNAL_SEGMENT, be(segment));
        self.commit_batch(entries, idem, batch)
    }

    /// Records that the local log up to its head is in the journal, its newest entry in
    /// the segment beginning at `segment` (after uploading entries the journal lacked).
    pub fn put_journal_segment(&self, segment: u64) -> Result<(), Error> {
        let mut batch = WriteBatch::default();
        batch.put_cf(self.cf("meta"), JOURNAL_SEGMENT, be(segment));
        self.write_synced(batch)
    }
}
