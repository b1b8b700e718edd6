//! `count` (the legacy command, and `estimated_document_count`) and `countDocuments`'
//! aggregate pipeline. Retryable reads.

use super::super::executor::operation::{Command, OpOutput, Operation, Shape};
use super::super::op_options::{count_of, first_batch, int};
use super::append;
use super::read_on::ReadOn;
use crate::Result;
use bson::{doc, Document};

/// `count`, with a filter (the legacy `count`) or without (`estimated_document_count`).
pub(crate) struct Count<'a> {
    pub read: ReadOn<'a>,
    pub filter: Option<Document>,
    /// Option fields (`skip`, `limit`, `hint`, `collation`, `comment`), appended as they are.
    pub fields: Document,
}

impl Operation for Count<'_> {
    type Output = u64;

    fn shape(&self) -> Shape<'_> {
        self.read.shape("count")
    }

    fn build(&mut self) -> Result<Command> {
        let mut command = doc! {"count": self.read.ns.coll};
        append(&mut command, "query", self.filter.take());
        command.extend(std::mem::take(&mut self.fields));
        self.read.finish(&mut command);
        Ok(command.into())
    }

    fn handle_reply(self, out: OpOutput) -> Result<u64> {
        Ok(count_of(&out.reply, "n"))
    }
}

/// `count_documents`: the drivers' `$match`/`$skip`/`$limit`/`$group` pipeline, read from its
/// one batch.
pub(crate) struct CountDocuments<'a> {
    pub read: ReadOn<'a>,
    pub filter: Document,
    pub skip: Option<u64>,
    pub limit: Option<u64>,
    /// Option fields (`hint`, `collation`, `comment`), appended as they are.
    pub fields: Document,
}

impl Operation for CountDocuments<'_> {
    type Output = u64;

    fn shape(&self) -> Shape<'_> {
        self.read.shape("aggregate")
    }

    fn build(&mut self) -> Result<Command> {
        let mut pipeline = vec![doc! {"$match": std::mem::take(&mut self.filter)}];
        if let Some(skip) = self.skip {
            pipeline.push(doc! {"$skip": int(skip)});
        }
        if let Some(limit) = self.limit {
            pipeline.push(doc! {"$limit": int(limit)});
        }
        pipeline.push(doc! {"$group": {"_id": 1, "n": {"$sum": 1}}});
        let mut command = doc! {"aggregate": self.read.ns.coll, "pipeline": pipeline, "cursor": {}};
        command.extend(std::mem::take(&mut self.fields));
        self.read.finish(&mut command);
        Ok(command.into())
    }

    fn handle_reply(self, out: OpOutput) -> Result<u64> {
        Ok(first_batch(&out.reply).first().map_or(0, |d| count_of(d, "n")))
    }
}
