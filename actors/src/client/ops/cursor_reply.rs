//! The reply of a command that opens a cursor: its id, server and first batch, read from
//! the reply's bytes.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;

use bson::{Document, RawDocumentBuf};
use pool::cmap::PooledConnection;
use pool::connection::Connection;
use protocol::ServerAddress;

use super::super::executor::operation::{convert, raw_cursor_id, OpOutput};
use super::super::session::pool::ServerSession;
use crate::error::{Error, Result};

/// What a command that opens a cursor answered: the cursor's id, server and first batch,
/// and what its `getMore`s need.
pub(crate) struct CursorReply {
    /// The server that holds the cursor.
    pub address: ServerAddress,
    /// The database of the `getMore`s.
    pub db: String,
    /// The collection the `getMore`s name (the reply's `ns`, else the command's).
    pub collection: String,
    /// The cursor id (0: exhausted).
    pub id: i64,
    /// The first batch, as the server sent it (a `Cursor<T>` deserializes `T` from the
    /// bytes).
    pub batch: Docs,
    /// The session the cursor keeps.
    pub session: Option<ServerSession>,
    /// Load-balanced mode: the connection the cursor keeps.
    pub connection: Option<PooledConnection<Connection>>,
    /// A change stream's `postBatchResumeToken`.
    pub post_batch_resume_token: Option<Document>,
    /// The reply's `operationTime` (a change stream resumes from it).
    pub operation_time: Option<bson::Timestamp>,
}

impl CursorReply {
    /// Reads a cursor-opening reply of a command on `db` that names `collection`.
    pub(crate) fn read(out: OpOutput, db: &str, collection: &str) -> Result<CursorReply> {
        // Read before the batch takes the reply's bytes.
        let raw = out.reply.raw();
        // The collection part of `ns` (`db.$cmd.listCollections` gives `$cmd.listCollections`),
        // which the `getMore`s name.
        let ns = raw.get_document("cursor").and_then(|c| c.get_str("ns")).ok();
        let collection = ns
            .and_then(|ns| ns.split_once('.'))
            .map_or_else(|| collection.to_string(), |(_, c)| c.to_string());
        let operation_time = raw.get_timestamp("operationTime").ok();
        let (NextBatch { id, batch, post_batch_resume_token }, out) = batch(out, "firstBatch")?;
        Ok(CursorReply {
            address: out.address,
            db: db.to_string(),
            collection,
            id,
            batch,
            session: out.session,
            connection: out.connection,
            post_batch_resume_token,
            operation_time,
        })
    }
}

/// The cursor id, the documents of a cursor reply's `key` batch and its resume token, read
/// from the reply's bytes: the documents stay in the reply (shared), none is copied or
/// converted.
pub(super) fn batch(out: OpOutput, key: &str) -> Result<(NextBatch, OpOutput)> {
    let raw = out.reply.raw();
    let id = raw_cursor_id(raw);
    let cursor = raw
        .get_document("cursor")
        .map_err(|_| Error::invalid_response(out.address.clone(), "the reply has no cursor document"))?;
    let base = raw.as_bytes().as_ptr() as usize;
    // Where each document of the batch lies in the reply's bytes.
    let ranges: VecDeque<Range<usize>> = match cursor.get_array(key) {
        Ok(a) => a
            .into_iter()
            .filter_map(|d| d.ok()?.as_document())
            .map(|d| {
                let start = d.as_bytes().as_ptr() as usize - base;
                start..start + d.as_bytes().len()
            })
            .collect(),
        Err(_) => VecDeque::new(),
    };
    let post_batch_resume_token = cursor.get_document("postBatchResumeToken").ok().map(convert);
    let (bytes, out) = out.take_raw();
    let batch = Docs { entries: ranges.into_iter().map(|r| (bytes.clone(), r)).collect() };
    Ok((NextBatch { id, batch, post_batch_resume_token }, out))
}

/// The documents of a batch: each a range of a reply's bytes, which the batch shares (no
/// document is copied out of the reply).
#[derive(Default)]
pub(crate) struct Docs {
    entries: VecDeque<(Arc<RawDocumentBuf>, Range<usize>)>,
}

impl Docs {
    /// Documents that are not in a reply of their own.
    pub(crate) fn from_documents(docs: impl IntoIterator<Item = RawDocumentBuf>) -> Docs {
        let entries = docs
            .into_iter()
            .map(|d| {
                let len = d.as_bytes().len();
                (Arc::new(d), 0..len)
            })
            .collect();
        Docs { entries }
    }

    /// How many are left.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// None is left.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The next one.
    pub(crate) fn pop_front(&mut self) -> Option<Doc> {
        self.entries.pop_front().map(|(bytes, range)| Doc { bytes, range })
    }

    /// The batch as one reply: the reply it came in when it holds that reply's whole batch
    /// (shared, no copy), else a reply built around copies of its documents.
    pub(crate) fn into_reply(self) -> Result<Arc<RawDocumentBuf>> {
        if let Some(whole) = self.whole_reply() {
            return Ok(whole);
        }
        let mut batch = bson::RawArrayBuf::new();
        for (bytes, range) in self.entries {
            crate::bson_compat::push_ref(
                &mut batch,
                bson::RawBsonRef::Document(Doc { bytes, range }.as_raw()?),
            );
        }
        Ok(Arc::new(bson::rawdoc! { "cursor": { "nextBatch": batch }, "ok": 1.0 }))
    }

    /// The reply every document lies in, when they are all of its batch.
    fn whole_reply(&self) -> Option<Arc<RawDocumentBuf>> {
        let (first, _) = self.entries.front()?;
        if !self.entries.iter().all(|(bytes, _)| Arc::ptr_eq(bytes, first)) {
            return None;
        }
        let cursor = first.get_document("cursor").ok()?;
        let batch = cursor.get_array("firstBatch").or_else(|_| cursor.get_array("nextBatch")).ok()?;
        (batch.into_iter().count() == self.entries.len()).then(|| first.clone())
    }
}

/// One document of a batch: a range of a reply's bytes.
pub(crate) struct Doc {
    bytes: Arc<RawDocumentBuf>,
    range: Range<usize>,
}

impl Doc {
    /// The document. The reply was validated whole, so the range holds a document.
    pub(crate) fn as_raw(&self) -> Result<&bson::RawDocument> {
        let bytes = self.bytes.as_bytes().get(self.range.clone()).unwrap_or_default();
        bson::RawDocument::from_bytes(bytes)
            .map_err(|e| Error::deserialization(format!("a batch document: {e}")))
    }
}

/// A `getMore`'s answer.
pub(crate) struct NextBatch {
    /// The cursor id (0: exhausted).
    pub id: i64,
    /// The documents, as the server sent them.
    pub batch: Docs,
    /// A change stream's `postBatchResumeToken`.
    pub post_batch_resume_token: Option<Document>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_batch(reply: &Arc<RawDocumentBuf>) -> Docs {
        let base = reply.as_bytes().as_ptr() as usize;
        let batch = reply.get_document("cursor").and_then(|c| c.get_array("firstBatch")).expect("a batch");
        let entries = batch
            .into_iter()
            .filter_map(|d| d.ok()?.as_document())
            .map(|d| {
                let start = d.as_bytes().as_ptr() as usize - base;
                (reply.clone(), start..start + d.as_bytes().len())
            })
            .collect();
        Docs { entries }
    }

    #[test]
    fn a_whole_batch_is_its_reply_and_a_partial_one_is_copied() {
        let reply =
            Arc::new(bson::rawdoc! {"cursor": {"id": 0_i64, "firstBatch": [{"a": 1}, {"a": 2}]}, "ok": 1.0});
        let whole = first_batch(&reply).into_reply().expect("a reply");
        assert!(Arc::ptr_eq(&whole, &reply), "no copy");

        let mut partial = first_batch(&reply);
        let _ = partial.pop_front();
        let copied = partial.into_reply().expect("a reply");
        assert!(!Arc::ptr_eq(&copied, &reply));
        let batch = copied.get_document("cursor").and_then(|c| c.get_array("nextBatch")).expect("a batch");
        let left: Vec<i32> =
            batch.into_iter().filter_map(|d| d.ok()?.as_document()?.get_i32("a").ok()).collect();
        assert_eq!(left, vec![2]);
        assert!(Docs::default().into_reply().is_ok_and(|r| r.get_f64("ok").ok() == Some(1.0)));
    }
}
