//! `run_command`'s command, as the caller wrote it: sent once, its reply taken as it is.

use bson::Document;

use super::super::executor::operation::{Command, OpOutput, Operation, Shape};
use crate::cluster::selection::Criteria;
use crate::error::Result;

/// A command as the caller wrote it (`run_command`): never retried, its reply returned as is.
pub(crate) struct RunCommand {
    pub db: String,
    pub command: Document,
    pub criteria: Criteria,
}

impl Operation for RunCommand {
    type Output = Document;

    fn shape(&self) -> Shape<'_> {
        let name = self.command.keys().next().cloned().unwrap_or_default();
        Shape::command(name, &self.db, self.criteria.clone()).generic()
    }

    fn build(&mut self) -> Result<Command> {
        Ok(std::mem::take(&mut self.command).into())
    }

    fn handle_reply(self, out: OpOutput) -> Result<Document> {
        Ok(out.reply.into_document())
    }
}
