//! `count` (the legacy command, and `estimated_document_count`) and `countDocuments`'
//! aggregate pipeline. Retryable reads.

use bson::{doc, Document};

use super::super::executor::operation::{Command, OpOutput, Operation, Shape};
use super::super::op_options::{count_of, first_batch, int};
use super::super::options::crud::CountOptions;
use super::append;
use super::read_on::{common_fields, ReadOn};
use crate::error::Result;

/// `count`, with a filter (the legacy `count`) or without (`estimated_document_count`).
pub(crate) struct Count<'a> {
    pub read: ReadOn<'a>,
    pub filter: Option<Document>,
    /// `skip`, `limit`, `collation`, `hint`, `comment`, `rawData` (the rest is in `read`).
    pub options: CountOptions,
}

impl Operation for Count<'_> {
    type Output = u64;

    fn shape(&self) -> Shape<'_> {
        self.read.shape("count")
    }

    fn build(&mut self) -> Result<Command> {
        let mut command = doc! {"count": self.read.ns.coll};
        append(&mut command, "query", self.filter.take());
        let o = &mut self.options;
        append(&mut command, "skip", o.skip.map(int));
        append(&mut command, "limit", o.limit.map(int));
        command.extend(common_fields(o.collation.take(), o.hint.take(), o.comment.take(), o.raw_data));
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
    /// `skip`, `limit` (pipeline stages), `collation`, `hint`, `comment`, `rawData`.
    pub options: CountOptions,
}

impl Operation for CountDocuments<'_> {
    type Output = u64;

    fn shape(&self) -> Shape<'_> {
        self.read.shape("aggregate")
    }

    fn build(&mut self) -> Result<Command> {
        let mut pipeline = vec![doc! {"$match": std::mem::take(&mut self.filter)}];
        let o = &mut self.options;
        if let Some(skip) = o.skip {
            pipeline.push(doc! {"$skip": int(skip)});
        }
        if let Some(limit) = o.limit {
            pipeline.push(doc! {"$limit": int(limit)});
        }
        pipeline.push(doc! {"$group": {"_id": 1, "n": {"$sum": 1}}});
        let mut command = doc! {"aggregate": self.read.ns.coll, "pipeline": pipeline, "cursor": {}};
        command.extend(common_fields(o.collation.take(), o.hint.take(), o.comment.take(), o.raw_data));
        self.read.finish(&mut command);
        Ok(command.into())
    }

    fn handle_reply(self, out: OpOutput) -> Result<u64> {
        Ok(first_batch(&out.reply).first().map_or(0, |d| count_of(d, "n")))
    }
}
