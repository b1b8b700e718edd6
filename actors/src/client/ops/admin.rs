//! The operation of the commands that change namespaces and indexes (`create`, `drop`,
//! `dropDatabase`, `createIndexes`, `dropIndexes`, `renameCollection`, the search index
//! commands): run once on the primary. Each command's fields are built in its own file.

use bson::Document;

use super::super::executor::operation::{Command, OpOutput, Operation, Shape};
use crate::error::Result;

/// A namespace or index command that changes something: run once on the primary, failed by
/// a write concern error; answers the reply.
pub(crate) struct AdminWrite {
    pub db: String,
    pub name: &'static str,
    /// The whole command, options and `writeConcern` included.
    pub command: Document,
}

impl Operation for AdminWrite {
    type Output = Document;

    fn shape(&self) -> Shape<'_> {
        Shape::write(self.name, &self.db).once()
    }

    fn build(&mut self) -> Result<Command> {
        Ok(std::mem::take(&mut self.command).into())
    }

    fn handle_reply(self, out: OpOutput) -> Result<Document> {
        Ok(out.reply.into_document())
    }
}
