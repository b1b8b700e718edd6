//! What a collection's `drop` and a database's `dropDatabase` share: the command. Runs once
//! on the primary; dropping a collection that does not exist is not an error.

use super::super::collection::Handle;
use super::super::ops::drop;
use super::super::options::admin::CommandOptions;
use super::super::session::ClientSession;
use crate::error::Result;

/// Drops the handle's collection (`collection`) or its database.
pub(super) async fn run(
    handle: Handle<'_>,
    collection: bool,
    options: CommandOptions,
    session: Option<&mut ClientSession>,
) -> Result<()> {
    let (timeout, write) = handle.begin_write(session.as_deref(), &options)?;
    match handle.run(drop::drop(write, collection, options), timeout, session).await {
        Err(e) if collection && e.code() == Some(drop::NAMESPACE_NOT_FOUND) => Ok(()),
        Err(e) => Err(e),
        Ok(_) => Ok(()),
    }
}
