//! `insert`, `update` and `delete`: one command shape (one statement, or a bulk's batch of
//! them sent as a document sequence), so one operation with its [`WriteKind`].
//! Single-statement writes are retryable writes; multi-document updates and deletes run once
//! (retryable writes spec).

use bson::{doc, Bson, Document, RawDocumentBuf};
use protocol::wire::DocumentSequence;

use super::super::executor::operation::{Command, OpOutput, Operation, Shape};
use super::super::op_options::count_of;
use super::{append, Namespace};
use crate::client::results::UpdateResult;
use crate::error::{Error, Result};

/// The largest statement a server takes (`maxBsonObjectSize`, plus the 16 KiB a statement's
/// own fields may add around a document of that size).
pub(crate) const MAX_STATEMENT_BYTES: usize = 16 * 1024 * 1024 + 16 * 1024;

/// The error for a statement a server would refuse for its size.
pub(crate) fn too_large(index: usize, size: usize) -> Error {
    Error::invalid_argument(format!(
        "write {index} is {size} bytes, more than the servers' maxBsonObjectSize (16777216 bytes)"
    ))
}

/// The command-level fields of a write (`bypassDocumentValidation`, `comment`, `let`,
/// `rawData`), in the order the CRUD spec lists them.
pub(crate) fn option_fields(
    bypass: Option<bool>,
    comment: Option<Bson>,
    let_vars: Option<Document>,
    raw_data: Option<bool>,
) -> Document {
    let mut fields = Document::new();
    append(&mut fields, "bypassDocumentValidation", bypass);
    append(&mut fields, "comment", comment);
    append(&mut fields, "let", let_vars);
    append(&mut fields, "rawData", raw_data);
    fields
}

/// Which write command a batch of statements is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum WriteKind {
    /// `insert`: the statements are documents.
    Insert,
    /// `update`: `{q, u, multi, upsert}` statements.
    Update,
    /// `delete`: `{q, limit}` statements.
    Delete,
}

impl WriteKind {
    /// The command's name and the field of its statements.
    fn names(self) -> (&'static str, &'static str) {
        match self {
            WriteKind::Insert => ("insert", "documents"),
            WriteKind::Update => ("update", "updates"),
            WriteKind::Delete => ("delete", "deletes"),
        }
    }
}

/// An `insert`, `update` or `delete` of one or more statements.
pub(crate) struct Write<'a> {
    pub ns: Namespace<'a>,
    pub kind: WriteKind,
    pub statements: Vec<RawDocumentBuf>,
    pub ordered: bool,
    /// A statement may change more than one document (`multi`, `limit: 0`): not retryable.
    pub multi: bool,
    pub write_concern: Option<Document>,
    /// Command-level option fields (`bypassDocumentValidation`, `comment`, `let`), appended
    /// as they are.
    pub extra: Document,
}

/// What a write command answered (write errors are [`ErrorKind::Command`](crate::error::ErrorKind::Command)s).
#[derive(Debug, Default)]
pub(crate) struct WriteReply {
    /// `n`: documents inserted, deleted, or matched and upserted.
    pub n: u64,
    /// `nModified` (updates).
    pub n_modified: u64,
    /// Each upserted document's statement index (in the command) and `_id`.
    pub upserted: Vec<(usize, Bson)>,
}

impl WriteReply {
    /// Reads `n`, `nModified` and `upserted` from a write command's reply (one with write
    /// errors too: what succeeded is counted there).
    pub(crate) fn parse(reply: &Document) -> WriteReply {
        let upserted = reply.get_array("upserted").map(Vec::as_slice).unwrap_or_default();
        let upserted = upserted
            .iter()
            .filter_map(Bson::as_document)
            .filter_map(|u| {
                let index = usize::try_from(count_of(u, "index")).ok()?;
                Some((index, u.get("_id")?.clone()))
            })
            .collect();
        WriteReply { n: count_of(reply, "n"), n_modified: count_of(reply, "nModified"), upserted }
    }

    /// The result of an `update` of one statement.
    pub(crate) fn into_update_result(self) -> UpdateResult {
        let upserted_id = self.upserted.into_iter().next().map(|(_, id)| id);
        UpdateResult {
            matched_count: self.n.saturating_sub(u64::from(upserted_id.is_some())),
            modified_count: self.n_modified,
            upserted_id,
        }
    }
}

impl Operation for Write<'_> {
    type Output = WriteReply;

    fn shape(&self) -> Shape<'_> {
        let shape = Shape::write(self.kind.names().0, self.ns.db);
        if self.multi {
            shape.once()
        } else {
            shape
        }
    }

    fn build(&mut self) -> Result<Command> {
        // The statements go in a document sequence (see `sequence`), not in the body.
        let (name, _) = self.kind.names();
        let mut command = doc! {name: self.ns.coll, "ordered": self.ordered};
        command.extend(std::mem::take(&mut self.extra));
        append(&mut command, "writeConcern", self.write_concern.take());
        Ok(command.into())
    }

    fn sequences(&mut self) -> Result<Vec<DocumentSequence>> {
        let (_, field) = self.kind.names();
        let documents = std::mem::take(&mut self.statements);
        if let Some((i, d)) =
            documents.iter().enumerate().find(|(_, d)| d.as_bytes().len() > MAX_STATEMENT_BYTES)
        {
            return Err(too_large(i, d.as_bytes().len()));
        }
        Ok(vec![DocumentSequence::new(field, documents)])
    }

    fn handle_reply(self, out: OpOutput) -> Result<WriteReply> {
        Ok(WriteReply::parse(&out.reply))
    }
}
