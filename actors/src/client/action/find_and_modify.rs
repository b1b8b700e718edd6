//! What the three `find_one_and_*` builders share: running the `findAndModify` and reading
//! its document (none when the write is unacknowledged).

use bson::{Bson, Document};
use serde::de::DeserializeOwned;

use super::super::codec::decode;
use super::super::collection::Handle;
use super::super::ops::find_and_modify::FindAndModify;
use super::super::ops::legacy_max_time;
use super::super::options::crud::FindAndModifyFields;
use super::super::session::ClientSession;
use crate::error::Result;

/// Runs a `findAndModify` of `change` (`None`: a delete) and reads the document as a `T`.
pub(super) async fn find_and_modify<T: DeserializeOwned + 'static>(
    handle: Handle<'_>,
    filter: Document,
    change: Option<Bson>,
    options: FindAndModifyFields,
    session: Option<&mut ClientSession>,
) -> Result<Option<T>> {
    let timeout = handle.op_timeout(options.timeout);
    // An unacknowledged write has no reply to read: there is no document to return (in a
    // transaction the write concern is the commit's, and the statement is acknowledged).
    let in_transaction = session.as_ref().is_some_and(|s| s.in_transaction());
    let unacknowledged = !in_transaction
        && options
            .write_concern
            .as_ref()
            .or(handle.settings.write_concern.as_ref())
            .is_some_and(|w| !w.is_acknowledged());
    let op = FindAndModify {
        ns: handle.namespace(),
        filter,
        change,
        max_time_ms: legacy_max_time(options.max_time, timeout),
        write_concern: handle.write_concern_doc(options.write_concern.as_ref(), timeout)?,
        options,
    };
    let found = handle.run(op, timeout, session).await?;
    if unacknowledged {
        return Ok(None);
    }
    found.map(decode).transpose()
}
