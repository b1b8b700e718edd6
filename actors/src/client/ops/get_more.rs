//! `getMore`: the next batch of a cursor, on the server (and connection) that opened it.

use bson::{doc, Bson};
use selection::ReadPreference;

use super::super::executor::operation::{Command, OpOutput, Operation, Shape};
use super::cursor_reply::{batch, NextBatch};
use crate::cluster::selection::Criteria;
use crate::error::Result;

/// `getMore`: the next batch of a cursor, on its server. Never retried.
pub(crate) struct GetMore<'a> {
    /// The cursor's database and collection.
    pub db: &'a str,
    pub collection: &'a str,
    pub id: i64,
    pub batch_size: Option<u32>,
    /// `maxTimeMS` (a tailable awaitData cursor's `maxAwaitTimeMS`).
    pub max_time_ms: Option<i64>,
    /// The opening command's `comment`.
    pub comment: Option<Bson>,
}

impl Operation for GetMore<'_> {
    type Output = NextBatch;

    fn shape(&self) -> Shape<'_> {
        Shape::command("getMore", self.db, Criteria::Read(ReadPreference::PRIMARY))
    }

    fn build(&mut self) -> Result<Command> {
        let mut command = doc! {"getMore": self.id, "collection": self.collection};
        super::append(&mut command, "batchSize", self.batch_size.map(i64::from));
        super::append(&mut command, "maxTimeMS", self.max_time_ms);
        super::append(&mut command, "comment", self.comment.take());
        Ok(command.into())
    }

    fn handle_reply(self, out: OpOutput) -> Result<NextBatch> {
        batch(out, "nextBatch").map(|(b, _)| b)
    }
}
