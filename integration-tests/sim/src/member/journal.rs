//! The member's data directory: an append-only journal of oplog entries, rollbacks and
//! term/vote changes, replayed at start. It is what lets a member killed with SIGKILL (or a
//! restarted container) come back with its data and keep its vote: a member that forgot
//! either could help elect a primary that lacks majority-committed writes.
//!
//! Records are written (not fsynced) before the write they log is acknowledged: a killed
//! process loses nothing the kernel already has, which is the fault the tests inject.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

use bson::{doc, Document};

use super::oplog_entry;
use crate::error::SimError;
use crate::shared::Shared;
use crate::state::node::Journal;
use crate::state::oplog::Entry;
use crate::state::State;

/// What replaying the journal restored besides the data.
#[derive(Debug, Default)]
pub(crate) struct Replayed {
    pub voted: Option<(i64, usize)>,
}

const FILE: &str = "journal.bson";

impl Journal {
    /// Opens (creating) `dir`'s journal and replays it into member `me`'s slot of `st`.
    pub(crate) fn open(
        dir: &Path,
        shared: &Shared,
        st: &mut State,
        me: usize,
    ) -> Result<(Self, Replayed), SimError> {
        std::fs::create_dir_all(dir).map_err(SimError::Io)?;
        let path = dir.join(FILE);
        let mut replayed = Replayed::default();
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(SimError::Io(e)),
        };
        let (records, whole) = whole_records(&bytes);
        for (i, rec) in records.iter().enumerate() {
            replay(rec, shared, st, me, &mut replayed).map_err(|e| {
                SimError::InvalidConfig(format!("journal {}: record {i}: {e}", path.display()))
            })?;
        }
        let file = OpenOptions::new().create(true).append(true).open(&path).map_err(SimError::Io)?;
        if whole < bytes.len() {
            // A record cut short by a crash was never acknowledged: it goes, or every record
            // appended after it would be unreachable at the next replay.
            let cut = u64::try_from(whole).unwrap_or(u64::MAX);
            file.set_len(cut).map_err(SimError::Io)?;
            tracing::warn!(path = %path.display(), torn = bytes.len() - whole, "journal: torn tail truncated");
        }
        let records = records.len();
        tracing::info!(path = %path.display(), records, term = st.term, applied = st.oplog.end(), "journal replayed");
        Ok((Journal { file, failed: false }, replayed))
    }

    fn write(&mut self, rec: &Document) {
        if self.failed {
            return;
        }
        let result = crate::bson_compat::document_to_vec(rec)
            .map_err(std::io::Error::other)
            .and_then(|b| self.file.write_all(&b));
        if let Err(e) = result {
            // Going on in memory is the best a test server can do; say so once.
            tracing::error!(error = %e, "cannot write the journal; the data is no longer kept");
            self.failed = true;
        }
    }

    /// Logs an oplog entry.
    pub(crate) fn entry(&mut self, e: &Entry) {
        self.write(&doc! {"k": "e", "e": oplog_entry::encode(e)});
    }

    /// Logs a rollback to `end` (entries at `end` and after are gone).
    pub(crate) fn truncate(&mut self, end: u64) {
        self.write(&doc! {"k": "t", "end": i64::try_from(end).unwrap_or(i64::MAX)});
    }

    /// Logs the current term and vote.
    pub(crate) fn term(&mut self, term: i64, voted: Option<(i64, usize)>) {
        let (vt, vc) = voted.map_or((-1, -1), |(t, c)| (t, i64::try_from(c).unwrap_or(-1)));
        self.write(&doc! {"k": "v", "term": term, "votedTerm": vt, "votedFor": vc});
    }
}

/// The whole records at the start of `bytes` and how many bytes they take: reading stops at
/// the first record that is cut short or does not parse (a torn tail).
fn whole_records(bytes: &[u8]) -> (Vec<Document>, usize) {
    let mut records = Vec::new();
    let mut at = 0;
    while let Some(len) = bytes.get(at..at + 4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]])) {
        let Some(end) = usize::try_from(len).ok().filter(|l| *l >= 5).map(|l| at + l) else { break };
        let Some(rec) = bytes.get(at..end).and_then(|b| Document::from_reader(b).ok()) else { break };
        records.push(rec);
        at = end;
    }
    (records, at)
}

fn replay(
    rec: &Document,
    shared: &Shared,
    st: &mut State,
    me: usize,
    out: &mut Replayed,
) -> Result<(), String> {
    match rec.get_str("k").map_err(|_| "record without k".to_owned())? {
        "e" => {
            let e = rec.get_document("e").map_err(|_| "entry record without e".to_owned())?;
            super::sync::apply_entry(shared, st, me, e)
        }
        "t" => {
            let end = rec.get_i64("end").map_err(|_| "truncate record without end".to_owned())?;
            super::sync::roll_back_to(st, me, u64::try_from(end).unwrap_or(0));
            Ok(())
        }
        "v" => {
            st.term = st.term.max(rec.get_i64("term").unwrap_or(0));
            let (vt, vc) = (rec.get_i64("votedTerm").unwrap_or(-1), rec.get_i64("votedFor").unwrap_or(-1));
            out.voted = usize::try_from(vc).ok().filter(|_| vt >= 0).map(|c| (vt, c));
            Ok(())
        }
        other => Err(format!("unknown record kind {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_tail_is_cut_at_the_last_whole_record() {
        let mut bytes = Vec::new();
        for i in 0..3 {
            bytes.extend(crate::bson_compat::document_to_vec(&doc! {"k": "v", "term": i}).unwrap());
        }
        let whole = bytes.len();
        assert_eq!(whole_records(&bytes).1, whole);
        // Half a record, then a length prefix alone, then a lying length.
        let next = crate::bson_compat::document_to_vec(&doc! {"k": "v", "term": 9}).unwrap();
        for tail in [&next[..next.len() / 2], &next[..3], &[0xff, 0xff, 0xff, 0x7f, 0][..]] {
            let mut torn = bytes.clone();
            torn.extend_from_slice(tail);
            let (records, at) = whole_records(&torn);
            assert_eq!((records.len(), at), (3, whole), "tail {tail:?}");
        }
    }
}
