//! `findAndModify`: `find_one_and_delete`, `find_one_and_update` and
//! `find_one_and_replace`. A retryable write.

use bson::{doc, Bson, Document};

use super::super::executor::operation::{Command, OpOutput, Operation, Shape};
use super::super::options::crud::{FindAndModifyFields, ReturnDocument};
use super::{append, Namespace};
use crate::error::Result;

/// `findAndModify`: deletes (`change: None`), replaces or updates one document and returns
/// it. A retryable write.
pub(crate) struct FindAndModify<'a> {
    pub ns: Namespace<'a>,
    pub filter: Document,
    pub change: Option<Bson>,
    pub options: FindAndModifyFields,
    pub max_time_ms: Option<i64>,
    pub write_concern: Option<Document>,
}

impl Operation for FindAndModify<'_> {
    type Output = Option<Document>;

    fn shape(&self) -> Shape<'_> {
        Shape::write("findAndModify", self.ns.db)
    }

    fn build(&mut self) -> Result<Command> {
        let o = &mut self.options;
        let filter = std::mem::take(&mut self.filter);
        let mut command = doc! {"findAndModify": self.ns.coll, "query": filter};
        match self.change.take() {
            None => {
                command.insert("remove", true);
            }
            Some(c) => {
                command.insert("update", c);
                command.insert("new", o.return_document == Some(ReturnDocument::After));
                append(&mut command, "upsert", o.upsert);
            }
        }
        append(&mut command, "sort", o.sort.take());
        append(&mut command, "fields", o.projection.take());
        append(&mut command, "arrayFilters", o.array_filters.take());
        append(&mut command, "bypassDocumentValidation", o.bypass_document_validation);
        append(&mut command, "collation", o.collation.take());
        append(&mut command, "hint", o.hint.take());
        append(&mut command, "comment", o.comment.take());
        append(&mut command, "let", o.let_vars.take());
        append(&mut command, "rawData", o.raw_data);
        append(&mut command, "maxTimeMS", self.max_time_ms);
        append(&mut command, "writeConcern", self.write_concern.take());
        Ok(command.into())
    }

    fn handle_reply(self, out: OpOutput) -> Result<Option<Document>> {
        Ok(out.reply.get_document("value").ok().cloned())
    }
}
