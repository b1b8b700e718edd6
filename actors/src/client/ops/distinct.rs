//! `distinct`: a retryable read.

use bson::{doc, Bson, Document};

use super::super::executor::operation::{Command, OpOutput, Operation, Shape};
use super::super::options::crud::DistinctOptions;
use super::read_on::{common_fields, ReadOn};
use crate::error::Result;

/// `distinct`: a field's distinct values among matching documents.
pub(crate) struct Distinct<'a> {
    pub read: ReadOn<'a>,
    pub field: String,
    pub filter: Document,
    /// `collation`, `hint`, `comment`, `rawData` (the rest is in `read`).
    pub options: DistinctOptions,
}

impl Operation for Distinct<'_> {
    type Output = Vec<Bson>;

    fn shape(&self) -> Shape<'_> {
        self.read.shape("distinct")
    }

    fn build(&mut self) -> Result<Command> {
        let filter = std::mem::take(&mut self.filter);
        let mut command = doc! {"distinct": self.read.ns.coll, "key": &self.field, "query": filter};
        let o = &mut self.options;
        command.extend(common_fields(o.collation.take(), o.hint.take(), o.comment.take(), o.raw_data));
        self.read.finish(&mut command);
        Ok(command.into())
    }

    fn handle_reply(self, out: OpOutput) -> Result<Vec<Bson>> {
        Ok(out.reply.get_array("values").cloned().unwrap_or_default())
    }
}
