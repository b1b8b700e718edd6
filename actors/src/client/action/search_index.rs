//! What the search index actions share: each runs its command once (never retried), with
//! the collection's settings and an optional session.

use std::time::Duration;

use bson::Document;

use super::super::collection::Handle;
use super::super::ops::drop::NAMESPACE_NOT_FOUND;
use super::super::ops::search_index::{self, SearchIndexCommand};
use super::super::session::ClientSession;
use crate::error::Result;

/// Runs `command`; gives the reply (an empty one for a drop of a missing collection, which
/// the index-management spec says is not an error).
pub(super) async fn run(
    handle: Handle<'_>,
    command: SearchIndexCommand,
    timeout: Option<Duration>,
    session: Option<&mut ClientSession>,
) -> Result<Document> {
    let timeout = handle.op_timeout(timeout);
    let drop = matches!(command, SearchIndexCommand::Drop { .. });
    match handle.run(search_index::search_index(handle.namespace(), command)?, timeout, session).await {
        Ok(reply) => Ok(reply),
        Err(e) if drop && e.code() == Some(NAMESPACE_NOT_FOUND) => Ok(Document::new()),
        Err(e) => Err(e),
    }
}

/// The names of the indexes a `createSearchIndexes` reply says it created.
pub(super) fn created_names(reply: &Document) -> Vec<String> {
    let created = reply.get_array("indexesCreated").map(Vec::as_slice).unwrap_or_default();
    created.iter().filter_map(|i| i.as_document()?.get_str("name").ok().map(str::to_owned)).collect()
}
