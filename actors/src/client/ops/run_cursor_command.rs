//! `run_cursor_command`'s command: a command of the caller's that opens a cursor.

use crate::cluster::selection_criteria::SelectionCriteria;
use bson::Document;

use super::super::executor::operation::{Command, OpOutput, Operation, Shape};
use super::cursor_reply::CursorReply;
use crate::cluster::selection::Criteria;
use crate::error::Result;

/// A command the caller wrote that opens a cursor (`run_cursor_command`). Never retried.
pub(crate) struct RunCursorCommand {
    pub db: String,
    pub command: Document,
    pub selection_criteria: SelectionCriteria,
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
        Shape::command(name, &self.db, Criteria::from(self.selection_criteria.clone())).cursor().generic()
    }

    fn build(&mut self) -> Result<Command> {
        // Cloned: the getMores name the collection the command names.
        Ok(self.command.clone().into())
    }

    fn handle_reply(self, out: OpOutput) -> Result<CursorReply> {
        CursorReply::read(out, &self.db, self.collection())
    }
}
