//! `listDatabases`: a retryable read on the primary.

use bson::{Bson, Document};
use selection::ReadPreference;

use super::super::executor::operation::{Command, OpOutput, Operation, Shape};
use crate::cluster::selection::Criteria;
use crate::error::Result;

/// `listDatabases` on `admin`: one document a database.
pub(crate) struct ListDatabases {
    /// The whole command.
    pub command: Document,
}

impl Operation for ListDatabases {
    type Output = Vec<Document>;

    fn shape(&self) -> Shape<'_> {
        Shape::read("listDatabases", "admin", Criteria::Read(ReadPreference::PRIMARY))
    }

    fn build(&mut self) -> Result<Command> {
        Ok(std::mem::take(&mut self.command).into())
    }

    fn handle_reply(self, out: OpOutput) -> Result<Vec<Document>> {
        Ok(out
            .reply
            .get_array("databases")
            .map(|a| a.iter().filter_map(Bson::as_document).cloned().collect())
            .unwrap_or_default())
    }
}
