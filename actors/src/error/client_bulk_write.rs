//! Why a client bulk write failed after it had sent writes.

use std::collections::BTreeMap;
use std::fmt;

use super::{Error, WriteConcernError, WriteError};
use crate::results::PartialBulkWriteResult;

/// Why [`Client::bulk_write`](crate::Client::bulk_write) failed after it had sent writes ([`Error::ClientBulkWrite`]):
/// writes that failed, write concerns that were not satisfied, or an error that stopped the
/// bulk after some results had come back.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientBulkWriteError {
    /// The error that stopped the bulk (network, timeout, a command error: its
    /// [`Error::server_error`] has the server's reply), if one did.
    pub error: Option<Box<Error>>,
    /// Each command's unsatisfied write concern, in order.
    pub write_concern_errors: Vec<WriteConcernError>,
    /// The writes that failed, keyed by their index in the models given (`index` is that
    /// index too). An ordered bulk stops at its first.
    pub write_errors: BTreeMap<usize, WriteError>,
    /// What succeeded, when it can be told that something did.
    pub partial_result: Option<PartialBulkWriteResult>,
}

impl std::error::Error for ClientBulkWriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl fmt::Display for ClientBulkWriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "client bulk write failed")?;
        let mut sep = ":";
        if let Some(e) = &self.error {
            write!(f, "{sep} {e}")?;
            sep = ";";
        }
        if let Some((i, e)) = self.write_errors.iter().next() {
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
