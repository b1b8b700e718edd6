//! `find`: a cursor, or `find_one`'s single document read from the first batch. A retryable
//! read; every field of the command is built here from [`FindOptions`].

use bson::Document;

use super::super::executor::operation::{Command, OpOutput, Operation, Shape};
use super::super::op_options::{int, CursorType};
use super::super::options::crud::FindOptions;
use super::cursor_reply::CursorReply;
use super::read_on::ReadOn;
use super::RawCommand;
use crate::error::Result;

/// `find`, opening a cursor.
pub(crate) struct Find<'a> {
    pub read: ReadOn<'a>,
    pub filter: Document,
    /// Boxed: `find_one`'s future is moved several times before its first poll (into the
    /// executor's future, then its box), and the options are most of its size.
    pub options: Box<FindOptions>,
}

impl Find<'_> {
    /// The fields `find` and `find_one` share, in the order the CRUD spec lists them.
    fn command(&mut self) -> Result<RawCommand> {
        let o = &mut self.options;
        let mut command = RawCommand::new();
        command.str("find", self.read.ns.coll)?;
        command.document("filter", &self.filter)?;
        command.append("sort", o.sort.take())?;
        command.append("projection", o.projection.take())?;
        command.append("hint", o.hint.take())?;
        command.append("skip", o.skip.map(int))?;
        command.append("comment", o.comment.clone())?;
        command.append("max", o.max.take())?;
        command.append("min", o.min.take())?;
        #[allow(deprecated)]
        command.append("maxScan", o.max_scan.map(int))?;
        command.append("returnKey", o.return_key)?;
        command.append("showRecordId", o.show_record_id)?;
        command.append("noCursorTimeout", o.no_cursor_timeout)?;
        command.append("allowPartialResults", o.allow_partial_results)?;
        command.append("collation", o.collation.take())?;
        command.append("allowDiskUse", o.allow_disk_use)?;
        command.append("let", o.let_vars.take())?;
        command.append("rawData", o.raw_data)?;
        Ok(command)
    }
}

impl Operation for Find<'_> {
    type Output = CursorReply;

    fn shape(&self) -> Shape<'_> {
        self.read.shape("find").cursor()
    }

    fn build(&mut self) -> Result<Command> {
        let mut command = self.command()?;
        match self.options.limit {
            Some(l) if l < 0 => {
                command.i64("limit", -l);
                command.bool("singleBatch", true);
            }
            Some(l) if l > 0 => {
                command.i64("limit", l);
            }
            _ => {}
        }
        // A batch size of 0 is the server's default and is not sent; one equal to a positive
        // limit is sent as limit + 1, so the first batch closes the cursor (CRUD spec).
        let batch_size = match (self.options.batch_size.map(i64::from), self.options.limit) {
            (Some(b), Some(l)) if l > 0 && b == l => Some(l + 1),
            (b, _) => b.filter(|b| *b != 0),
        };
        command.append("batchSize", batch_size)?;
        match self.options.cursor_type {
            Some(CursorType::Tailable) => {
                command.bool("tailable", true);
            }
            Some(CursorType::TailableAwait) => {
                command.bool("tailable", true);
                command.bool("awaitData", true);
            }
            _ => {}
        }
        self.read.finish_raw(&mut command)?;
        command.finish()
    }

    fn handle_reply(self, out: OpOutput) -> Result<CursorReply> {
        CursorReply::read(out, self.read.ns.db, self.read.ns.coll)
    }
}

/// `find_one`: a `find` with `limit: 1` and `singleBatch`, read from its first batch.
pub(crate) struct FindOne<'a>(pub Find<'a>);

impl Operation for FindOne<'_> {
    /// The document's bytes: the caller builds its `T` (or `Document`) from them, and the
    /// rest of the reply is never converted.
    type Output = Option<bson::RawDocumentBuf>;

    fn shape(&self) -> Shape<'_> {
        self.0.read.shape("find")
    }

    fn build(&mut self) -> Result<Command> {
        let mut command = self.0.command()?;
        command.i64("limit", 1);
        command.bool("singleBatch", true);
        self.0.read.finish_raw(&mut command)?;
        command.finish()
    }

    fn handle_reply(self, out: OpOutput) -> Result<Option<bson::RawDocumentBuf>> {
        let batch = out.reply.raw().get_document("cursor").and_then(|c| c.get_array("firstBatch"));
        let first = batch.ok().and_then(|b| b.into_iter().find_map(|e| e.ok()?.as_document()));
        Ok(first.map(ToOwned::to_owned))
    }
}
