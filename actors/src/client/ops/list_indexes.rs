//! `listIndexes`: a retryable read on the primary, opening a cursor.

use bson::{doc, Document};
use selection::ReadPreference;

use super::super::executor::operation::{Command, OpOutput, Operation, Shape};
use super::cursor_options;
use super::cursor_reply::CursorReply;
use super::Namespace;
use crate::cluster::selection::Criteria;
use crate::error::Result;

/// `listIndexes`, opening a cursor.
pub(crate) struct ListIndexes<'a> {
    pub ns: Namespace<'a>,
    pub batch_size: Option<u32>,
    /// Option fields (`comment`, `maxTimeMS`), appended as they are.
    pub fields: Document,
}

impl Operation for ListIndexes<'_> {
    type Output = CursorReply;

    fn shape(&self) -> Shape<'_> {
        Shape::read("listIndexes", self.ns.db, Criteria::Read(ReadPreference::PRIMARY)).cursor()
    }

    fn build(&mut self) -> Result<Command> {
        let mut command = doc! {"listIndexes": self.ns.coll, "cursor": cursor_options(self.batch_size)};
        command.extend(std::mem::take(&mut self.fields));
        Ok(command.into())
    }

    fn handle_reply(self, out: OpOutput) -> Result<CursorReply> {
        CursorReply::read(out, self.ns.db, self.ns.coll)
    }
}
