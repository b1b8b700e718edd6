//! `listCollections`: a retryable read on the primary, opening a cursor.

use bson::{doc, Document};
use selection::ReadPreference;

use super::super::executor::operation::{Command, OpOutput, Operation, Shape};
use super::cursor_options;
use super::cursor_reply::CursorReply;
use crate::cluster::selection::Criteria;
use crate::error::Result;

/// `listCollections`, opening a cursor.
pub(crate) struct ListCollections {
    pub db: String,
    pub filter: Document,
    pub batch_size: Option<u32>,
    /// Option fields (`nameOnly`, `authorizedCollections`, `comment`, `maxTimeMS`).
    pub fields: Document,
}

impl Operation for ListCollections {
    type Output = CursorReply;

    fn shape(&self) -> Shape<'_> {
        Shape::read("listCollections", &self.db, Criteria::Read(ReadPreference::PRIMARY)).cursor()
    }

    fn build(&mut self) -> Result<Command> {
        let filter = std::mem::take(&mut self.filter);
        let mut command =
            doc! {"listCollections": 1, "filter": filter, "cursor": cursor_options(self.batch_size)};
        command.extend(std::mem::take(&mut self.fields));
        Ok(command.into())
    }

    fn handle_reply(self, out: OpOutput) -> Result<CursorReply> {
        CursorReply::read(out, &self.db, "$cmd.listCollections")
    }
}
