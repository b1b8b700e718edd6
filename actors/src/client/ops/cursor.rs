//! Cursors: the reply of a command that opens one, `getMore`, `killCursors`, and
//! `run_cursor_command`'s command.

use std::collections::VecDeque;

use bson::{doc, Bson, Document};
use pool::cmap::PooledConnection;
use pool::connection::Connection;
use protocol::ServerAddress;
use selection::ReadPreference;

use super::super::op_options::ns_collection;
use super::super::operation::{cursor_id, OpOutput, Operation, Shape};
use super::super::session::ServerSession;
use crate::selection_actor::Criteria;
use crate::{Error, Result};

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
    /// The first batch.
    pub batch: VecDeque<Document>,
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
    pub(crate) fn read(mut out: OpOutput, db: &str, collection: &str) -> Result<CursorReply> {
        let NextBatch { id, batch, post_batch_resume_token } =
            batch(&mut out.reply, &out.address, "firstBatch")?;
        let collection = ns_collection(&out.reply).unwrap_or_else(|| collection.to_string());
        Ok(CursorReply {
            address: out.address,
            db: db.to_string(),
            collection,
            id,
            batch,
            session: out.session,
            connection: out.connection,
            post_batch_resume_token,
            operation_time: out.reply.get_timestamp("operationTime").ok(),
        })
    }
}

/// The cursor id, the documents of a cursor reply's `key` batch and its resume token.
/// The documents are moved out of the reply, never copied.
fn batch(reply: &mut Document, address: &ServerAddress, key: &str) -> Result<NextBatch> {
    let id = cursor_id(reply);
    let cursor = reply.get_document_mut("cursor").map_err(|_| Error::InvalidResponse {
        address: address.clone(),
        message: "the reply has no cursor document".into(),
    })?;
    let docs = match cursor.remove(key) {
        Some(Bson::Array(a)) => a
            .into_iter()
            .filter_map(|d| match d {
                Bson::Document(d) => Some(d),
                _ => None,
            })
            .collect(),
        _ => VecDeque::new(),
    };
    let post_batch_resume_token = cursor.get_document("postBatchResumeToken").ok().cloned();
    Ok(NextBatch { id, batch: docs, post_batch_resume_token })
}

/// `getMore`: the next batch of a cursor, on its server. Never retried.
pub(crate) struct GetMore<'a> {
    /// The cursor's database and collection.
    pub db: &'a str,
    pub collection: &'a str,
    pub id: i64,
    pub batch_size: Option<u32>,
    /// `maxTimeMS` (a tailable awaitData cursor's `maxAwaitTimeMS`).
    pub max_time_ms: Option<i64>,
    /// The opening command's `comment`.
    pub comment: Option<Bson>,
}

/// A `getMore`'s answer.
pub(crate) struct NextBatch {
    /// The cursor id (0: exhausted).
    pub id: i64,
    /// The documents.
    pub batch: VecDeque<Document>,
    /// A change stream's `postBatchResumeToken`.
    pub post_batch_resume_token: Option<Document>,
}

impl Operation for GetMore<'_> {
    type Output = NextBatch;

    fn shape(&self) -> Shape<'_> {
        Shape::command("getMore", self.db, Criteria::Read(ReadPreference::PRIMARY))
    }

    fn build(&mut self) -> Result<Document> {
        let mut command = doc! {"getMore": self.id, "collection": self.collection};
        super::append(&mut command, "batchSize", self.batch_size.map(i64::from));
        super::append(&mut command, "maxTimeMS", self.max_time_ms);
        super::append(&mut command, "comment", self.comment.take());
        Ok(command)
    }

    fn handle_reply(self, mut out: OpOutput) -> Result<NextBatch> {
        batch(&mut out.reply, &out.address, "nextBatch")
    }
}

/// `killCursors`: closes a cursor on its server. Never retried.
pub(crate) struct KillCursors<'a> {
    pub db: &'a str,
    pub collection: &'a str,
    pub id: i64,
}

impl Operation for KillCursors<'_> {
    type Output = ();

    fn shape(&self) -> Shape<'_> {
        Shape::command("killCursors", self.db, Criteria::Read(ReadPreference::PRIMARY))
    }

    fn build(&mut self) -> Result<Document> {
        Ok(doc! {"killCursors": self.collection, "cursors": [self.id]})
    }

    fn handle_reply(self, _: OpOutput) -> Result<()> {
        Ok(())
    }
}

/// A command the caller wrote that opens a cursor (`run_cursor_command`). Never retried.
pub(crate) struct RunCursorCommand {
    pub db: String,
    pub command: Document,
    pub read_preference: ReadPreference,
}

impl RunCursorCommand {
    fn collection(&self) -> &str {
        let name = self.command.keys().next().map_or("", String::as_str);
        self.command.get_str(name).unwrap_or_default()
    }
}

impl Operation for RunCursorCommand {
    type Output = CursorReply;

    fn shape(&self) -> Shape<'_> {
        let name = self.command.keys().next().cloned().unwrap_or_default();
        Shape::command(name, &self.db, Criteria::Read(self.read_preference.clone())).cursor().generic()
    }

    fn build(&mut self) -> Result<Document> {
        // Cloned: the getMores name the collection the command names.
        Ok(self.command.clone())
    }

    fn handle_reply(self, out: OpOutput) -> Result<CursorReply> {
        CursorReply::read(out, &self.db, self.collection())
    }
}
