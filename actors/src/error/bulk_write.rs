//! Why a bulk write failed after it had sent writes: the client-level one (the official
//! `BulkWriteError`) and a collection's (ours).

use std::collections::HashMap;
use std::fmt;

use super::server::{write_summary, IndexedWriteError, WriteConcernError, WriteError};
use crate::client::results::BulkWriteResult;
pub use crate::client::results::PartialBulkWriteResult;

/// Why [`Client::bulk_write`](crate::Client::bulk_write) failed after it had sent writes
/// ([`ErrorKind::BulkWrite`](super::ErrorKind::BulkWrite)). When an error stopped it (a
/// network error, a timeout, a command error), that error is the [`Error`](super::Error)'s
/// `source`, and its labels count as the error's.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct BulkWriteError {
    /// The write concern errors, one per command that reported one.
    pub write_concern_errors: Vec<WriteConcernError>,
    /// The writes that failed, by the index of their model.
    pub write_errors: HashMap<usize, WriteError>,
    /// What succeeded, when some write is known to have: a summary, or a verbose result when
    /// verbose results were asked for.
    pub partial_result: Option<PartialBulkWriteResult>,
}

impl fmt::Display for BulkWriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "client bulk write failed")?;
        let mut sep = ":";
        if let Some((i, e)) = self.write_errors.iter().min_by_key(|(i, _)| **i) {
            let n = self.write_errors.len();
            write!(f, "{sep} {n} write error(s), first: write {i}: {} (code {})", e.message, e.code)?;
            sep = ";";
        }
        if let Some(e) = self.write_concern_errors.first() {
            let n = self.write_concern_errors.len();
            write!(f, "{sep} {n} write concern error(s), first: {} (code {})", e.message, e.code)?;
        }
        Ok(())
    }
}

/// (Ours.) Why a collection's `bulk_write` failed
/// ([`ErrorKind::CollectionBulkWrite`](super::ErrorKind::CollectionBulkWrite)): the writes
/// that failed (an ordered bulk stops at its first), the write concern error, and what
/// succeeded.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct CollectionBulkWriteError {
    /// The writes that failed, by the index of their model.
    pub write_errors: Vec<IndexedWriteError>,
    /// The write concern error, if the write concern was not satisfied.
    pub write_concern_error: Option<WriteConcernError>,
    /// What succeeded: the counts, the upserted ids, and the `_id`s of the inserts that did
    /// not fail.
    pub partial_result: BulkWriteResult,
}

impl fmt::Display for CollectionBulkWriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_summary(f, &self.write_errors, self.write_concern_error.as_ref())
    }
}
