//! An operation inside a transaction cannot set its own read or write concern (the
//! transactions spec): the builders and the handles check it here, below the transaction's
//! machinery, which names the builders.

use super::ClientSession;
use crate::error::{Error, Result};

/// The transactions spec: an operation inside a transaction cannot set its own read or write
/// concern (the transaction's apply; sending another would be ambiguous, and ignoring it would
/// be a silent surprise).
pub(crate) fn refuse_own_concerns(session: Option<&ClientSession>, read: bool, write: bool) -> Result<()> {
    if !session.is_some_and(ClientSession::in_transaction) {
        return Ok(());
    }
    let which = match (read, write) {
        (true, _) => "read",
        (false, true) => "write",
        (false, false) => return Ok(()),
    };
    Err(Error::invalid_argument(format!("Cannot set {which} concern after starting a transaction.")))
}
