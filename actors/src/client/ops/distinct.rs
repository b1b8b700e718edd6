//! `distinct`: a retryable read.

use super::super::executor::operation::{Command, OpOutput, Operation, Shape};
use super::read_on::ReadOn;
use crate::Result;
use bson::{doc, Bson, Document};

/// `distinct`: a field's distinct values among matching documents.
pub(crate) struct Distinct<'a> {
    pub read: ReadOn<'a>,
    pub field: String,
    pub filter: Document,
    /// Option fields (`collation`, `comment`, `hint`), appended as they are.
    pub fields: Document,
}

impl Operation for Distinct<'_> {
    type Output = Vec<Bson>;

    fn shape(&self) -> Shape<'_> {
        self.read.shape("distinct")
    }

    fn build(&mut self) -> Result<Command> {
        let filter = std::mem::take(&mut self.filter);
        let mut command = doc! {"distinct": self.read.ns.coll, "key": &self.field, "query": filter};
        command.extend(std::mem::take(&mut self.fields));
        self.read.finish(&mut command);
        Ok(command.into())
    }

    fn handle_reply(self, out: OpOutput) -> Result<Vec<Bson>> {
        Ok(out.reply.get_array("values").cloned().unwrap_or_default())
    }
}
