//! The member's data directory: an append-only journal of oplog entries, rollbacks and
//! term/vote changes, replayed at start. It is what lets a member killed with SIGKILL (or a
//! restarted container) come back with its data and keep its vote: a member that forgot
//! either could help elect a primary that lacks majority-committed writes.
//!
//! Records are written (not fsynced) before the write they log is acknowledged: a killed
//! process loses nothing the kernel already has, which is the fault the tests inject.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Write};
use std::path::Path;

use bson::{doc, Document};

use super::oplog_entry;
use crate::sim::cluster::{Shared, State};
use crate::sim::repl::Entry;
use crate::sim::SimError;

/// The open journal file.
#[derive(Debug)]
pub(crate) struct Journal {
    file: File,
    failed: bool,
}

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
        let mut records = 0_u64;
        if let Ok(f) = File::open(&path) {
            let mut reader = BufReader::new(f);
            // A record cut short by a crash ends the replay: it was never acknowledged.
            while let Ok(rec) = Document::from_reader(&mut reader) {
                replay(&rec, shared, st, me, &mut replayed).map_err(|e| {
                    SimError::InvalidConfig(format!("journal {}: record {records}: {e}", path.display()))
                })?;
                records += 1;
            }
        }
        let file = OpenOptions::new().create(true).append(true).open(&path).map_err(SimError::Io)?;
        tracing::info!(path = %path.display(), records, term = st.term, applied = st.oplog.end(), "journal replayed");
        Ok((Journal { file, failed: false }, replayed))
    }

    fn write(&mut self, rec: &Document) {
        if self.failed {
            return;
        }
        let result = rec.to_vec().map_err(std::io::Error::other).and_then(|b| self.file.write_all(&b));
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
