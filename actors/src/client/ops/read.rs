//! Reads: `find` (a cursor, or `find_one`'s single document), `aggregate`, `count`,
//! `countDocuments`' pipeline and `distinct`. All are retryable reads, except an aggregate
//! whose pipeline ends in `$out` or `$merge` (a write to the primary, run once).

use bson::{doc, Bson, Document};

use super::super::crud_options::FindOptions;
use super::super::op_options::{count_of, first_batch, int, CursorType};
use super::super::operation::{Command, OpOutput, Operation, Shape};
use super::cursor::CursorReply;
use super::{append, Namespace, RawCommand};
use crate::selection_actor::Criteria;
use crate::Result;

/// What every read of a collection carries: where it runs, the servers it may read from,
/// its read concern and its legacy `maxTimeMS`.
pub(crate) struct ReadOn<'a> {
    pub ns: Namespace<'a>,
    pub criteria: Criteria,
    pub read_concern: Option<Document>,
    /// The legacy `maxTimeMS` (see [`super::legacy_max_time`]).
    pub max_time_ms: Option<i64>,
}

impl ReadOn<'_> {
    /// A retryable read named `name`.
    fn shape(&self, name: &'static str) -> Shape<'_> {
        Shape::read(name, self.ns.db, self.criteria.clone()).reading_concern()
    }

    /// Appends `maxTimeMS` and `readConcern`, the last fields of a read's command.
    fn finish(&mut self, command: &mut Document) {
        append(command, "maxTimeMS", self.max_time_ms);
        append(command, "readConcern", self.read_concern.take());
    }

    /// [`finish`](Self::finish) for a body built as bytes.
    fn finish_raw(&mut self, command: &mut RawCommand) -> Result<()> {
        command.append("maxTimeMS", self.max_time_ms)?;
        command.append("readConcern", self.read_concern.take())
    }
}

/// `find`, opening a cursor.
pub(crate) struct Find<'a> {
    pub read: ReadOn<'a>,
    pub filter: Document,
    pub options: FindOptions,
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

/// `aggregate` on a collection, or on a database (`aggregate: 1`), opening a cursor.
pub(crate) struct Aggregate {
    db: String,
    /// The collection; `None`: a database-level pipeline.
    collection: Option<String>,
    pipeline: Vec<Document>,
    batch_size: Option<u32>,
    /// The read's criteria (a pipeline that writes goes to the primary whatever it says).
    criteria: Criteria,
    /// Option fields (`allowDiskUse`, `collation`, `comment`, `hint`, `let`, `maxTimeMS`,
    /// `readConcern`, `writeConcern`...), appended as they are.
    fields: Document,
    /// The pipeline ends in `$out` or `$merge`.
    writes: bool,
    /// A writing pipeline may follow the read preference (every server is 5.0+).
    writes_anywhere: bool,
}

impl Aggregate {
    /// An aggregate of `pipeline` on `collection` of `db` (`None`: the database), with its
    /// option `fields`.
    pub(crate) fn new(
        (db, collection): (&str, Option<&str>),
        pipeline: Vec<Document>,
        batch_size: Option<u32>,
        criteria: Criteria,
        fields: Document,
    ) -> Aggregate {
        Aggregate {
            db: db.to_string(),
            collection: collection.map(str::to_string),
            writes: writes(&pipeline),
            pipeline,
            batch_size,
            criteria,
            fields,
            writes_anywhere: false,
        }
    }

    /// A writing pipeline may run where the read preference says (CRUD spec: when every
    /// server is 5.0 or newer); otherwise it goes to the primary.
    pub(crate) fn writes_anywhere(mut self, allowed: bool) -> Self {
        self.writes_anywhere = allowed;
        self
    }

    /// Whether the pipeline ends in `$out` or `$merge`.
    pub(crate) fn writes(&self) -> bool {
        self.writes
    }
}

/// Whether `pipeline` ends in `$out` or `$merge` (a write).
pub(crate) fn writes(pipeline: &[Document]) -> bool {
    pipeline.last().and_then(|s| s.keys().next()).is_some_and(|k| k == "$out" || k == "$merge")
}

impl Operation for Aggregate {
    type Output = CursorReply;

    fn shape(&self) -> Shape<'_> {
        if self.writes && self.writes_anywhere {
            Shape::command("aggregate", &self.db, self.criteria.clone()).cursor().reading_concern()
        } else if self.writes {
            Shape::command("aggregate", &self.db, Criteria::Write).cursor().reading_concern()
        } else {
            Shape::read("aggregate", &self.db, self.criteria.clone()).cursor().reading_concern()
        }
    }

    fn build(&mut self) -> Result<Command> {
        let mut cursor = Document::new();
        if !self.writes() {
            append(&mut cursor, "batchSize", self.batch_size.map(i64::from));
        }
        let target = match &self.collection {
            Some(c) => Bson::String(c.clone()),
            None => Bson::Int32(1),
        };
        let pipeline = std::mem::take(&mut self.pipeline);
        let mut command = doc! {"aggregate": target, "pipeline": pipeline, "cursor": cursor};
        command.extend(std::mem::take(&mut self.fields));
        Ok(command.into())
    }

    fn handle_reply(self, out: OpOutput) -> Result<CursorReply> {
        let collection = self.collection.as_deref().unwrap_or("$cmd.aggregate");
        CursorReply::read(out, &self.db, collection)
    }
}

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
